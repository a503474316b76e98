"""DynamicResources through the whole scheduler over the in-memory cluster (which plays kube-controller-
manager's resourceclaim controller and a DRA driver): every extension point with the allocator and CEL of
scheduler.dra, the claims' writes (finalizer, allocation, reservedFor), allocations in flight, PostFilter's
deallocation, Score's prioritized list, binding conditions, device taints, extended resources backed by DRA,
and the explanation. The invariant of every test: no device is allocated to two claims, and no pod is bound
while one of its claims is not allocated and reserved for it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from scheduler.core.explain import explain_pod, render_text
from scheduler.framework.interface import ConflictError
from scheduler.framework.objects import DEVICE_TAINT_RULE, RESOURCE_CLAIM
from scheduler.framework.types import parse_pod
from scheduler.plugins.dynamic_resources.claims import allocation_results, claim_name
from scheduler.testing import PodBuilder, SchedulerHarness, device_class, make_claim, make_node, make_pod, make_slice

JSON = dict[str, Any]
GPU = "gpu.example.com"
NOT_HELPFUL = " preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
CANNOT = "0/3 nodes are available: 3 cannot allocate all claims." + NOT_HELPFUL


def env3(*, two_gpus_on: str = "n2") -> SchedulerHarness:
    """Three nodes; the DeviceClass gpu.example.com; two GPUs on one node."""
    env = SchedulerHarness()
    for name in ("n1", "n2", "n3"):
        env.cluster.apply_node(make_node(name).obj())
    env.cluster.apply_object(device_class(GPU))
    env.cluster.apply_object(
        make_slice(f"{two_gpus_on}-gpu", GPU, two_gpus_on)
        .device("gpu-0", attributes={"model": "a100"}, capacity={"memory": "40Gi"})
        .device("gpu-1", attributes={"model": "h100"}, capacity={"memory": "80Gi"})
        .obj()
    )
    return env


def claim_of(env: SchedulerHarness, name: str) -> JSON:
    return env.cluster.objects[(RESOURCE_CLAIM, "default", name)]


def devices(claim: JSON) -> list[str]:
    return [r["device"] for r in allocation_results((claim.get("status") or {}).get("allocation"))]


def check_invariants(env: SchedulerHarness) -> None:
    """No device in two allocations; every bound pod's claims are allocated and reserved for it."""
    held: dict[tuple[str, str, str], str] = {}
    for (kind, ns, name), claim in env.cluster.objects.items():
        if kind != RESOURCE_CLAIM:
            continue
        for r in allocation_results((claim.get("status") or {}).get("allocation")):
            device = (r["driver"], r["pool"], r["device"])
            assert device not in held, f"{device} allocated to {held[device]} and {ns}/{name}"
            held[device] = f"{ns}/{name}"
    for pod in env.cluster.pods.values():
        if not (pod.get("spec") or {}).get("nodeName"):
            continue
        info = parse_pod(pod)
        for entry in info.resource_claims:
            generated, _ = claim_name(info, entry)
            if generated is None:
                continue
            name = generated
            claim = claim_of(env, name)
            status = claim.get("status") or {}
            assert status.get("allocation"), f"{info.key} bound with {name} unallocated"
            assert any(r["uid"] == info.uid for r in status.get("reservedFor") or []), f"{name} not reserved"
    assert env.scheduler.state_sizes()["dra_in_flight"] == 0


async def bind(env: SchedulerHarness, builder: PodBuilder) -> JSON:
    pod = env.add_pod(builder)
    await env.settle()
    check_invariants(env)
    return pod


# --------------------------------------------------------------------------------------------- the basics


async def test_one_device_binds_where_the_devices_are() -> None:
    """The issue's story: the pod goes to n2 and its claim records the device, the finalizer, the reservation
    and the allocation time (binding conditions are on: PreBind stamps it)."""
    env = env3()
    env.cluster.apply_object(make_claim("gpu").request("gpu", GPU).obj())
    pod = await bind(env, make_pod("trainer").claim("gpu"))
    assert env.node_of(pod) == "n2"
    claim = claim_of(env, "gpu")
    assert devices(claim) == ["gpu-0"]
    assert claim["metadata"]["finalizers"] == ["resource.kubernetes.io/delete-protection"]
    assert claim["status"]["reservedFor"] == [{"resource": "pods", "name": "trainer", "uid": pod["metadata"]["uid"]}]
    allocation = claim["status"]["allocation"]
    assert allocation["allocationTimestamp"].endswith("Z")
    assert allocation["nodeSelector"] == {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]
    }


@pytest.mark.parametrize(
    "claim",
    [
        pytest.param(
            make_claim("gpu").request("gpu", GPU, selectors=[f'device.attributes["{GPU}"].model == "b200"']),
            id="selector",
        ),
        pytest.param(make_claim("gpu").request("gpu", GPU, count=3), id="too-many"),
        pytest.param(make_claim("gpu").request("gpu", GPU).request("more", GPU, count=2), id="two-requests"),
    ],
)
async def test_a_claim_nothing_satisfies(claim: Any) -> None:
    """UnschedulableAndUnresolvable on every node, upstream's whole message."""
    env = env3()
    env.cluster.apply_object(claim.obj())
    pod = await bind(env, make_pod("p").claim("gpu"))
    assert env.node_of(pod) is None
    assert env.message(pod) == CANNOT
    assert devices(claim_of(env, "gpu")) == []


async def test_cel_on_an_attribute_and_on_capacity() -> None:
    """Request selectors read the device's attributes and its capacity as quantities."""
    env = env3()
    by_model = f'device.attributes["{GPU}"].model == "h100"'
    by_memory = f'device.capacity["{GPU}"].memory.compareTo(quantity("50Gi")) >= 0'
    env.cluster.apply_object(make_claim("h100").request("gpu", GPU, selectors=[by_model]).obj())
    env.cluster.apply_object(make_claim("big").request("gpu", GPU, selectors=[by_memory]).obj())
    await bind(env, make_pod("a").claim("gpu", "h100"))
    assert devices(claim_of(env, "h100")) == ["gpu-1"]
    pod = await bind(env, make_pod("b").claim("gpu", "big"))
    assert env.message(pod) == CANNOT  # the only device with >= 50Gi is taken


async def test_allocations_in_flight_count_against_the_next_pods() -> None:
    """Three pods, two devices: each device goes to one claim, the third pod cannot allocate."""
    env = env3()
    for i in range(3):
        env.cluster.apply_object(make_claim(f"c{i}").request("gpu", GPU).obj())
        env.add_pod(make_pod(f"p{i}").claim("gpu", f"c{i}"))
    await env.settle()
    check_invariants(env)
    got = sorted(d for i in range(3) for d in devices(claim_of(env, f"c{i}")))
    assert got == ["gpu-0", "gpu-1"]
    assert sorted(env.cluster.node_of(u) or "-" for u in env.cluster.pods) == ["-", "n2", "n2"]


async def test_a_claim_template_makes_the_pods_claim() -> None:
    """The controller makes <pod>-<entry>-xxxxx owned by the pod and records it; the pod then binds."""
    env = env3()
    env.cluster.apply_object(make_claim("one-gpu").request("gpu", GPU).template())
    pod = await bind(env, make_pod("worker").resource_claim("gpu", "one-gpu"))
    assert env.node_of(pod) == "n2"
    [status] = pod["status"]["resourceClaimStatuses"]
    claim = claim_of(env, status["resourceClaimName"])
    assert status["resourceClaimName"].startswith("worker-gpu-")
    assert claim["metadata"]["ownerReferences"][0]["uid"] == pod["metadata"]["uid"]
    assert devices(claim) == ["gpu-0"]


async def test_a_pod_waits_for_its_template_then_binds() -> None:
    """No template yet: the pod waits (PreEnqueue, no failure report); the template arrives: it binds."""
    env = env3()
    pod = env.add_pod(make_pod("worker").resource_claim("gpu", "later"))
    await env.settle()
    assert env.node_of(pod) is None and pod["metadata"]["uid"] not in env.cluster.conditions
    [gated] = env.scheduler.queue.gated_pods()
    assert gated.gating_message == 'pod "default/worker": ResourceClaim not created yet'
    env.cluster.apply_object(make_claim("later").request("gpu", GPU).template())
    await env.settle()
    assert env.node_of(pod) == "n2"
    check_invariants(env)


async def test_a_shared_claim_keeps_its_pods_together() -> None:
    """The second pod reserves the allocated claim too and lands on its node; the device is allocated once."""
    env = env3()
    env.cluster.apply_object(make_slice("n1-gpu", GPU, "n1").device("gpu-0").obj())
    env.cluster.apply_object(make_claim("shared").request("gpu", GPU).obj())
    first = await bind(env, make_pod("first").claim("gpu", "shared"))
    second = await bind(env, make_pod("second").claim("gpu", "shared"))
    assert env.node_of(first) == env.node_of(second)
    assert [r["name"] for r in claim_of(env, "shared")["status"]["reservedFor"]] == ["first", "second"]


@pytest.mark.parametrize(
    ("claim", "message"),
    [
        pytest.param(
            make_claim("gpu").request("gpu", "missing.example.com"),
            "0/3 nodes are available: request gpu: device class missing.example.com does not exist." + NOT_HELPFUL,
            id="missing-class",
        ),
        pytest.param(
            make_claim("gpu").first_available("gpu", ("big", "missing.example.com", 1)),
            "0/3 nodes are available: request gpu/big: device class missing.example.com does not exist." + NOT_HELPFUL,
            id="missing-subrequest-class",
        ),
    ],
)
async def test_a_missing_class_is_reported_then_the_class_lets_it_bind(claim: Any, message: str) -> None:
    """PreFilter's check of every request's class, and a DeviceClass event moving the pod."""
    env = env3()
    env.cluster.apply_object(claim.obj())
    pod = await bind(env, make_pod("p").claim("gpu"))
    assert env.message(pod) == message
    env.cluster.apply_object(device_class("missing.example.com", f'device.driver == "{GPU}"'))
    await env.settle()
    assert env.node_of(pod) == "n2"


async def test_the_pod_claim_being_deleted_or_someone_elses() -> None:
    """PreEnqueue keeps out a pod whose claim is being deleted, or whose generated claim it does not own."""
    env = env3()
    deleting = make_claim("gone").request("gpu", GPU).obj()
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    env.cluster.apply_object(deleting)
    env.cluster.apply_object(make_claim("foreign").request("gpu", GPU).obj())
    env.add_pod(make_pod("a").claim("gpu", "gone"))
    env.add_pod(make_pod("b").resource_claim("gpu", "t").claim_status("gpu", "foreign"))
    await env.settle()
    messages = sorted(q.gating_message for q in env.scheduler.queue.gated_pods())
    assert messages == [
        "ResourceClaim default/foreign was not created for Pod default/b (Pod is not owner)",
        'resourceclaim "gone" is being deleted',
    ]


# --------------------------------------------------------------------------------------------- PostFilter, Score


async def test_post_filter_deallocates_a_claim_nobody_uses_before_preempting() -> None:
    """The claim is allocated on n2, unused; the pod may only run on n3: Filter says the claim is not available
    there, PostFilter deallocates it (before preemption), and the retry allocates on n3."""
    env = env3()
    env.cluster.apply_object(make_slice("n3-gpu", GPU, "n3").device("gpu-9").obj())
    env.cluster.apply_object(make_claim("gpu").request("gpu", GPU).allocated("n2", ("gpu", GPU, "n2", "gpu-0")).obj())
    pod = await bind(env, make_pod("p").claim("gpu").node_selector(**{"kubernetes.io/hostname": "n3"}))
    env.cluster.apply_node(make_node("n3").label("kubernetes.io/hostname", "n3").obj())
    await env.settle()
    assert env.node_of(pod) == "n3"
    assert devices(claim_of(env, "gpu")) == ["gpu-9"]
    check_invariants(env)


async def test_post_filter_message_after_deallocation() -> None:
    """The attempt that deallocates says so ahead of preemption's verdict, as the upstream binary's does
    (measured: "... selector. deallocation of ResourceClaim completed, preemption: 0/3 ..."); the retry then
    finds no device on the only node the pod may use."""
    env = env3()
    env.cluster.apply_object(make_claim("gpu").request("gpu", GPU).allocated("n2", ("gpu", GPU, "n2", "gpu-0")).obj())
    env.cluster.apply_node(make_node("n1").label("pin", "yes").obj())
    pod = await bind(env, make_pod("p").claim("gpu").node_selector(pin="yes"))
    notes = [e.note for e in env.cluster.events if e.name == "p" and e.reason == "FailedScheduling"]
    affinity = "2 node(s) didn't match Pod's node affinity/selector."
    assert notes == [
        f"0/3 nodes are available: 1 resourceclaim not available on the node, {affinity} deallocation of "
        "ResourceClaim completed, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
        f"0/3 nodes are available: 1 cannot allocate all claims, {affinity}{NOT_HELPFUL}",
    ]
    assert env.node_of(pod) is None and "allocation" not in claim_of(env, "gpu")["status"]


async def test_score_prefers_the_node_of_the_first_available_subrequest() -> None:
    """firstAvailable [h100, a100]: the node offering the first subrequest scores 8 against 7 and wins."""
    env = env3(two_gpus_on="n1")
    env.cluster.apply_object(
        device_class("h100.example.com", f'device.driver == "{GPU}"', f'device.attributes["{GPU}"].model == "h100"')
    )
    env.cluster.apply_object(
        device_class("a100.example.com", f'device.driver == "{GPU}"', f'device.attributes["{GPU}"].model == "a100"')
    )
    env.cluster.apply_object(make_slice("n3-gpu", GPU, "n3").device("gpu-0", attributes={"model": "a100"}).obj())
    claim = make_claim("gpu").first_available("gpu", ("h100", "h100.example.com", 1), ("a100", "a100.example.com", 1))
    env.cluster.apply_object(claim.obj())
    pod = await bind(env, make_pod("p").claim("gpu"))
    assert env.node_of(pod) == "n1"
    assert [r["request"] for r in allocation_results(claim_of(env, "gpu")["status"]["allocation"])] == ["gpu/h100"]


# --------------------------------------------------------------------------------------------- taints, conditions


async def test_device_taints_and_tolerations() -> None:
    """A NoSchedule taint (on the device, or from a DeviceTaintRule) keeps the device from a claim that does
    not tolerate it; a toleration lets it in."""
    env = env3()
    env.cluster.apply_object(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": DEVICE_TAINT_RULE,
            "metadata": {"name": "maintenance"},
            "spec": {"deviceSelector": {"driver": GPU}, "taint": {"key": "maintenance", "effect": "NoSchedule"}},
        }
    )
    env.cluster.apply_object(make_claim("plain").request("gpu", GPU).obj())
    toleration = {"key": "maintenance", "operator": "Exists", "effect": "NoSchedule"}
    env.cluster.apply_object(make_claim("tolerant").request("gpu", GPU, tolerations=[toleration]).obj())
    plain = await bind(env, make_pod("plain").claim("gpu", "plain"))
    tolerant = await bind(env, make_pod("tolerant").claim("gpu", "tolerant"))
    assert env.message(plain) == CANNOT
    assert env.node_of(tolerant) == "n2"
    expl = explain_pod(*_explain_args(env, make_pod("plain").claim("gpu", "plain")))
    assert any(f.kind == "tolerate-device-taint" and f.nodes == ["n2"] for f in expl.fixes), render_text(expl)


async def test_binding_conditions_are_waited_for() -> None:
    """A device with binding conditions: PreBind records BindingConditionsPending and binds once the driver
    (the in-memory cluster) reports them true."""
    env = SchedulerHarness()
    for name in ("n1", "n2", "n3"):
        env.cluster.apply_node(make_node(name).obj())
    env.cluster.apply_object(device_class(GPU))
    slice_ = make_slice("n2-gpu", GPU, "n2").device("gpu-0").obj()
    slice_["spec"]["devices"][0]["bindingConditions"] = ["Attached"]
    slice_["spec"]["devices"][0]["bindingFailureConditions"] = ["Failed"]
    slice_["spec"]["devices"][0]["bindsToNode"] = True
    env.cluster.apply_object(slice_)
    env.cluster.apply_object(make_claim("gpu").request("gpu", GPU).obj())
    pod = await bind(env, make_pod("p").claim("gpu"))
    assert env.node_of(pod) == "n2"
    reasons = [e.reason for e in env.cluster.events if e.name == "p"]
    assert reasons == ["BindingConditionsPending", "Scheduled"]
    pending = next(e for e in env.cluster.events if e.reason == "BindingConditionsPending")
    assert (pending.type, pending.action, pending.note) == (
        "Normal",
        "Scheduling",
        "waiting for binding conditions for device on node n2",
    )
    status = claim_of(env, "gpu")["status"]
    assert status["devices"][0]["conditions"][0]["type"] == "Attached"


# --------------------------------------------------------------------------------------------- extended resources


async def test_an_extended_resource_backed_by_dra() -> None:
    """example.com/gpu: 1 with no node offering it as allocatable: NodeResourcesFit leaves it to DRA, which
    creates the pod's claim on the node with the devices and records the mapping in the pod's status."""
    env = env3()
    env.cluster.apply_object(device_class(GPU, extended_resource_name="example.com/gpu"))
    pod = await bind(env, make_pod("legacy").container(requests={"example.com/gpu": "1"}))
    assert env.node_of(pod) == "n2"
    status = pod["status"]["extendedResourceClaimStatus"]
    assert status["requestMappings"] == [
        {"containerName": "c0", "resourceName": "example.com/gpu", "requestName": "container-0-request-0"}
    ]
    claim = claim_of(env, status["resourceClaimName"])
    assert status["resourceClaimName"].startswith("legacy-extended-resources-")
    assert claim["metadata"]["annotations"] == {"resource.kubernetes.io/extended-resource-claim": "true"}
    assert devices(claim) == ["gpu-0"]
    assert claim["status"]["reservedFor"][0]["uid"] == pod["metadata"]["uid"]


async def test_a_node_offering_the_extended_resource_itself_is_checked_as_usual() -> None:
    """Where a device plugin publishes example.com/gpu as allocatable, NodeResourcesFit counts it and DRA leaves
    that node alone: a pod asking 2 goes to the DRA node (n1 has 1), the next one asking 1 to n1 without a claim
    (n2's devices are taken), and a third finds neither ("Insufficient" on n1, no devices on n2)."""
    env = env3()
    env.cluster.apply_object(device_class(GPU, extended_resource_name="example.com/gpu"))
    env.cluster.apply_node(make_node("n1").extended("example.com/gpu", "1").obj())
    big = await bind(env, make_pod("big").container(requests={"example.com/gpu": "2"}))
    small = await bind(env, make_pod("small").container(requests={"example.com/gpu": "1"}))
    third = await bind(env, make_pod("third").container(requests={"example.com/gpu": "1"}))
    assert (env.node_of(big), env.node_of(small), env.node_of(third)) == ("n2", "n1", None)
    assert "extendedResourceClaimStatus" in big["status"]
    assert "extendedResourceClaimStatus" not in small["status"]
    assert env.message(third) == (
        "0/3 nodes are available: 1 Insufficient example.com/gpu, 2 cannot allocate all claims. preemption: 0/3 "
        "nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption is not helpful for "
        "scheduling."
    )


# --------------------------------------------------------------------------------------------- explain


def _explain_args(env: SchedulerHarness, builder: PodBuilder) -> tuple[Any, Any, Any]:
    obj = builder.obj()
    obj["metadata"]["uid"] = next(
        p["metadata"]["uid"] for p in env.cluster.pods.values() if p["metadata"]["name"] == obj["metadata"]["name"]
    )
    fwk, snapshot = env.scheduler.explain_environment("pyscheduler")
    return fwk, parse_pod(obj), snapshot


async def test_explain_names_what_holds_the_devices_and_proposes_fixes() -> None:
    """Per node: no slice, how many devices match, which claim holds a device; fixes are re-checked."""
    env = env3()
    env.cluster.apply_object(make_claim("holder").request("gpu", GPU).obj())
    await bind(env, make_pod("holder").claim("gpu", "holder"))
    env.cluster.apply_object(make_claim("two").request("gpu", GPU, count=2).obj())
    pod = await bind(env, make_pod("wants-two").claim("gpu", "two"))
    assert env.message(pod) == CANNOT
    expl = explain_pod(*_explain_args(env, make_pod("wants-two").claim("gpu", "two")))
    text = render_text(expl)
    assert "n1: no ResourceSlice publishes devices for this node" in text
    assert "device gpu.example.com/n2/gpu-0: already allocated to claim default/holder" in text
    assert [f.description for f in expl.fixes] == [
        "ask for 1 device(s) in request gpu of claim default/two (the most some node has free)"
    ]
    assert expl.fixes[0].nodes == ["n2"]


# --------------------------------------------------------------------------------------------- PreBind's writes


class ConflictingWriter:
    """A ClaimWriter over the in-memory cluster whose first `conflicts` status writes meet a concurrent change
    (another writer bumps the claim just before, so the write carries a stale resourceVersion)."""

    def __init__(self, env: SchedulerHarness, conflicts: int) -> None:
        self.env = env
        self.conflicts = conflicts
        self.gets = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.env.cluster, name)

    async def get_resource_claim(self, namespace: str, name: str) -> JSON:
        self.gets += 1
        return await self.env.cluster.get_resource_claim(namespace, name)

    async def update_resource_claim_status(self, claim: JSON) -> JSON:
        if self.conflicts:
            self.conflicts -= 1
            stored = dict(claim_of(self.env, claim["metadata"]["name"]))
            stored["metadata"] = {**stored["metadata"], "labels": {"touched": str(self.conflicts)}}
            self.env.cluster.write_object(stored)  # someone else's update lands first
        return await self.env.cluster.update_resource_claim_status(claim)


@pytest.mark.parametrize(
    ("conflicts", "bound"),
    [pytest.param(1, True, id="one-conflict-retried"), pytest.param(5, False, id="five-conflicts-give-up")],
)
async def test_prebind_retries_a_conflict_from_a_fresh_copy(
    monkeypatch: pytest.MonkeyPatch, conflicts: int, bound: bool
) -> None:
    """retry.DefaultRetry: after a 409 the claim is read again and written again, 5 attempts in all; then
    the attempt fails with the API server's conflict message and nothing stays in flight."""
    env = env3()
    writer = ConflictingWriter(env, conflicts)
    monkeypatch.setattr(type(env.scheduler.handle()), "claim_writer", property(lambda self: writer))
    env.cluster.apply_object(make_claim("gpu").request("gpu", GPU).obj())
    pod = env.add_pod(make_pod("p").claim("gpu"))
    await env.scheduler.run_until_idle()  # one attempt (no clock to advance the backoff)
    assert writer.gets == min(conflicts, 4)
    if bound:
        assert env.node_of(pod) == "n2" and devices(claim_of(env, "gpu")) == ["gpu-0"]
        check_invariants(env)
        return
    assert env.node_of(pod) is None
    assert env.message(pod) == (
        'running PreBind plugin "DynamicResources": add allocation and reservation to claim default/gpu: '
        'Operation cannot be fulfilled on resourceclaims.resource.k8s.io "gpu": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    assert env.scheduler.state_sizes()["dra_in_flight"] == 0
    assert "allocation" not in (claim_of(env, "gpu").get("status") or {})


async def test_prebind_refuses_a_claim_allocated_or_deleted_meanwhile() -> None:
    """Between Reserve and PreBind another scheduler allocated the claim: PreBind fails (upstream's words),
    the pod is retried and then uses the allocation it found."""
    env = env3()
    env.cluster.apply_object(make_claim("gpu").request("gpu", GPU).obj())
    real = env.cluster.update_resource_claim

    async def racing_update(claim: Mapping[str, Any]) -> JSON:
        stored = claim_of(env, "gpu")
        raced = make_claim("gpu").request("gpu", GPU).allocated("n2", ("gpu", GPU, "n2", "gpu-1")).obj()
        raced["metadata"] = {**stored["metadata"], "finalizers": ["resource.kubernetes.io/delete-protection"]}
        env.cluster.write_object({**raced, "kind": RESOURCE_CLAIM})
        env.cluster.update_resource_claim = real  # type: ignore[method-assign]
        raise ConflictError("the object has been modified")

    env.cluster.update_resource_claim = racing_update  # type: ignore[method-assign]
    pod = env.add_pod(make_pod("p").claim("gpu"))
    await env.scheduler.run_until_idle()
    assert env.message(pod) == (
        'running PreBind plugin "DynamicResources": claim default/gpu got allocated elsewhere in the meantime'
    )
    await env.settle()
    assert env.node_of(pod) == "n2" and devices(claim_of(env, "gpu")) == ["gpu-1"]
    check_invariants(env)
