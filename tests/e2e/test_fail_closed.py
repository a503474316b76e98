"""Fail closed on a real API server: a pod using a field pyscheduler does not evaluate stays Pending, told why.

One pod per entry of the fail-closed list (scheduler/core/unsupported.py) that still applies, created
through the real kube-apiserver (so the API's own validation and defaulting shape it) next to a free node:
it must stay unbound, get a FailedScheduling event and `PodScheduled=False reason=Unschedulable` naming the
field, while an ordinary pod created after it is bound (the guard blocks nobody else).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from kubernetes_asyncio.client import ApiClient

from scheduler.core.unsupported import UNSUPPORTED
from scheduler.plugins.registry import REGISTRY
from tests.e2e.conftest import NodeFactory, PodFactory, PySchedulerProcess, wait_for_event
from tests.e2e.kube import get_pod, status_condition, wait_for_pod_bound

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

# A pod spec fragment per feature, valid for the API server's validation. Empty since DynamicResources landed
# (spec.resourceClaims was the last entry; tests/e2e/test_dra.py shows such pods scheduled like upstream's).
SPECS: dict[str, tuple[dict[str, Any], str]] = {}


def test_every_guard_entry_has_an_e2e_case() -> None:
    """A new fail-closed entry needs a pod shape here too."""
    assert sorted(SPECS) == sorted(f.feature for f in UNSUPPORTED)


ACTIVE = [f for f in UNSUPPORTED if f.plugin not in REGISTRY]


@pytest.mark.skipif(not ACTIVE, reason="every upstream default plugin is implemented: the guard has no entry left")
async def test_unsupported_pods_stay_pending_with_the_reason(
    pyscheduler: PySchedulerProcess,
    api_client: ApiClient,
    namespace: str,
    create_node: NodeFactory,
    create_pod: PodFactory,
) -> None:
    """Each refused pod: unbound, FailedScheduling + PodScheduled=False Unschedulable naming the field."""
    await create_node(f"{namespace}-n1")
    names = {}
    for i, feature in enumerate(ACTIVE):
        spec, _ = SPECS[feature.feature]
        names[feature.feature] = f"refused-{i}"
        await create_pod(names[feature.feature], labels={"app": "web"}, spec=spec)
    await create_pod("ordinary", requests={"cpu": "100m"})
    await wait_for_pod_bound(api_client, namespace, "ordinary")
    for feature in ACTIVE:
        name = names[feature.feature]
        _, field = SPECS[feature.feature]
        event = await wait_for_event(api_client, namespace, name, "FailedScheduling")
        assert event["type"] == "Warning" and event["action"] == "Scheduling"
        assert "pyscheduler does not support" in event["note"], event["note"]
        assert f"(upstream plugin {feature.plugin})" in event["note"], event["note"]
        assert field in event["note"], event["note"]
        pod = await get_pod(api_client, namespace, name)
        cond = status_condition(pod, "PodScheduled")
        assert cond is not None and cond["status"] == "False" and cond["reason"] == "Unschedulable", cond
        assert cond["message"] == event["note"]
    await asyncio.sleep(2)  # nothing binds them later either
    for feature in ACTIVE:
        pod = await get_pod(api_client, namespace, names[feature.feature])
        assert not pod["spec"].get("nodeName"), f"{feature.feature}: pod was bound to {pod['spec']['nodeName']}"
