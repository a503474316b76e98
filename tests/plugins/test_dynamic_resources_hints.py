"""DynamicResources' QueueingHint for claim events (upstream isSchedulableAfterClaimChange): which claim events
requeue a pod the plugin rejected or gated, in isolation and through the whole scheduler."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from scheduler.framework.interface import QueueingHint
from scheduler.framework.objects import RESOURCE_CLAIM
from scheduler.framework.types import PodInfo, parse_pod
from scheduler.plugins.dynamic_resources.claims import ClaimError
from scheduler.plugins.dynamic_resources.hints import after_claim_change, names_claim
from scheduler.testing import SchedulerHarness, device_class, make_claim, make_node, make_pod, make_slice

JSON = dict[str, Any]
GPU = "gpu.example.com"
QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
ALLOCATION = {"devices": {"results": [{"request": "gpu", "driver": GPU, "pool": "n1", "device": "gpu-0"}]}}


def claim(name: str, uid: str = "", *, allocated: bool = False, finalizer: bool = False) -> JSON:
    obj: JSON = {"metadata": {"name": name, "namespace": "default", "uid": uid or f"uid-{name}"}, "status": {}}
    if allocated:
        obj["status"]["allocation"] = ALLOCATION
    if finalizer:
        obj["metadata"]["finalizers"] = ["resource.kubernetes.io/delete-protection"]
    return obj


POD = parse_pod(make_pod("p").claim("gpu", "mine").obj())


def mine_exists(pod: PodInfo) -> list[JSON]:
    return [claim("mine")]


def mine_missing(pod: PodInfo) -> list[JSON]:
    raise ClaimError('could not find ResourceClaim "default/mine"')


@pytest.mark.parametrize(
    ("old", "new", "pod_claims", "hint"),
    [
        pytest.param(None, None, mine_exists, QUEUE, id="resync-unknown-change"),
        pytest.param(claim("other", allocated=True), None, mine_exists, QUEUE, id="deleted-while-allocated"),
        pytest.param(claim("other"), None, mine_exists, SKIP, id="deleted-unallocated"),
        pytest.param(None, claim("other"), mine_exists, SKIP, id="unrelated-created"),
        pytest.param(claim("other"), claim("other", allocated=True), mine_exists, SKIP, id="unrelated-allocated"),
        pytest.param(claim("other", allocated=True), claim("other"), mine_exists, QUEUE, id="unrelated-deallocated"),
        pytest.param(
            claim("other", allocated=True), claim("other"), mine_missing, SKIP, id="deallocated-own-claim-missing"
        ),
        pytest.param(None, claim("mine"), mine_exists, QUEUE, id="own-claim-created"),
        pytest.param(claim("mine"), claim("mine", allocated=True), mine_exists, QUEUE, id="own-claim-status-changed"),
        pytest.param(claim("mine"), claim("mine", finalizer=True), mine_exists, SKIP, id="own-claim-finalizer-only"),
        pytest.param(None, claim("mine", uid="another"), mine_exists, SKIP, id="same-name-other-uid"),
        pytest.param(None, claim("mine"), mine_missing, SKIP, id="own-claim-not-usable-yet"),
    ],
)
def test_after_claim_change(old: JSON | None, new: JSON | None, pod_claims: Any, hint: QueueingHint) -> None:
    """Upstream's answers: deallocations and deletions of allocated claims free devices for anyone; otherwise
    only the creation or a status change of one of the pod's own (usable) claims requeues it."""
    assert after_claim_change(pod_claims, POD, old, new) == hint


def test_names_claim_reads_spec_and_generated_names() -> None:
    """A direct claim name and a template's generated claim (from the pod's status) both count; other
    namespaces never."""
    direct = parse_pod(make_pod("a").claim("gpu", "mine").obj())
    generated = parse_pod(
        {
            **make_pod("b").resource_claim("gpu", "tmpl").obj(),
            "status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "b-gpu-x1"}]},
        }
    )
    assert names_claim(direct, "default", "mine") and not names_claim(direct, "other", "mine")
    assert names_claim(generated, "default", "b-gpu-x1") and not names_claim(generated, "default", "tmpl")


async def test_unrelated_claim_events_leave_a_rejected_pod_parked_and_a_deallocation_moves_it() -> None:
    """One GPU, held by p0's claim: p1 cannot allocate and is parked. Creating and allocating unrelated claims
    does not retry it (upstream's hint); p0 gone and its claim deallocated, p1 is retried and binds."""
    env = SchedulerHarness()
    for name in ("n1", "n2", "n3"):
        env.cluster.apply_node(make_node(name).obj())
    env.cluster.apply_object(device_class(GPU))
    env.cluster.apply_object(make_slice("n1-gpu", GPU, "n1").device("gpu-0").obj())
    for name in ("c0", "c1"):
        env.cluster.apply_object(make_claim(name).request("gpu", GPU).obj())
    p0 = env.add_pod(make_pod("p0").claim("gpu", "c0"))
    await env.settle()
    p1 = env.add_pod(make_pod("p1").claim("gpu", "c1"))
    await env.settle()
    assert env.node_of(p0) == "n1" and env.node_of(p1) is None
    [parked] = env.scheduler.queue.unschedulable_pods()
    attempts = parked.attempts
    for i in range(3):
        env.cluster.apply_object(make_claim(f"unrelated-{i}").request("gpu", GPU).obj())
        await env.settle()
    [still] = env.scheduler.queue.unschedulable_pods()
    assert still.uid == p1["metadata"]["uid"] and still.attempts == attempts
    env.cluster.delete_pod(p0["metadata"]["uid"])  # the in-memory controller takes it out and deallocates
    await env.settle()
    assert env.node_of(p1) == "n1"
    held = env.cluster.objects[(RESOURCE_CLAIM, "default", "c1")]["status"]["allocation"]["devices"]["results"]
    assert [r["device"] for r in held] == ["gpu-0"]


async def test_an_allocation_given_up_in_unreserve_retries_the_pods_it_kept_out() -> None:
    """p0's allocation of the only GPU is in flight (its PreBind write hangs) while p1 is tried: p1 finds no
    device and is parked. p0's write then fails: Unreserve gives the allocation up, which the queue hears as a
    deallocation, so p1 is retried at once (not left parked until the 5-minute flush)."""
    env = SchedulerHarness()
    env.cluster.apply_node(make_node("n1").obj())
    env.cluster.apply_object(device_class(GPU))
    env.cluster.apply_object(make_slice("n1-gpu", GPU, "n1").device("gpu-0").obj())
    for name in ("c0", "c1"):
        env.cluster.apply_object(make_claim(name).request("gpu", GPU).obj())
    real = env.cluster.update_resource_claim
    release = asyncio.Event()

    async def hanging_then_failing(claim: Any) -> JSON:
        if claim["metadata"]["name"] != "c0":
            return await real(claim)
        await release.wait()
        env.cluster.update_resource_claim = real  # type: ignore[method-assign]
        raise RuntimeError("the API server went away")

    env.cluster.update_resource_claim = hanging_then_failing  # type: ignore[method-assign]
    env.add_pod(make_pod("p0").claim("gpu", "c0"))
    p1 = env.add_pod(make_pod("p1").claim("gpu", "c1"))
    # One cycle each, without waiting for p0's binding cycle (run_until_idle would: it hangs on purpose).
    assert await env.scheduler._schedule_next()
    assert await env.scheduler._schedule_next()
    [parked] = env.scheduler.queue.unschedulable_pods()
    assert parked.uid == p1["metadata"]["uid"]
    assert env.message(p1) == "0/1 nodes are available: 1 cannot allocate all claims. preemption: 0/1 nodes are " + (
        "available: 1 Preemption is not helpful for scheduling."
    )
    release.set()
    await env.scheduler.quiesce()
    assert p1["metadata"]["uid"] not in {q.uid for q in env.scheduler.queue.unschedulable_pods()}
    await env.settle()
    assert sorted(env.node_of(p) or "-" for p in env.cluster.pods.values()) == ["-", "n1"]
