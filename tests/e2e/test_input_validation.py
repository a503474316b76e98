"""The offline validation's words are kube-apiserver's: each sample of tests/validation_samples.py is created
with a server-side dry run on the real apiserver, which must refuse it with every error pyscheduler gives; a
node affinity `Gt 1.5` is accepted by both, a quantity with a non-ASCII digit refused by both."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from scheduler.framework.objects import KINDS
from scheduler.validation import validate
from tests.e2e.kube import request_json
from tests.validation_samples import SAMPLES, one, pod

pytestmark = pytest.mark.e2e

JSON = dict[str, Any]
# kind -> (API prefix, resource, namespaced)
PATHS = {
    "Pod": ("/api/v1", "pods", True),
    "PersistentVolumeClaim": ("/api/v1", "persistentvolumeclaims", True),
    "PersistentVolume": ("/api/v1", "persistentvolumes", False),
    "PodDisruptionBudget": ("/apis/policy/v1", "poddisruptionbudgets", True),
    "StorageClass": ("/apis/storage.k8s.io/v1", "storageclasses", False),
    "CSINode": ("/apis/storage.k8s.io/v1", "csinodes", False),
    "CSIStorageCapacity": ("/apis/storage.k8s.io/v1", "csistoragecapacities", True),
}


async def dry_run(api_client: ApiClient, namespace: str, obj: JSON) -> str | None:
    """The apiserver's refusal message for creating obj (server-side dry run: nothing is stored), or None."""
    prefix, resource, namespaced = PATHS[str(obj["kind"])]
    path = f"{prefix}/namespaces/{namespace}/{resource}" if namespaced else f"{prefix}/{resource}"
    try:
        await request_json(api_client, "POST", path, body=obj, query={"dryRun": "All"})
    except ApiException as exc:
        return str(json.loads(exc.body or "{}").get("message") or exc.body)
    return None


def _namespaced(obj: JSON) -> bool:
    kind = str(obj["kind"])
    return kind in ("Pod", "DaemonSet") or (kind in KINDS and KINDS[kind].namespaced)


async def test_samples_are_refused_by_the_apiserver_with_our_words(api_client: ApiClient, namespace: str) -> None:
    """23 objects (storage kinds, PDBs, extended and pod-level resources, host ports, scheduling gates, owner
    references): the apiserver's message holds each error of ours, and the same number of them."""
    for name, obj, _ in SAMPLES:
        ours = validate(obj, namespaced=_namespaced(obj))
        theirs = await dry_run(api_client, namespace, copy.deepcopy(obj))
        assert theirs is not None, f"{name}: the apiserver accepted it"
        for error in ours:
            assert error in theirs, f"{name}: {error!r} not in {theirs!r}"
        # `Kind "name" is invalid: ERROR` or `...: [E1, E2]`: nothing of theirs beyond ours (Go's order aside)
        body = theirs.split(" is invalid: ", 1)[1]
        assert len(body) == len(ours[0] if len(ours) == 1 else "[" + ", ".join(ours) + "]"), f"{name}: {theirs}"


async def test_gt_with_a_fraction_is_accepted_and_a_non_ascii_digit_refused(
    api_client: ApiClient, namespace: str
) -> None:
    """`Gt 1.5` passes the apiserver's validation and ours; `cpu: "١"` fails both with the quantity message."""
    term = {"matchExpressions": [{"key": "gen", "operator": "Gt", "values": ["1.5"]}]}
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}
    gt = pod({"affinity": affinity, "containers": one()})
    assert validate(gt) == []
    assert await dry_run(api_client, namespace, gt) is None
    digit = pod({"containers": one(resources={"requests": {"cpu": "\u0661"}})})
    [ours] = validate(digit)
    theirs = await dry_run(api_client, namespace, digit)
    quantity_rule = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    assert theirs is not None and quantity_rule in theirs and quantity_rule in ours
