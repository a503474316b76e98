"""DynamicResources' device shapes on the real control plane, against the upstream kube-scheduler binary.

Every shape is played by each scheduler on the same three nodes, with objects of the same names: CEL on an
attribute and on capacity, `All`, `matchAttribute` across two requests, device taints with and without a
toleration and a DeviceTaintRule, admin access, partitionable devices (shared counters), consumable capacity,
binding conditions (the test plays the driver), and PostFilter's deallocation of a claim allocated elsewhere.
Each shape has a driver of its own (`<shape>.example.com`, with a DeviceClass of that name selecting it), so
the shapes run at the same time without seeing each other's devices: one upstream run, then one pyscheduler
run (the module's fixture), ~60 s in all. Each test then compares one shape: the node of every pod, its
claims' status.allocation whole, the PodScheduled message of a pod left Pending and every event of every pod
(type, reason, note), normalized (tests/e2e/dra.py) and byte for byte; and checks that the shape shows what it
is meant to (pyscheduler's outcome against the expected one).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from kubernetes_asyncio.client.exceptions import ApiException
from kubernetes_asyncio.config import new_client_from_config

from tests.cluster.harness import ControlPlane
from tests.e2e.conftest import launch_pyscheduler, stop_pyscheduler
from tests.e2e.dra import (
    MERGE_PATCH,
    NOT_HELPFUL,
    OURS,
    SCHEDULERS,
    UPSTREAM,
    Run,
    exactly,
    run_for,
)
from tests.e2e.kube import (
    HOSTNAME_LABEL,
    JSON,
    OWNER_LABEL,
    assert_same_outcomes,
    get_pod,
    node_manifest,
    node_status,
    request_json,
    wait_for,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

ADMIN_LABEL = "resource.kubernetes.io/admin-access"
READY = "example.com/ready"
FAILED = "example.com/failed"
UNALLOCATABLE = (
    f"0/3 nodes are available: 3 cannot allocate all claims. preemption: 0/3 nodes are available: 3 {NOT_HELPFUL}"
)


def device(name: str, capacity: dict[str, Any] | None = None, **attributes: str | int | bool) -> JSON:
    """A device with typed attributes (str, int or bool) and capacities (a quantity string, or a whole entry)."""
    kinds = {str: "string", int: "int", bool: "bool"}
    out: JSON = {"name": name, "attributes": {k: {kinds[type(v)]: v} for k, v in attributes.items()}}
    if capacity:
        out["capacity"] = {k: v if isinstance(v, dict) else {"value": v} for k, v in capacity.items()}
    return out


def attribute(run: Run, name: str) -> str:
    return f'device.attributes["{run.driver}"].{name}'


async def setup_class(run: Run) -> None:
    await run.device_class(run.driver, f'device.driver == "{run.driver}"')


async def bound(run: Run, pod: str, *claims: str) -> JSON:
    """A pod that must bind: its node, its claims' allocations (whole) and its events."""
    out: JSON = {"node": await run.wait_bound(pod)}
    for claim in claims:
        out[claim] = await run.status_allocation(claim)
    await run.wait_event(pod, "Scheduled")
    out["events"] = await run.events(pod)
    return out


async def pending(run: Run, pod: str) -> JSON:
    """A pod that must stay Pending: its PodScheduled message and its events."""
    message = await run.wait_message(pod)
    await run.wait_event(pod, "FailedScheduling")
    return {"message": message, "events": await run.events(pod)}


# ------------------------------------------------------------------------------------------------ the shapes


async def cel(run: Run) -> JSON:
    """Request selectors on a string attribute, on a capacity (quantity), and on both: one node each."""
    await setup_class(run)
    await run.slice(run.nodes[0], device("gpu-0", {"memory": "40Gi"}, model="a100"))
    await run.slice(run.nodes[1], device("gpu-0", {"memory": "80Gi"}, model="h100"))
    await run.slice(run.nodes[2], device("gpu-0", {"memory": "40Gi"}, model="h100"))
    memory = f'device.capacity["{run.driver}"].memory'
    await run.claim("by-attribute", exactly("gpu", run.driver, f'{attribute(run, "model")} == "a100"'))
    await run.claim("by-capacity", exactly("gpu", run.driver, f'{memory}.compareTo(quantity("60Gi")) >= 0'))
    both = f'{attribute(run, "model")} == "h100" && {memory}.isLessThan(quantity("60Gi"))'
    await run.claim("by-both", exactly("gpu", run.driver, both))
    for name in ("by-attribute", "by-capacity", "by-both"):
        await run.pod(name, {"gpu": name})
    return {name: await bound(run, name, name) for name in ("by-attribute", "by-capacity", "by-both")}


async def all_devices(run: Run) -> JSON:
    """`All` takes every matching device of the node that has some; `All` of devices nobody has fails."""
    await setup_class(run)
    await run.slice(run.nodes[0], device("gpu-0", model="h100"))
    a100s = (device("gpu-0", model="a100"), device("gpu-1", model="h100"), device("gpu-2", model="a100"))
    await run.slice(run.nodes[1], *a100s)
    for name, model in (("every-a100", "a100"), ("every-b200", "b200")):
        request: JSON = {"deviceClassName": run.driver, "allocationMode": "All"}
        request["selectors"] = [{"cel": {"expression": f'{attribute(run, "model")} == "{model}"'}}]
        await run.claim(name, {"name": "gpu", "exactly": request})
        await run.pod(name, {"gpu": name})
    return {"every-a100": await bound(run, "every-a100", "every-a100"), "every-b200": await pending(run, "every-b200")}


async def match_attribute(run: Run) -> JSON:
    """matchAttribute across a GPU and a NIC request: only n2 has a pair on one NUMA node, and only after
    backtracking from its first GPU; the second pair finds none."""
    await setup_class(run)
    await run.slice(run.nodes[0], device("gpu-0", kind="gpu", numa=0), device("nic-0", kind="nic", numa=1))
    await run.slice(
        run.nodes[1],
        device("gpu-0", kind="gpu", numa=0),
        device("gpu-1", kind="gpu", numa=1),
        device("nic-0", kind="nic", numa=1),
    )
    for name in ("pair", "second-pair"):
        requests = [exactly(k, run.driver, f'{attribute(run, "kind")} == "{k}"') for k in ("gpu", "nic")]
        constraint = {"requests": ["gpu", "nic"], "matchAttribute": f"{run.driver}/numa"}
        await run.claim(name, *requests, constraints=[constraint])
    await run.pod("pair", {"devices": "pair"})
    first = await bound(run, "pair", "pair")
    await run.pod("second-pair", {"devices": "second-pair"})
    return {"pair": first, "second-pair": await pending(run, "second-pair")}


async def taints(run: Run) -> JSON:
    """A device tainted in its slice, another by a DeviceTaintRule: a claim tolerating neither gets nothing, a
    claim tolerating one taint gets that device."""
    await setup_class(run)
    broken = {"key": "example.com/broken", "value": "true", "effect": "NoSchedule"}
    maintenance = {"key": "example.com/maintenance", "effect": "NoSchedule"}
    await run.taint_rule(f"{run.driver}-maintenance", "gpu-0", run.nodes[1], maintenance)
    await run.slice(run.nodes[0], {**device("gpu-0"), "taints": [broken]})
    await run.slice(run.nodes[1], device("gpu-0"))
    # The rule and the slices reach the scheduler through informers of their own: give them a moment, or a pod
    # could be tried before the rule is seen (for either scheduler).
    await asyncio.sleep(2)
    tolerations = {
        "tolerates-broken": [{**broken, "operator": "Equal"}],
        "tolerates-maintenance": [{"key": "example.com/maintenance", "operator": "Exists"}],
    }
    await run.claim("intolerant", exactly("gpu", run.driver))
    for name, toleration in tolerations.items():
        await run.claim(name, exactly("gpu", run.driver, tolerations=toleration))
    for name in ("intolerant", *tolerations):
        await run.pod(name, {"gpu": name})
    out = {name: await bound(run, name, name) for name in tolerations}
    out["intolerant"] = await pending(run, "intolerant")
    return out


async def admin_access(run: Run) -> JSON:
    """In a namespace labelled for admin access, a claim with adminAccess gets a device another claim holds;
    another ordinary claim for it does not."""
    await setup_class(run)
    await run.slice(run.nodes[2], device("gpu-0"))
    await run.claim("user", exactly("gpu", run.driver))
    await run.claim("monitor", exactly("gpu", run.driver, adminAccess=True))
    await run.claim("second-user", exactly("gpu", run.driver))
    out: JSON = {}
    for name in ("user", "monitor"):
        await run.pod(name, {"gpu": name})
        out[name] = await bound(run, name, name)
    await run.pod("second-user", {"gpu": "second-user"})
    out["second-user"] = await pending(run, "second-user")
    return out


async def partitionable(run: Run) -> JSON:
    """A GPU whose memory is a shared counter, published as the whole device and two halves (a counter slice
    and a device slice in one pool): a half leaves no room for the whole, the other half still fits."""
    await setup_class(run)
    counters = [{"name": "gpu-0-memory", "counters": {"memory": {"value": "40Gi"}}}]
    await run.slice(run.nodes[0], part="-counters", slices=2, shared_counters=counters)

    def consumes(gi: int) -> list[JSON]:
        return [{"counterSet": "gpu-0-memory", "counters": {"memory": {"value": f"{gi}Gi"}}}]

    await run.slice(
        run.nodes[0],
        {**device("gpu-0", profile="full"), "consumesCounters": consumes(40)},
        {**device("gpu-0-half-a", profile="half"), "consumesCounters": consumes(20)},
        {**device("gpu-0-half-b", profile="half"), "consumesCounters": consumes(20)},
        part="-devices",
        slices=2,
    )
    for name, profile in (("half-1", "half"), ("full", "full"), ("half-2", "half")):
        await run.claim(name, exactly("gpu", run.driver, f'{attribute(run, "profile")} == "{profile}"'))
    await run.pod("half-1", {"gpu": "half-1"})
    out: JSON = {"half-1": await bound(run, "half-1", "half-1")}
    await run.pod("full", {"gpu": "full"})
    out["full"] = await pending(run, "full")
    await run.pod("half-2", {"gpu": "half-2"})
    out["half-2"] = await bound(run, "half-2", "half-2")
    return out


async def consumable_capacity(run: Run) -> JSON:
    """A device allowing multiple allocations, 40Gi of memory in steps of 10Gi: 20Gi and 15Gi (rounded up to
    20Gi) share it; a third claim, asking the default 10Gi, no longer fits."""
    await setup_class(run)
    memory = {"value": "40Gi", "requestPolicy": {"default": "10Gi", "validRange": {"min": "10Gi", "step": "10Gi"}}}
    await run.slice(run.nodes[1], {**device("gpu-0", {"memory": memory}), "allowMultipleAllocations": True})
    await run.claim("twenty", exactly("gpu", run.driver, capacity={"requests": {"memory": "20Gi"}}))
    await run.claim("fifteen", exactly("gpu", run.driver, capacity={"requests": {"memory": "15Gi"}}))
    await run.claim("default", exactly("gpu", run.driver))
    out: JSON = {}
    for name in ("twenty", "fifteen"):
        await run.pod(name, {"gpu": name})
        out[name] = await bound(run, name, name)
    await run.pod("default", {"gpu": "default"})
    out["default"] = await pending(run, "default")
    return out


async def binding_conditions(run: Run) -> JSON:
    """A device with binding conditions: the claim is allocated and reserved, the pod waits in PreBind (a
    BindingConditionsPending event, not bound) until the test, playing the driver, reports the condition true
    in the claim's status.devices; then it binds."""
    await setup_class(run)
    waits = {"bindsToNode": True, "bindingConditions": [READY], "bindingFailureConditions": [FAILED]}
    await run.slice(run.nodes[2], {**device("gpu-0"), **waits})
    await run.claim("gpu", exactly("gpu", run.driver))
    await run.pod("waits", {"gpu": "gpu"})
    await run.wait_event("waits", "BindingConditionsPending")
    allocation = await run.status_allocation("gpu")
    pod = await get_pod(run.api, run.namespace, "waits")
    waiting = {"bound while waiting": bool(pod["spec"].get("nodeName")), "allocation": allocation}
    pool = run.nodes[2]
    await run.put_claim_status("gpu", device_conditions(run, pool, READY))
    return {"waiting": waiting, "waits": await bound(run, "waits", "gpu")}


def device_conditions(run: Run, pool: str, kind: str) -> Callable[[JSON], None]:
    """A status mutation that reports condition `kind` true for gpu-0 of `pool`, as the driver would."""

    def write(status: JSON) -> None:
        condition = {
            "type": kind,
            "status": "True",
            "reason": "Reported",
            "message": f"{kind} by the test's driver",
            "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        status["devices"] = [{"driver": run.driver, "pool": pool, "device": "gpu-0", "conditions": [condition]}]

    return write


async def binding_failure(run: Run) -> JSON:
    """The driver reports a binding failure condition: PreBind fails with its reason (Unreserve takes the pod
    out of reservedFor), the next attempt finds the claim unavailable and PostFilter deallocates it, the one
    after allocates it again and waits; the driver then reports it ready and the pod binds."""
    await setup_class(run)
    waits = {"bindsToNode": True, "bindingConditions": [READY], "bindingFailureConditions": [FAILED]}
    pool = run.nodes[0]
    await run.slice(pool, {**device("gpu-0"), **waits})
    await run.claim("gpu", exactly("gpu", run.driver))
    await run.pod("fails", {"gpu": "gpu"})
    await run.wait_event("fails", "BindingConditionsPending")
    await run.status_allocation("gpu")
    await run.put_claim_status("gpu", device_conditions(run, pool, FAILED))
    await run.wait_event("fails", "FailedScheduling", note="deallocation of ResourceClaim completed")

    async def allocated_again() -> bool:
        status = (await run.get_claim("gpu")).get("status") or {}
        return bool(status.get("allocation") and status.get("reservedFor") and not status.get("devices"))

    await wait_for(allocated_again, what="the claim allocated again after its deallocation", within=60)
    await run.put_claim_status("gpu", device_conditions(run, pool, READY))
    return {"fails": await bound(run, "fails", "gpu")}


async def postfilter_deallocation(run: Run) -> JSON:
    """A claim allocated on n1 (written by hand, as another scheduler would leave it) that no pod reserves, for
    a pod that may only run on n2: PostFilter deallocates it (the message says so, before preemption's), and
    the next attempt allocates it on n2."""
    await setup_class(run)
    await run.slice(run.nodes[0], device("gpu-0"))
    await run.slice(run.nodes[1], device("gpu-0"))
    await run.claim("stale", exactly("gpu", run.driver))
    first = run.nodes[0]

    def allocated_on_n1(status: JSON) -> None:
        field = {"key": "metadata.name", "operator": "In", "values": [first]}
        selector = {"nodeSelectorTerms": [{"matchFields": [field]}]}
        results = [{"request": "gpu", "driver": run.driver, "pool": first, "device": "gpu-0"}]
        status["allocation"] = {"devices": {"results": results}, "nodeSelector": selector}

    await run.put_claim_status("stale", allocated_on_n1)
    await asyncio.sleep(1)  # the allocation reaches both schedulers' claim informers before the pod
    await run.pod("mover", {"gpu": "stale"}, node_selector={HOSTNAME_LABEL: run.nodes[1]})
    return {"mover": await bound(run, "mover", "stale")}


async def freed_by_a_delete(run: Run) -> JSON:
    """The only device is allocated to a claim; a second claim's pod waits. Deleting the first pod and its
    claim (the finalizer dropped, as the controller would) frees the device: the waiting pod gets it."""
    await setup_class(run)
    await run.slice(run.nodes[1], device("gpu-0"))
    await run.claim("first", exactly("gpu", run.driver))
    await run.claim("second", exactly("gpu", run.driver))
    await run.pod("first", {"gpu": "first"})
    first = await bound(run, "first", "first")
    await run.pod("second", {"gpu": "second"})
    waiting = await pending(run, "second")
    await request_json(
        run.api, "DELETE", f"/api/v1/namespaces/{run.namespace}/pods/first", query={"gracePeriodSeconds": 0}
    )
    await request_json(
        run.api, "PATCH", run.claim_path("first"), body={"metadata": {"finalizers": None}}, content_type=MERGE_PATCH
    )
    with contextlib.suppress(ApiException):  # the patch may have let the deletion through already
        await request_json(run.api, "DELETE", run.claim_path("first"))
    return {"first": first, "waiting": waiting, "second": await bound(run, "second", "second")}


Shape = Callable[[Run], Awaitable[JSON]]
SHAPES: dict[str, Shape] = {
    "cel": cel,
    "all": all_devices,
    "match": match_attribute,
    "taint": taints,
    "admin": admin_access,
    "partition": partitionable,
    "capacity": consumable_capacity,
    "binding": binding_conditions,
    "binding-failure": binding_failure,
    "postfilter": postfilter_deallocation,
    "freed": freed_by_a_delete,
}


# ---------------------------------------------------------------------------------------------- the runs


# Shapes run alone, after the others: an `All` request fails with "resource pool ... is currently being
# updated" while ANY pool on the node is incomplete, whatever its driver (upstream's allocator checks every
# pool before the class's selectors), and the partitionable shape's pool is two slices, created and deleted
# one after the other: played at once, which scheduler sees that window depends on timing (seen in CI).
SOLO = ("all",)
SETTLE = 2.0  # seconds for the schedulers' slice informers to see the other shapes' deletions


async def play(api: Any, scheduler: str, prefix: str, nodes: list[str]) -> dict[str, JSON]:
    """Every shape at once for one scheduler, then the SOLO ones one by one; a shape that fails records its
    error instead of an outcome."""

    async def one(name: str, shape: Shape) -> JSON:
        labels = {ADMIN_LABEL: "true"} if name == "admin" else None
        driver = f"{name}.example.com"
        try:
            async with run_for(api, scheduler, f"{prefix}-{name}", nodes, driver=driver, labels=labels) as run:
                return await shape(run)
        except Exception as e:  # the shape's own test reports it
            return {"error": f"{type(e).__name__}: {e}"}

    together = [name for name in SHAPES if name not in SOLO]
    results = dict(zip(together, await asyncio.gather(*(one(name, SHAPES[name]) for name in together)), strict=True))
    for name in SOLO:
        await asyncio.sleep(SETTLE)
        results[name] = await one(name, SHAPES[name])
    return {name: results[name] for name in SHAPES}


@contextlib.asynccontextmanager
async def scheduler_running(
    scheduler: str, control_plane: ControlPlane, kubeconfig: Path, work_dir: Path
) -> AsyncIterator[None]:
    if scheduler == UPSTREAM:
        await asyncio.to_thread(control_plane.start_kube_scheduler)
        try:
            yield
        finally:
            control_plane.stop_process("kube-scheduler")
        return
    handle = await launch_pyscheduler(control_plane, kubeconfig, work_dir)
    try:
        yield
    finally:
        failure = await stop_pyscheduler(handle)
        assert failure is None, f"pyscheduler did not exit cleanly on SIGTERM: {failure}"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def outcomes(
    control_plane: ControlPlane, kubeconfig: Path, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[dict[str, dict[str, JSON]]]:
    """Each shape's outcome per scheduler (upstream's run first, then pyscheduler's, on the same nodes)."""
    prefix = f"dras-{secrets.token_hex(2)}"
    nodes = [f"{prefix}-n{i}" for i in (1, 2, 3)]
    work_dir = tmp_path_factory.mktemp("dra-shapes")
    api = await new_client_from_config(config_file=str(kubeconfig), persist_config=False)
    try:
        for name in nodes:
            manifest = node_manifest(name, labels={OWNER_LABEL: prefix})
            manifest["status"] = node_status()
            await request_json(api, "POST", "/api/v1/nodes", body=manifest)
        played: dict[str, dict[str, JSON]] = {}
        for scheduler in SCHEDULERS:
            began = time.monotonic()
            async with scheduler_running(scheduler, control_plane, kubeconfig, work_dir):
                played[scheduler] = await play(api, scheduler, prefix, nodes)
            print(f"{scheduler}: every shape in {time.monotonic() - began:.1f} s")
        by_shape = {name: {s: played[s][name] for s in SCHEDULERS} for name in SHAPES}
        print(json.dumps(by_shape, indent=2, sort_keys=True))
        yield by_shape
    finally:
        for name in nodes:
            with contextlib.suppress(ApiException):
                await request_json(api, "DELETE", f"/api/v1/nodes/{name}")
        await api.close()


def outcome(outcomes: dict[str, dict[str, JSON]], shape: str) -> JSON:
    """The shape's outcome, after checking both schedulers played it through and agree."""
    both = outcomes[shape]
    for scheduler in SCHEDULERS:
        assert "error" not in both[scheduler], f"{scheduler}: {both[scheduler]['error']}"
    assert_same_outcomes(both)
    result: JSON = both[OURS]
    return result


def devices(allocation: JSON) -> list[tuple[str, str]]:
    return [(r["pool"], r["device"]) for r in allocation["devices"]["results"]]


# ----------------------------------------------------------------------------------------------- the tests


def test_cel_on_an_attribute_and_on_capacity(outcomes: dict[str, dict[str, JSON]]) -> None:
    """Selectors on a string attribute, a quantity capacity and both pick the one node each allows."""
    got = outcome(outcomes, "cel")
    assert {name: got[name]["node"] for name in got} == {"by-attribute": "n1", "by-capacity": "n2", "by-both": "n3"}
    assert devices(got["by-capacity"]["by-capacity"]) == [("n2", "gpu-0")]


def test_all_takes_every_matching_device(outcomes: dict[str, dict[str, JSON]]) -> None:
    """`All` allocates both A100s of n2; `All` of a model nobody has finds no node."""
    got = outcome(outcomes, "all")
    assert devices(got["every-a100"]["every-a100"]) == [("n2", "gpu-0"), ("n2", "gpu-2")]
    assert got["every-b200"]["message"] == UNALLOCATABLE


def test_match_attribute_across_two_requests(outcomes: dict[str, dict[str, JSON]]) -> None:
    """A GPU and a NIC on one NUMA node: gpu-1 and nic-0 of n2; the second pair finds none."""
    got = outcome(outcomes, "match")
    assert devices(got["pair"]["pair"]) == [("n2", "gpu-1"), ("n2", "nic-0")]
    assert got["second-pair"]["message"] == UNALLOCATABLE


def test_device_taints_and_a_taint_rule(outcomes: dict[str, dict[str, JSON]]) -> None:
    """The tolerated taint's device is allocated (slice taint on n1, DeviceTaintRule on n2); no toleration, no
    device."""
    got = outcome(outcomes, "taint")
    assert got["tolerates-broken"]["node"] == "n1" and got["tolerates-maintenance"]["node"] == "n2"
    assert got["intolerant"]["message"] == UNALLOCATABLE


def test_admin_access(outcomes: dict[str, dict[str, JSON]]) -> None:
    """adminAccess shares an allocated device (the result says adminAccess); an ordinary second claim cannot."""
    got = outcome(outcomes, "admin")
    assert got["monitor"]["node"] == got["user"]["node"] == "n3"
    assert got["monitor"]["monitor"]["devices"]["results"][0]["adminAccess"] is True
    assert got["second-user"]["message"] == UNALLOCATABLE


def test_partitionable_devices(outcomes: dict[str, dict[str, JSON]]) -> None:
    """Shared counters: two halves fit, the whole device does not once a half is taken."""
    got = outcome(outcomes, "partition")
    assert devices(got["half-1"]["half-1"]) == [("n1", "gpu-0-half-a")]
    assert devices(got["half-2"]["half-2"]) == [("n1", "gpu-0-half-b")]
    assert got["full"]["message"] == UNALLOCATABLE


def test_consumable_capacity(outcomes: dict[str, dict[str, JSON]]) -> None:
    """Two shares of one device (15Gi rounded up to the 10Gi step), the third does not fit."""
    got = outcome(outcomes, "capacity")
    for name in ("twenty", "fifteen"):
        [result] = got[name][name]["devices"]["results"]
        assert result["shareID"] is True and result["consumedCapacity"] == {"memory": "20Gi"}
    assert got["default"]["message"] == UNALLOCATABLE


def test_binding_conditions(outcomes: dict[str, dict[str, JSON]]) -> None:
    """The pod waits unbound with its claim allocated until the driver's condition is true, then binds."""
    got = outcome(outcomes, "binding")
    assert got["waiting"]["bound while waiting"] is False
    assert got["waits"]["node"] == "n3"
    reasons = [event[1] for event in got["waits"]["events"]]
    assert "BindingConditionsPending" in reasons and "Scheduled" in reasons


def test_a_binding_failure(outcomes: dict[str, dict[str, JSON]]) -> None:
    """A failure condition fails PreBind with the driver's reason, PostFilter frees the claim, the next
    allocation waits again and binds once the device is ready."""
    got = outcome(outcomes, "binding-failure")
    assert got["fails"]["node"] == "n1"
    notes = [event[2] for event in got["fails"]["events"] if event[1] == "FailedScheduling"]
    assert any("device binding failed" in note for note in notes), notes
    assert any("deallocation of ResourceClaim completed" in note for note in notes), notes


def test_postfilter_deallocates_a_claim_allocated_elsewhere(outcomes: dict[str, dict[str, JSON]]) -> None:
    """The claim allocated on n1 is deallocated by PostFilter (the message says so) and allocated on n2."""
    got = outcome(outcomes, "postfilter")
    assert got["mover"]["node"] == "n2" and devices(got["mover"]["stale"]) == [("n2", "gpu-0")]
    notes = [event[2] for event in got["mover"]["events"] if event[1] == "FailedScheduling"]
    assert notes == [
        "0/3 nodes are available: 1 resourceclaim not available on the node, 2 node(s) didn't match Pod's node "
        "affinity/selector. deallocation of ResourceClaim completed, preemption: 0/3 nodes are available: 3 "
        + NOT_HELPFUL
    ]


def test_a_deleted_claim_frees_its_device(outcomes: dict[str, dict[str, JSON]]) -> None:
    """The waiting pod gets the device of a deleted claim."""
    got = outcome(outcomes, "freed")
    assert got["waiting"]["message"] == UNALLOCATABLE
    assert devices(got["second"]["second"]) == devices(got["first"]["first"]) == [("n2", "gpu-0")]
