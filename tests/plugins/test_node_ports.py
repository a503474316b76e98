"""NodePorts filter and the conflicting-pods explanation (upstream plugins/nodeports, field story 2)."""

from __future__ import annotations

import pytest

from scheduler.framework.interface import ASSIGNED_POD, NODE, ActionType, CycleState
from scheduler.framework.status import Code, Status
from scheduler.framework.types import DEFAULT_BIND_ALL_HOST_IP, NodeInfo, PodInfo, parse_pod
from scheduler.plugins.node_ports import ERR_REASON, NAME, NodePorts, conflicting_pods
from scheduler.testing import PodBuilder, make_node, make_pod

ANY = DEFAULT_BIND_ALL_HOST_IP
PortSpec = tuple[str, int, str]  # protocol, port, host IP ("" = unset)


def _pod(name: str, *ports: PortSpec) -> PodBuilder:
    builder = make_pod(name)
    for protocol, port, ip in ports:
        builder.host_port(port, protocol, ip)
    return builder


def _node(*holders: PodInfo) -> NodeInfo:
    node = NodeInfo("n1", make_node("n1").info())
    for p in holders:
        node.add_pod(p)
    return node


def _run(pod: PodInfo, node: NodeInfo) -> tuple[bool, Status | None]:
    """(skipped at PreFilter, filter status) as the framework would see them."""
    pl = NodePorts()
    state = CycleState()
    result, status = pl.pre_filter(state, pod, [node])
    assert result is None
    if status is not None:
        assert status.code == Code.SKIP
        return True, None
    got = pl.filter(state, pod, node)
    assert pl.filter_batch(state, pod, [node]) == [got]
    return False, got


@pytest.mark.parametrize(
    ("wanted", "held", "fits"),
    [
        pytest.param([("TCP", 8080, "")], [("TCP", 8081, "")], True, id="other-port"),
        pytest.param([("UDP", 8080, "")], [("UDP", 8080, "")], False, id="same-udp-port"),
        pytest.param([("TCP", 8080, "")], [("TCP", 8080, "")], False, id="same-tcp-port"),
        pytest.param([("TCP", 8080, "127.0.0.1")], [("TCP", 8080, "127.0.0.2")], True, id="different-host-ip"),
        pytest.param([("UDP", 8080, "")], [("TCP", 8080, "")], True, id="different-protocol"),
        pytest.param([("TCP", 8000, ""), ("UDP", 8080, "")], [("UDP", 8080, "")], False, id="second-port-conflicts"),
        pytest.param([("TCP", 8001, "0.0.0.0")], [("TCP", 8001, "127.0.0.1")], False, id="wildcard-vs-specific-ip"),
        pytest.param([("TCP", 8001, "127.0.0.1")], [("TCP", 8001, "0.0.0.0")], False, id="specific-ip-vs-wildcard"),
        pytest.param([("TCP", 8001, "")], [("TCP", 8001, "10.0.0.9")], False, id="empty-ip-means-wildcard"),
        pytest.param([("", 8001, "")], [("TCP", 8001, "")], False, id="empty-protocol-means-tcp"),
        pytest.param([("", 8001, "")], [("UDP", 8001, "")], True, id="empty-protocol-not-udp"),
        pytest.param([("TCP", 8001, "")], [], True, id="empty-node"),
    ],
)
def test_filter(wanted: list[PortSpec], held: list[PortSpec], fits: bool) -> None:
    """Declared host ports of pods on the node decide; wildcard IPs and protocol defaults as upstream."""
    pod = _pod("incoming", *wanted).info()
    node = _node(_pod("holder", *held).node("n1").info())
    skipped, status = _run(pod, node)
    assert not skipped
    if fits:
        assert status is None
    else:
        assert status is not None
        assert (status.code, status.reasons, status.plugin) == (Code.UNSCHEDULABLE, (ERR_REASON,), NAME)



def test_pod_without_host_ports_is_skipped() -> None:
    """No host ports (only container ports, not hostNetwork) -> PreFilter Skip, so Filter never runs."""
    pod = make_pod().container_port(8080).info()
    skipped, _ = _run(pod, _node(_pod("h", ("TCP", 8080, "")).info()))
    assert skipped


def test_host_port_zero_is_skipped() -> None:
    """hostPort 0 means "no host port" and never conflicts."""
    obj = make_pod().obj()
    obj["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 0}]
    skipped, _ = _run(parse_pod(obj), _node(_pod("h", ("TCP", 80, "")).info()))
    assert skipped


def test_host_network_defaults_host_port_to_container_port() -> None:
    """For hostNetwork pods the API defaults hostPort to containerPort, so a bare containerPort conflicts."""
    pod = make_pod().host_network().container_port(9153).info()
    skipped, status = _run(pod, _node(_pod("h", ("TCP", 9153, "")).info()))
    assert not skipped and status is not None and status.reasons == (ERR_REASON,)


def _with_init_port(sidecar: bool) -> PodInfo:
    obj = make_pod().init_container(restart_policy="Always" if sidecar else None).obj()
    obj["spec"]["initContainers"][0]["ports"] = [{"containerPort": 8001, "hostPort": 8001, "protocol": "TCP"}]
    return parse_pod(obj)


def test_regular_init_container_ports_are_ignored() -> None:
    """Ports of run-to-completion init containers are not held (upstream: PreFilter Skip)."""
    skipped, _ = _run(_with_init_port(sidecar=False), _node(_pod("h", ("TCP", 8001, "")).info()))
    assert skipped


def test_sidecar_init_container_ports_conflict() -> None:
    """A sidecar init container runs for the pod's lifetime, so its host port must be free."""
    skipped, status = _run(_with_init_port(sidecar=True), _node(_pod("h", ("TCP", 8001, "")).info()))
    assert not skipped and status is not None


def _coredns() -> PodInfo:
    """The field-story DaemonSet pod: hostNetwork, TCP 53, 9153, 8080 and UDP 53."""
    return (
        make_pod("coredns-x", "kube-system")
        .host_network()
        .container_port(53, "UDP")
        .container_port(53, "TCP")
        .container_port(9153, "TCP")
        .container_port(8080)
        .info()
    )


@pytest.mark.parametrize(
    ("held", "fits"),
    [
        pytest.param([("UDP", 53, "")], False, id="udp-53-held"),
        pytest.param([("TCP", 9153, "10.0.0.5")], False, id="metrics-port-on-node-ip"),
        pytest.param([("TCP", 8080, "")], False, id="health-port-held"),
        pytest.param([("UDP", 9153, ""), ("UDP", 8080, "")], True, id="same-numbers-other-protocol"),
        pytest.param([("TCP", 54, ""), ("SCTP", 53, "")], True, id="unrelated-ports"),
    ],
)
def test_coredns_story(held: list[PortSpec], fits: bool) -> None:
    """CoreDNS on hostNetwork is rejected exactly when a pod on the node declares one of its ports."""
    node = _node(_pod("other", *held).node("n1").info())
    skipped, status = _run(_coredns(), node)
    assert not skipped
    assert (status is None) is fits
    assert (conflicting_pods(_coredns(), node) == []) is fits


def test_conflicting_pods_names_holders_and_ports() -> None:
    """Explain names each pod holding a clashing port with the port it holds, in node order."""
    quiet = _pod("quiet", ("TCP", 7000, "")).node("n1").info()
    dns_old = _pod("coredns-old", ("UDP", 53, ""), ("TCP", 53, ""), ("TCP", 1234, "")).node("n1").info()
    exporter = _pod("exporter", ("TCP", 9153, "10.0.0.5")).node("n1").info()
    node = _node(quiet, dns_old, exporter)
    got = [(p.name, hp) for p, hp in conflicting_pods(_coredns(), node)]
    assert got == [
        ("coredns-old", (ANY, "UDP", 53)),
        ("coredns-old", (ANY, "TCP", 53)),
        ("exporter", ("10.0.0.5", "TCP", 9153)),
    ]


def test_conflicting_pods_excludes_the_pod_itself() -> None:
    """A pod already on the node (e.g. explaining where it runs) does not conflict with itself."""
    me = _coredns().with_node("n1")
    node = _node(me)
    assert conflicting_pods(me, node) == []
    assert NodePorts().filter(CycleState(), me, node) is not None  # the filter itself does not know "self"


def test_conflicting_pods_without_ports() -> None:
    """A pod without host ports conflicts with nobody."""
    node = _node(_pod("h", ("TCP", 80, "")).node("n1").info())
    assert conflicting_pods(make_pod().info(), node) == []


def test_filter_batch_over_many_nodes() -> None:
    """The batch path agrees with per-node filtering across empty and busy nodes."""
    pod = _pod("p", ("TCP", 80, "")).info()
    nodes = []
    for i, held in enumerate([[], [("TCP", 80, "")], [("UDP", 80, "")], [("TCP", 80, "10.0.0.1")]]):
        node = NodeInfo(f"n{i}", make_node(f"n{i}").info())
        node.add_pod(_pod(f"h{i}", *held).info())
        nodes.append(node)
    pl = NodePorts()
    state = CycleState()
    pl.pre_filter(state, pod, nodes)
    batch = pl.filter_batch(state, pod, nodes)
    assert batch == [pl.filter(state, pod, n) for n in nodes]
    assert [s is None for s in batch] == [True, False, True, False]


def test_events_to_register() -> None:
    """A deleted assigned pod or a new node may free the port."""
    events = NodePorts().events_to_register()
    assert any(e.resource == ASSIGNED_POD and e.action & ActionType.DELETE for e in events)
    assert any(e.resource == NODE and e.action & ActionType.ADD for e in events)
