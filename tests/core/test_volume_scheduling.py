"""Pods with volumes through the whole scheduler over the in-memory cluster (which acts as the PV controller
and a provisioner): static and dynamic binding end bound, a pod waiting for its claim schedules when it
appears, a provisioner that never answers fails the binding after bindTimeoutSeconds and the retry binds,
and nothing is left assumed. Every test checks the two invariants of the e2e suite: no pod bound while a claim
it uses is unbound, no PV bound to two claims."""

from __future__ import annotations

from typing import Any

from scheduler.core.explain import explain_pod, render_text
from scheduler.framework.types import parse_pod
from scheduler.storage import volume as st
from scheduler.testing import (
    SchedulerHarness,
    csi_node,
    make_node,
    make_pod,
    make_pv,
    make_pvc,
    storage_class,
)

JSON = dict[str, Any]


def stored(env: SchedulerHarness, kind: str, namespace: str, name: str) -> JSON:
    """An object as the in-memory API server holds it now."""
    return env.cluster.objects[(kind, namespace, name)]


def check_invariants(env: SchedulerHarness) -> None:
    """No bound pod uses an unbound claim; no PV is claimed by two claims; nothing stays assumed."""
    claims = {(ns, n): o for (k, ns, n), o in env.cluster.objects.items() if k == "PersistentVolumeClaim"}
    for pod in env.cluster.pods.values():
        if not (pod.get("spec") or {}).get("nodeName"):
            continue
        info = parse_pod(pod)
        for _, claim_name, _ in st.pod_claim_volumes(info):
            claim = claims.get((info.namespace, claim_name))
            assert claim is not None and st.is_claim_fully_bound(claim), f"{info.key} bound with {claim_name} unbound"
    owners: dict[str, str] = {}
    for (kind, _, name), pv in env.cluster.objects.items():
        if kind != "PersistentVolume":
            continue
        ref = st.spec(pv).get("claimRef")
        if ref:
            assert name not in owners
            owners[name] = f"{ref['namespace']}/{ref['name']}"
    volume_names = [st.spec(c).get("volumeName") for c in claims.values() if st.spec(c).get("volumeName")]
    assert len(volume_names) == len(set(volume_names)), "a PV is bound to two claims"
    assert env.scheduler.cache.assumed_count() == 0


def nodes(env: SchedulerHarness, *names: str) -> None:
    for name in names:
        env.cluster.apply_node(make_node(name).obj())


async def test_static_local_pv_wait_for_first_consumer() -> None:
    """The pod lands where the only fitting local PV is; PV and claim end bound to each other."""
    env = SchedulerHarness()
    nodes(env, "n1", "n2", "n3")
    env.cluster.apply_object(storage_class("local"))
    env.cluster.apply_object(make_pv("pv-n2").storage_class("local").on_node("n2").capacity("10Gi").obj())
    env.cluster.apply_object(make_pv("pv-n3-small").storage_class("local").on_node("n3").capacity("1Gi").obj())
    env.cluster.apply_object(make_pvc("data").storage_class("local").request("5Gi").obj())
    pod = env.add_pod(make_pod("db").pvc("data"))
    await env.settle()
    assert env.node_of(pod) == "n2"
    claim = stored(env, "PersistentVolumeClaim", "default", "data")
    pv = stored(env, "PersistentVolume", "", "pv-n2")
    assert st.spec(claim)["volumeName"] == "pv-n2" and st.is_claim_fully_bound(claim)
    assert st.spec(pv)["claimRef"]["name"] == "data" and st.phase_of(pv) == "Bound"
    assert st.annotations_of(pv)[st.ANN_BOUND_BY_CONTROLLER] == "yes"
    check_invariants(env)


async def test_two_pods_never_share_one_pv() -> None:
    """Two claims and one PV: the first pod gets it, the second is told no PV is available on any node."""
    env = SchedulerHarness()
    nodes(env, "n1", "n2")
    env.cluster.apply_object(storage_class("local"))
    env.cluster.apply_object(make_pv("pv-n1").storage_class("local").on_node("n1").obj())
    env.cluster.apply_object(make_pvc("a").storage_class("local").obj())
    env.cluster.apply_object(make_pvc("b").storage_class("local").obj())
    first = env.add_pod(make_pod("p1").pvc("a"))
    second = env.add_pod(make_pod("p2").pvc("b"))
    await env.settle()
    assert env.node_of(first) == "n1"
    assert env.node_of(second) is None
    assert env.message(second) == (
        "0/2 nodes are available: 2 node(s) didn't find available persistent volumes to bind."
        " preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )
    check_invariants(env)


async def test_dynamic_provisioning_through_selected_node() -> None:
    """A claim of a provisioning WaitForFirstConsumer class: the scheduler picks the node, writes
    selected-node, the provisioner creates a PV on that node, the claim binds, then the pod binds."""
    env = SchedulerHarness()
    nodes(env, "n1", "n2")
    env.cluster.apply_object(storage_class("fast", provisioner="csi.example.com"))
    env.cluster.apply_object(make_pvc("data").storage_class("fast").request("3Gi").obj())
    pod = env.add_pod(make_pod("db").pvc("data").node_selector(**{"kubernetes.io/hostname": "n2"}))
    await env.settle()
    assert env.node_of(pod) == "n2"
    claim = stored(env, "PersistentVolumeClaim", "default", "data")
    assert st.annotations_of(claim)[st.ANN_SELECTED_NODE] == "n2"
    pv = stored(env, "PersistentVolume", "", st.spec(claim)["volumeName"])
    assert st.annotations_of(pv)[st.ANN_DYNAMICALLY_PROVISIONED] == "csi.example.com"
    assert st.check_node_affinity(pv, {"kubernetes.io/hostname": "n2"})
    check_invariants(env)


async def test_pod_waits_for_its_claim_and_schedules_when_it_appears() -> None:
    """A missing claim is reported with the lister's text; creating it requeues the pod, which then binds."""
    env = SchedulerHarness()
    nodes(env, "n1")
    env.cluster.apply_object(storage_class("fast", provisioner="csi.example.com"))
    pod = env.add_pod(make_pod("db").pvc("late"))
    await env.settle()
    assert env.node_of(pod) is None
    # PreFilter stopped at VolumeBinding, so upstream's DynamicResources PostFilter finds no state of its own:
    # its Error ("not found") ends PostFilter before preemption and ends the message.
    assert env.message(pod) == '0/1 nodes are available: persistentvolumeclaim "late" not found. not found'
    env.cluster.apply_object(make_pvc("late").storage_class("fast").obj())
    await env.settle()
    assert env.node_of(pod) == "n1"
    check_invariants(env)


async def test_unbound_immediate_claim_is_unresolvable_until_bound() -> None:
    """An Immediate class without a provisioner and no PV: `pod has unbound immediate PersistentVolumeClaims`;
    a matching PV lets the PV controller bind the claim and the pod follows."""
    env = SchedulerHarness()
    nodes(env, "n1")
    env.cluster.apply_object(storage_class("manual", mode="Immediate"))
    env.cluster.apply_object(make_pvc("data").storage_class("manual").obj())
    pod = env.add_pod(make_pod("db").pvc("data"))
    await env.settle()
    assert env.message(pod) == "0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims. not found"
    env.cluster.apply_object(make_pv("pv").storage_class("manual").obj())
    await env.settle()
    assert env.node_of(pod) == "n1"
    check_invariants(env)


async def test_read_write_once_pod_claim_used_by_two_pods() -> None:
    """The second user of a ReadWriteOncePod claim is rejected on every node (Unschedulable)."""
    env = SchedulerHarness()
    nodes(env, "n1", "n2")
    env.cluster.apply_object(storage_class("manual", mode="Immediate"))
    pvc = make_pvc("solo").storage_class("manual").access_modes("ReadWriteOncePod").obj()
    env.cluster.apply_object(pvc)
    env.cluster.apply_object(make_pv("pv").storage_class("manual").access_modes("ReadWriteOncePod").obj())
    first = env.add_pod(make_pod("p1").pvc("solo"))
    await env.settle()
    assert env.node_of(first) is not None
    second = env.add_pod(make_pod("p2").pvc("solo"))
    await env.settle()
    assert env.node_of(second) is None
    assert env.message(second) == (
        "0/2 nodes are available: 2 node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod "
        "access mode already in-use by another pod."
        " preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."
    )
    env.cluster.delete_pod(first["metadata"]["uid"])
    await env.settle()
    assert env.node_of(second) is not None
    check_invariants(env)


async def test_zonal_pv_keeps_the_pod_in_its_zone() -> None:
    """A bound PV labelled with a zone: nodes of other zones are out (`no available volume zone`)."""
    env = SchedulerHarness()
    for name, zone in (("a1", "zone-a"), ("b1", "zone-b"), ("b2", "zone-b")):
        env.cluster.apply_node(make_node(name).zone(zone, "r").obj())
    claim = make_pvc("data").storage_class("").obj()
    pv = make_pv("pv-a").label("topology.kubernetes.io/zone", "zone-a").storage_class("").bound_to(claim).obj()
    claim["spec"]["volumeName"] = "pv-a"
    claim["metadata"]["annotations"] = {st.ANN_BIND_COMPLETED: "yes"}
    env.cluster.apply_object(pv)
    env.cluster.apply_object(claim)
    pod = env.add_pod(make_pod("db").pvc("data"))
    blocked = env.add_pod(make_pod("elsewhere").pvc("data").node_selector(**{"topology.kubernetes.io/zone": "zone-b"}))
    await env.settle()
    assert env.node_of(pod) == "a1"
    assert env.message(blocked) == (
        "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
        "2 node(s) had no available volume zone."
        " preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )
    check_invariants(env)


async def test_csi_driver_limit_reached_on_one_node() -> None:
    """A node whose CSINode allows one volume of the driver and already has one is out."""
    env = SchedulerHarness()
    nodes(env, "n1", "n2")
    env.cluster.apply_object(csi_node("n1", {"csi.example.com": 1}))
    env.cluster.apply_object(csi_node("n2", {"csi.example.com": 1}))
    env.cluster.apply_object(storage_class("manual", mode="Immediate"))
    for name in ("used", "new"):
        claim = make_pvc(name).storage_class("manual").obj()
        env.cluster.apply_object(claim)
        env.cluster.apply_object(make_pv(f"pv-{name}").storage_class("manual").csi("csi.example.com").obj())
    holder = env.add_pod(make_pod("holder").pvc("used").node_selector(**{"kubernetes.io/hostname": "n1"}))
    await env.settle()
    assert env.node_of(holder) == "n1"
    pod = env.add_pod(make_pod("p").pvc("new"))
    await env.settle()
    assert env.node_of(pod) == "n2"
    third = make_pvc("third").storage_class("manual").obj()
    env.cluster.apply_object(third)
    env.cluster.apply_object(make_pv("pv-third").storage_class("manual").csi("csi.example.com").obj())
    blocked = env.add_pod(make_pod("blocked").pvc("third"))
    await env.settle()
    assert env.message(blocked) == (
        "0/2 nodes are available: 2 node(s) exceed max volume count."
        " preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."
    )
    check_invariants(env)


async def test_provisioner_that_never_answers_times_out_and_retry_binds() -> None:
    """bindTimeoutSeconds elapses: the attempt fails with upstream's PreBind error (SchedulerError), nothing
    stays assumed, and once provisioning works the retried pod binds."""
    env = SchedulerHarness(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [
                {
                    "schedulerName": "pyscheduler",
                    "pluginConfig": [{"name": "VolumeBinding", "args": {"bindTimeoutSeconds": 1}}],
                }
            ],
        }
    )
    nodes(env, "n1")
    env.cluster.provisioning = False
    env.cluster.apply_object(storage_class("slow", provisioner="csi.example.com"))
    env.cluster.apply_object(make_pvc("data").storage_class("slow").obj())
    pod = env.add_pod(make_pod("db").pvc("data"))
    await env.scheduler.run_until_idle(advance=None)  # one attempt: no clock advance, so no retry yet
    uid = pod["metadata"]["uid"]
    cond = env.cluster.conditions[uid]
    assert (cond.reason, cond.message) == (
        "SchedulerError",
        'running PreBind plugin "VolumeBinding": binding volumes: context deadline exceeded',
    )
    assert env.node_of(pod) is None
    assert env.scheduler.cache.assumed_count() == 0
    claim = stored(env, "PersistentVolumeClaim", "default", "data")
    assert st.annotations_of(claim)[st.ANN_SELECTED_NODE] == "n1"  # the API write is not rolled back
    env.cluster.provisioning = True
    await env.settle()
    assert env.node_of(pod) == "n1"
    check_invariants(env)


async def test_explain_names_the_pv_affinity_that_rejects_each_node() -> None:
    """explain: VolumeBinding is the decisive reason on the node its PV's affinity excludes, and its detail
    names the PV and the node affinity term for every node (admitted or not)."""
    env = SchedulerHarness()
    nodes(env, "n1", "n2")
    env.cluster.apply_object(storage_class("local"))
    claim = make_pvc("data").storage_class("local").bound_to("pv-n2").obj()
    env.cluster.apply_object(make_pv("pv-n2").storage_class("local").on_node("n2").bound_to(claim).obj())
    env.cluster.apply_object(claim)
    pod = make_pod("db").pvc("data").info()
    fwk = env.scheduler.profiles["pyscheduler"]
    env.scheduler.cache.update_snapshot(env.scheduler.snapshot)
    expl = explain_pod(fwk, pod, env.scheduler.snapshot)
    text = render_text(expl)
    assert "1 node(s): VolumeBinding: node(s) didn't match PersistentVolume's node affinity  [n1]" in text
    assert (
        "n1: claim default/data is bound to PersistentVolume pv-n2 whose node affinity "
        "(kubernetes.io/hostname In [n2]) does not admit this node" in text
    )
    assert "Best node(s): n2" in text
    result = expl.to_json()["nodes"]
    details = {n["name"]: n["details"] for n in result}
    assert details["n1"][0]["plugin"] == "VolumeBinding" and details["n1"][0]["admits"] is False
    assert details["n2"][0]["plugin"] == "VolumeBinding" and details["n2"][0]["admits"] is True
    n1_filters = {f["plugin"]: f["status"] for f in next(n for n in result if n["name"] == "n1")["filters"]}
    assert n1_filters["VolumeBinding"] == {
        "code": "UnschedulableAndUnresolvable",
        "plugin": "VolumeBinding",
        "reasons": ["node(s) didn't match PersistentVolume's node affinity"],
    }
