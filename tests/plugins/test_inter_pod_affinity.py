"""InterPodAffinity: upstream v1.37.2's filtering_test.go and scoring_test.go tables, ported, plus the
PreFilter extensions, args, namespaceSelector handling, memoization and explanations.

Upstream's pods in namespace "" are in "default" here (our records default an empty namespace).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hst

from scheduler import caching
from scheduler.backend.cache.cache import Cache
from scheduler.config.errors import ConfigError
from scheduler.config.load import load_config
from scheduler.framework.interface import ASSIGNED_POD, NODE, ActionType, CycleState
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, NodeRecord, PodInfo
from scheduler.plugins.inter_pod_affinity.args import Args, parse_args
from scheduler.plugins.inter_pod_affinity.common import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    NAME,
    PRE_FILTER_STATE_KEY,
)
from scheduler.plugins.inter_pod_affinity.filtering import PreFilterState
from scheduler.plugins.inter_pod_affinity.plugin import InterPodAffinity, new
from scheduler.plugins.inter_pod_affinity.terms import pod_terms
from scheduler.plugins.inter_pod_affinity.topology_counts import NodeChanges
from scheduler.plugins.registry import REGISTRY, implements, parse_plugin_args
from scheduler.testing import PodBuilder, StaticHandle, expr, make_namespace, make_pod

JSON = dict[str, Any]
AFF, ANTI = "podAffinity", "podAntiAffinity"
HOST = "kubernetes.io/hostname"
_names = itertools.count(1)

NAMESPACES = [
    make_namespace("subteam1.team1", {"team": "team1"}),
    make_namespace("subteam2.team1", {"team": "team1"}),
    make_namespace("subteam1.team2", {"team": "team2"}),
    make_namespace("subteam2.team2", {"team": "team2"}),
]
TEAM1 = {"matchExpressions": [expr("team", "In", ["team1"])]}


def pod(
    labels: Mapping[str, str] | None = None, ns: str = "default", node: str | None = None, name: str | None = None
) -> PodBuilder:
    b = make_pod(name or f"p{next(_names)}", ns)
    for k, v in (labels or {}).items():
        b.label(k, v)
    if node:
        b.node(node)
    return b


def term(
    b: PodBuilder,
    kind: str,
    op: str,
    key: str,
    topo: str,
    values: list[str] | None = None,
    *,
    weight: int | None = None,
    namespaces: list[str] | None = None,
    ns_selector: JSON | None = None,
) -> PodBuilder:
    """Add a term whose labelSelector is one expression (st.MakePod().PodAffinityIn(...) and friends)."""
    return b.pod_affinity_term(
        kind,
        topo,
        match_expressions=[expr(key, op, values)],
        weight=weight,
        namespaces=namespaces,
        namespace_selector=ns_selector,
    )


def setup(
    nodes: Mapping[str, Mapping[str, str]],
    pods: Sequence[PodBuilder] = (),
    args: Args | None = None,
    namespaces: Sequence[JSON] = NAMESPACES,
) -> tuple[InterPodAffinity, list[NodeInfo]]:
    """Nodes with exactly these labels (in order) and the pods on them; a pod on an unknown node gets a
    NodeInfo without a node, as upstream's cache.NewSnapshot does."""
    infos: dict[str, NodeInfo] = {
        name: NodeInfo(name, NodeRecord(name, labels=dict(lbl))) for name, lbl in nodes.items()
    }
    for b in pods:
        info = b.info()
        infos.setdefault(info.node_name, NodeInfo(info.node_name)).add_pod(info)
    listed = list(infos.values())
    handle = StaticHandle(Snapshot.from_node_infos(listed), namespaces)
    return InterPodAffinity(args or Args(), handle), listed


def verdict(st: Status | None) -> str:
    """A status as a short word; also checks the code upstream pairs with each reason."""
    if st is None:
        return "ok"
    if st.code == Code.SKIP:
        return "skip"
    assert st.plugin == NAME
    word = {
        ERR_REASON_AFFINITY_RULES_NOT_MATCH: "aff",
        ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH: "anti",
        ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH: "existing",
    }[st.message()]
    want_code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if word == "aff" else Code.UNSCHEDULABLE
    assert st.code == want_code, st
    return word


def run_filter(
    incoming: PodBuilder,
    nodes: Mapping[str, Mapping[str, str]],
    pods: Sequence[PodBuilder] = (),
    namespaces: Sequence[JSON] = NAMESPACES,
) -> list[str]:
    """PreFilter then Filter on every node: ["skip"] or one word per node (filter and filter_batch agree)."""
    pl, infos = setup(nodes, pods, namespaces=namespaces)
    state = CycleState()
    info = incoming.info()
    result, st = pl.pre_filter(state, info, infos)
    assert result is None
    if st is not None:
        return [verdict(st)]
    targets = [i for i in infos if i.name in nodes]
    one_by_one = [pl.filter(state, info, n) for n in targets]
    assert pl.filter_batch(state, info, targets) == one_by_one
    return [verdict(s) for s in one_by_one]


# ---------------------------------------------------------------------------------------------------------
# filtering_test.go: TestRequiredAffinitySingleNode

POD_LABEL = {"service": "securityscan"}
POD_LABEL2 = {"security": "S1"}
NODE1 = {"node1": {"region": "r1", "zone": "z11"}}


def _existing() -> PodBuilder:
    return pod(POD_LABEL, node="node1")


def _selector(*exprs: JSON) -> JSON:
    return {"matchExpressions": list(exprs)}


BAD_VALUE_MESSAGE = (
    'parsing pod: requiredAffinityTerms: values[0][service]: Invalid value: "{{.bad-value.}}": a valid label must be '
    "an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)

SINGLE_NODE_CASES = [
    pytest.param(pod(), [], "skip", id="no-required-affinity-skips"),
    pytest.param(
        term(pod(POD_LABEL2), AFF, "In", "service", "region", ["securityscan", "value2"]),
        [_existing()],
        "ok",
        id="affinity-in-matches-existing-pod",
    ),
    pytest.param(
        term(pod(POD_LABEL2), AFF, "NotIn", "service", "region", ["securityscan3", "value3"]),
        [_existing()],
        "ok",
        id="affinity-not-in-matches-existing-pod",
    ),
    pytest.param(
        pod(POD_LABEL2).pod_affinity_term(
            AFF, "", selector=_selector(expr("service", "In", ["securityscan", "value2"])), namespaces=["DiffNameSpace"]
        ),
        [pod({"service": "securityscan"}, ns="ns", node="node1")],
        "aff",
        id="affinity-other-namespace",
    ),
    pytest.param(
        term(pod(POD_LABEL), AFF, "In", "service", "", ["antivirusscan", "value2"]),
        [_existing()],
        "aff",
        id="affinity-selector-matches-no-pod",
    ),
    pytest.param(
        pod(POD_LABEL2)
        .pod_affinity_term(
            AFF, "region", selector=_selector(expr("service", "Exists"), expr("wrongkey", "DoesNotExist"))
        )
        .pod_affinity_term(
            AFF,
            "region",
            selector=_selector(expr("service", "In", ["securityscan"]), expr("service", "NotIn", ["WrongValue"])),
        ),
        [_existing()],
        "ok",
        id="affinity-several-terms-and-operators",
    ),
    pytest.param(
        pod(POD_LABEL2)
        .pod_affinity_term(
            AFF, "region", selector=_selector(expr("service", "Exists"), expr("wrongkey", "DoesNotExist"))
        )
        .pod_affinity_term(
            AFF,
            "region",
            selector=_selector(expr("service", "In", ["securityscan2"]), expr("service", "NotIn", ["WrongValue"])),
        ),
        [_existing()],
        "aff",
        id="affinity-expressions-are-anded",
    ),
    pytest.param(
        term(
            term(pod(POD_LABEL2), AFF, "In", "service", "region", ["securityscan", "value2"]),
            ANTI,
            "In",
            "service",
            "node",
            ["antivirusscan", "value2"],
        ),
        [_existing()],
        "ok",
        id="affinity-and-anti-affinity-satisfied",
    ),
    pytest.param(
        term(
            term(pod(POD_LABEL2), AFF, "In", "service", "region", ["securityscan", "value2"]),
            ANTI,
            "In",
            "service",
            "node",
            ["antivirusscan", "value2"],
        ),
        [term(pod(POD_LABEL, node="node1"), ANTI, "In", "service", "node", ["antivirusscan", "value2"])],
        "ok",
        id="affinity-anti-affinity-and-symmetry-satisfied",
    ),
    pytest.param(
        term(
            term(pod(POD_LABEL2), AFF, "In", "service", "region", ["securityscan", "value2"]),
            ANTI,
            "In",
            "service",
            "zone",
            ["securityscan", "value2"],
        ),
        [_existing()],
        "anti",
        id="anti-affinity-violated",
    ),
    pytest.param(
        term(
            term(pod(POD_LABEL), AFF, "In", "service", "region", ["securityscan", "value2"]),
            ANTI,
            "In",
            "service",
            "node",
            ["antivirusscan", "value2"],
        ),
        [term(pod(POD_LABEL, node="node1"), ANTI, "In", "service", "zone", ["securityscan", "value2"])],
        "existing",
        id="existing-pod-anti-affinity-symmetry-violated",
    ),
    pytest.param(
        term(pod(POD_LABEL), AFF, "NotIn", "service", "region", ["securityscan", "value2"]),
        [pod({"service": "securityscan"}, node="node2")],
        "aff",
        id="own-labels-do-not-match-own-affinity",
    ),
    pytest.param(
        pod(POD_LABEL),
        [term(pod(POD_LABEL, node="node1"), ANTI, "In", "service", "zone", ["securityscan", "value2"])],
        "existing",
        id="existing-anti-affinity-without-own-terms",
    ),
    pytest.param(
        pod(POD_LABEL),
        [term(pod(POD_LABEL, node="node1"), ANTI, "NotIn", "service", "zone", ["securityscan", "value2"])],
        "skip",
        id="existing-anti-affinity-not-matching-skips",
    ),
    pytest.param(
        term(term(pod(POD_LABEL), ANTI, "Exists", "service", "region"), ANTI, "Exists", "security", "region"),
        [term(pod(POD_LABEL2, node="node1"), ANTI, "Exists", "security", "zone")],
        "anti",
        id="anti-affinity-violated-symmetry-not",
    ),
    pytest.param(
        term(term(pod(POD_LABEL), ANTI, "Exists", "service", "zone"), ANTI, "Exists", "security", "zone"),
        [term(pod(POD_LABEL2, node="node1"), ANTI, "Exists", "security", "zone")],
        "anti",
        id="symmetry-a1",
    ),
    pytest.param(
        term(pod(POD_LABEL2), ANTI, "Exists", "security", "zone"),
        [
            term(
                term(pod(POD_LABEL, node="node1"), ANTI, "Exists", "service", "zone"),
                ANTI,
                "Exists",
                "security",
                "zone",
            )
        ],
        "existing",
        id="symmetry-a2",
    ),
    pytest.param(
        term(term(pod({"abc": "", "xyz": ""}), ANTI, "Exists", "abc", "zone"), ANTI, "Exists", "def", "zone"),
        [
            term(
                term(pod({"def": "", "xyz": ""}, node="node1"), ANTI, "Exists", "abc", "zone"),
                ANTI,
                "Exists",
                "def",
                "zone",
            )
        ],
        "anti",
        id="symmetry-b1",
    ),
    pytest.param(
        term(term(pod({"def": "", "xyz": ""}), ANTI, "Exists", "abc", "zone"), ANTI, "Exists", "def", "zone"),
        [
            term(
                term(pod({"abc": "", "xyz": ""}, node="node1"), ANTI, "Exists", "abc", "zone"),
                ANTI,
                "Exists",
                "def",
                "zone",
            )
        ],
        "anti",
        id="symmetry-b2",
    ),
    pytest.param(
        term(pod(POD_LABEL2), AFF, "In", "service", "region", ["securityscan", "value2"], ns_selector=TEAM1),
        [pod(POD_LABEL, ns="subteam1.team1", node="node1")],
        "ok",
        id="affinity-namespace-selector",
    ),
    pytest.param(
        term(pod(POD_LABEL2), AFF, "In", "service", "region", ["securityscan", "value2"], ns_selector=TEAM1),
        [pod(POD_LABEL, ns="subteam1.team2", node="node1")],
        "aff",
        id="affinity-namespace-selector-not-matching",
    ),
    pytest.param(
        term(
            pod(POD_LABEL2, ns="subteam1.team1"),
            ANTI,
            "In",
            "service",
            "zone",
            ["securityscan", "value2"],
            ns_selector=TEAM1,
        ),
        [pod(POD_LABEL, ns="subteam2.team1", node="node1")],
        "anti",
        id="anti-affinity-namespace-selector",
    ),
    pytest.param(
        term(
            pod(POD_LABEL2, ns="subteam1.team1"),
            ANTI,
            "In",
            "service",
            "zone",
            ["securityscan", "value2"],
            ns_selector={},
        ),
        [pod(POD_LABEL, ns="subteam2.team1", node="node1")],
        "anti",
        id="anti-affinity-empty-namespace-selector",
    ),
    pytest.param(
        term(
            pod(POD_LABEL2, ns="subteam1.team1"),
            ANTI,
            "In",
            "service",
            "zone",
            ["securityscan", "value2"],
            ns_selector=TEAM1,
        ),
        [pod(POD_LABEL, ns="subteam1.team2", node="node1")],
        "ok",
        id="anti-affinity-namespace-selector-not-matching",
    ),
]


@pytest.mark.parametrize(("incoming", "pods", "want"), SINGLE_NODE_CASES)
def test_required_affinity_single_node(incoming: PodBuilder, pods: list[PodBuilder], want: str) -> None:
    """TestRequiredAffinitySingleNode: one node {region: r1, zone: z11}; PreFilter then Filter."""
    got = run_filter(incoming, NODE1, pods)
    assert got == [want]


@pytest.mark.parametrize(
    "incoming",
    [
        pytest.param(
            term(
                term(pod(POD_LABEL), AFF, "In", "service", "region", ["{{.bad-value.}}"]),
                AFF,
                "In",
                "service",
                "node",
                ["antivirusscan", "value2"],
            ),
            id="first-term-invalid",
        ),
        pytest.param(
            term(
                term(pod(POD_LABEL), AFF, "In", "service", "region", ["foo"]),
                AFF,
                "In",
                "service",
                "node",
                ["{{.bad-value.}}"],
            ),
            id="second-term-invalid",
        ),
    ],
)
def test_invalid_label_value_fails_pre_filter_with_upstream_message(incoming: PodBuilder) -> None:
    """A term apimachinery cannot parse rejects the pod at PreFilter, worded exactly as NewPodInfo's error."""
    pl, infos = setup(NODE1)
    _, st = pl.pre_filter(CycleState(), incoming.info(), infos)
    assert st is not None and st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert st.message() == BAD_VALUE_MESSAGE


def test_several_broken_kinds_aggregate_like_new_pod_info() -> None:
    """Errors of several term lists are joined as an aggregate, in NewPodInfo's order."""
    incoming = term(term(pod(), ANTI, "In", "a", "zone", ["{{x}}"]), AFF, "Bogus", "a", "zone", ["x"])
    pl, infos = setup(NODE1)
    _, st = pl.pre_filter(CycleState(), incoming.info(), infos)
    assert st is not None
    assert st.message() == (
        'parsing pod: [requiredAffinityTerms: "Bogus" is not a valid label selector operator, '
        'requiredAntiAffinityTerms: values[0][a]: Invalid value: "{{x}}": a valid label must be an empty string or '
        "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character "
        "(e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
        "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')]"
    )


# ---------------------------------------------------------------------------------------------------------
# filtering_test.go: TestRequiredAffinityMultipleNodes

CHINA = {"region": "China"}
CHINA_AZ1 = {"region": "China", "az": "az1"}
INDIA = {"region": "India"}
R1Z1A = {"region": "r1", "zone": "z1", "hostname": "nodeA"}
R1Z1B = {"region": "r1", "zone": "z1", "hostname": "nodeB"}
R1Z2B = {"region": "r1", "zone": "z2", "hostname": "nodeB"}

MULTI_NODE_CASES = [
    pytest.param(
        term(pod(), AFF, "In", "foo", "region", ["bar"]),
        [pod({"foo": "bar"}, node="node1")],
        {"node1": CHINA, "node2": CHINA_AZ1, "node3": INDIA},
        ["ok", "ok", "aff"],
        id="same-domain-as-a-matching-pod",
    ),
    pytest.param(
        term(
            term(pod({"foo": "bar", "service": "securityscan"}), AFF, "In", "foo", "zone", ["bar"]),
            AFF,
            "In",
            "service",
            "zone",
            ["securityscan"],
        ),
        [pod({"foo": "bar"}, node="nodeA")],
        {"nodeA": {"zone": "az1", "hostname": "h1"}, "nodeB": {"zone": "az2", "hostname": "h2"}},
        ["ok", "ok"],
        id="first-pod-of-a-group-goes-anywhere",
    ),
    pytest.param(
        term(
            term(pod({"foo": "bar", "service": "securityscan"}), AFF, "In", "foo", "zone", ["bar"]),
            AFF,
            "In",
            "service",
            "zone",
            ["securityscan"],
        ),
        [pod({"foo": "bar"}, node="nodeA")],
        {"nodeA": {"zoneLabel": "az1", "hostname": "h1"}, "nodeB": {"zoneLabel": "az2", "hostname": "h2"}},
        ["aff", "aff"],
        id="first-pod-needs-the-topology-keys",
    ),
    pytest.param(
        term(pod(), ANTI, "In", "foo", "region", ["abc"]),
        [pod({"foo": "abc"}, node="nodeA")],
        {"nodeA": {"region": "r1", "hostname": "nodeA"}, "nodeB": {"region": "r1", "hostname": "nodeB"}},
        ["anti", "anti"],
        id="anti-affinity-whole-domain",
    ),
    pytest.param(
        term(term(pod(), ANTI, "In", "foo", "region", ["abc"]), ANTI, "In", "service", "zone", ["securityscan"]),
        [pod({"foo": "abc", "service": "securityscan"}, node="nodeA")],
        {
            "nodeA": {"region": "r1", "zone": "z1", "hostname": "nodeA"},
            "nodeB": {"region": "r1", "zone": "z2", "hostname": "nodeB"},
        },
        ["anti", "anti"],
        id="anti-affinity-any-term",
    ),
    pytest.param(
        term(pod(), ANTI, "In", "foo", "region", ["abc"]),
        [pod({"foo": "abc"}, node="nodeA")],
        {"nodeA": CHINA, "nodeB": CHINA_AZ1, "nodeC": INDIA},
        ["anti", "anti", "ok"],
        id="anti-affinity-other-region",
    ),
    pytest.param(
        term(pod({"foo": "123"}, ns="NS1"), ANTI, "In", "foo", "region", ["bar"]),
        [
            pod({"foo": "bar"}, ns="NS1", node="nodeA"),
            term(pod(ns="NS2", node="nodeC"), ANTI, "In", "foo", "region", ["123"]),
        ],
        {"nodeA": CHINA, "nodeB": CHINA_AZ1, "nodeC": INDIA},
        ["anti", "anti", "ok"],
        id="existing-anti-affinity-other-namespace",
    ),
    pytest.param(
        pod({"foo": ""}),
        [term(pod(node="nodeA"), ANTI, "Exists", "foo", "invalid-node-label")],
        {"nodeA": R1Z1A, "nodeB": R1Z1B},
        ["skip"],
        id="existing-term-with-missing-topology-key",
    ),
    pytest.param(
        term(pod(node="nodeA"), ANTI, "Exists", "foo", "invalid-node-label"),
        [pod({"foo": ""}, node="nodeA")],
        {"nodeA": R1Z1A, "nodeB": R1Z1B},
        ["ok", "ok"],
        id="incoming-term-with-missing-topology-key",
    ),
    pytest.param(
        pod({"foo": "", "bar": ""}),
        [
            term(pod(node="nodeA"), ANTI, "Exists", "foo", "zone"),
            term(pod(node="nodeA"), ANTI, "Exists", "bar", "region"),
        ],
        {"nodeA": R1Z1A, "nodeB": R1Z2B},
        ["existing", "existing"],
        id="existing-terms-each-violated",
    ),
    pytest.param(
        term(term(pod(), ANTI, "Exists", "foo", "zone"), ANTI, "Exists", "bar", "region"),
        [pod({"foo": ""}, node="nodeA"), pod({"bar": ""}, node="nodeB")],
        {"nodeA": R1Z1A, "nodeB": R1Z2B},
        ["anti", "anti"],
        id="incoming-terms-one-violated-per-node",
    ),
    pytest.param(
        pod({"foo": "", "bar": ""}),
        [term(term(pod(node="nodeA"), ANTI, "Exists", "foo", "invalid-node-label"), ANTI, "Exists", "bar", "zone")],
        {"nodeA": R1Z1A, "nodeB": R1Z2B},
        ["existing", "ok"],
        id="existing-term-needs-selector-and-key",
    ),
    pytest.param(
        term(term(pod(), ANTI, "Exists", "foo", "invalid-node-label"), ANTI, "Exists", "bar", "zone"),
        [pod({"foo": "", "bar": ""}, node="nodeA")],
        {"nodeA": R1Z1A, "nodeB": R1Z2B},
        ["anti", "ok"],
        id="incoming-term-needs-selector-and-key",
    ),
    pytest.param(
        pod({"foo": "", "bar": ""}),
        [term(term(pod(node="nodeA"), ANTI, "Exists", "foo", "region"), ANTI, "Exists", "bar", "zone")],
        {"nodeA": R1Z1A, "nodeB": R1Z2B},
        ["existing", "existing"],
        id="existing-terms-all-keys-valid",
    ),
    pytest.param(
        term(term(pod(), ANTI, "Exists", "foo", "region"), ANTI, "Exists", "bar", "zone"),
        [pod({"foo": "", "bar": ""}, node="nodeA")],
        {"nodeA": R1Z1A, "nodeB": R1Z2B},
        ["anti", "anti"],
        id="incoming-terms-all-keys-valid",
    ),
    pytest.param(
        pod({"foo": "", "bar": ""}),
        [
            term(term(pod(node="nodeA"), ANTI, "Exists", "foo", "zone"), ANTI, "Exists", "labelA", "zone"),
            term(term(pod(node="nodeB"), ANTI, "Exists", "bar", "zone"), ANTI, "Exists", "labelB", "zone"),
        ],
        {"nodeA": R1Z1A, "nodeB": R1Z2B, "nodeC": {"region": "r1", "zone": "z3", "hostname": "nodeC"}},
        ["existing", "existing", "ok"],
        id="existing-pods-leave-only-node-c",
    ),
    pytest.param(
        term(term(pod(), AFF, "Exists", "foo", "region"), AFF, "Exists", "bar", "zone"),
        [pod({"foo": "", "bar": ""}, node="nodeA")],
        {"nodeA": R1Z1A, "nodeB": R1Z1B},
        ["ok", "ok"],
        id="affinity-all-terms-on-one-pod",
    ),
    pytest.param(
        term(term(pod(), AFF, "Exists", "foo", "region"), AFF, "Exists", "bar", "zone"),
        [pod({"foo": ""}, node="nodeA"), pod({"bar": ""}, node="nodeB")],
        {"nodeA": R1Z1A, "nodeB": R1Z2B},
        ["aff", "aff"],
        id="affinity-terms-split-over-pods",
    ),
    pytest.param(
        term(pod(), AFF, "Exists", "foo", HOST),
        [pod({"foo": ""}, node="nodeA")],
        {"nodeA": {HOST: "nodeA"}, "nodeB": {HOST: "nodeB"}},
        ["ok", "aff"],
        id="hostname-affinity",
    ),
    pytest.param(
        term(pod(), ANTI, "Exists", "foo", HOST),
        [pod({"foo": ""}, node="nodeA")],
        {"nodeA": {HOST: "nodeA"}, "nodeB": {HOST: "nodeB"}},
        ["anti", "ok"],
        id="hostname-anti-affinity",
    ),
]


@pytest.mark.parametrize(("incoming", "pods", "nodes", "want"), MULTI_NODE_CASES)
def test_required_affinity_multiple_nodes(
    incoming: PodBuilder, pods: list[PodBuilder], nodes: dict[str, dict[str, str]], want: list[str]
) -> None:
    """TestRequiredAffinityMultipleNodes: one verdict per node, in node order."""
    assert run_filter(incoming, nodes, pods, namespaces=[make_namespace("NS1")]) == want


# ---------------------------------------------------------------------------------------------------------
# filtering_test.go: counts (TestGetTPMapMatchingIncomingAffinityAntiAffinity, TestPreFilterStateAddRemovePod)


def _state(incoming: PodInfo, nodes: Mapping[str, Mapping[str, str]], pods: Sequence[PodBuilder]) -> PreFilterState:
    pl, infos = setup(nodes, pods)
    state = CycleState()
    _, st = pl.pre_filter(state, incoming, infos)
    assert st is None, st
    s: PreFilterState = state[PRE_FILTER_STATE_KEY]
    return s


def _labelled(*keys: str) -> PodBuilder:
    return pod(dict.fromkeys(keys, ""), node="nodeA", name="normal")


NODE_A = {"nodeA": {HOST: "nodeA"}}


@pytest.mark.parametrize(
    ("incoming", "existing", "want_affinity", "want_anti"),
    [
        pytest.param(
            term(term(pod(), AFF, "Exists", "aaa", HOST), ANTI, "Exists", "aaa", HOST),
            [_labelled("bbb")],
            {},
            {},
            id="no-pod-matches",
        ),
        pytest.param(
            term(term(pod(), AFF, "Exists", "aaa", HOST), ANTI, "Exists", "aaa", HOST),
            [_labelled("aaa")],
            {(HOST, "nodeA"): 1},
            {(HOST, "nodeA"): 1},
            id="single-term",
        ),
        pytest.param(
            term(
                term(term(pod(), AFF, "Exists", "aaa", HOST), AFF, "Exists", "bbb", HOST), ANTI, "Exists", "aaa", HOST
            ),
            [_labelled("aaa", "bbb")],
            {(HOST, "nodeA"): 2},
            {(HOST, "nodeA"): 1},
            id="one-count-per-term",
        ),
        pytest.param(
            term(
                term(
                    term(term(pod(), AFF, "Exists", "aaa", HOST), AFF, "Exists", "bbb", HOST),
                    ANTI,
                    "Exists",
                    "aaa",
                    HOST,
                ),
                ANTI,
                "Exists",
                "bbb",
                HOST,
            ),
            [_labelled("aaa")],
            {},
            {(HOST, "nodeA"): 1},
            id="affinity-needs-all-terms-anti-any",
        ),
        pytest.param(
            term(
                term(
                    term(term(pod(), AFF, "Exists", "aaa", HOST), AFF, "Exists", "ccc", HOST),
                    ANTI,
                    "Exists",
                    "aaa",
                    HOST,
                ),
                ANTI,
                "Exists",
                "ccc",
                HOST,
            ),
            [_labelled("aaa", "bbb")],
            {},
            {(HOST, "nodeA"): 1},
            id="partial-match-case-1",
        ),
        pytest.param(
            term(
                term(
                    term(term(pod(), AFF, "Exists", "aaa", HOST), AFF, "Exists", "bbb", HOST),
                    ANTI,
                    "Exists",
                    "aaa",
                    HOST,
                ),
                ANTI,
                "Exists",
                "bbb",
                HOST,
            ),
            [_labelled("bbb")],
            {},
            {(HOST, "nodeA"): 1},
            id="partial-match-case-2",
        ),
    ],
)
def test_incoming_affinity_anti_affinity_counts(
    incoming: PodBuilder, existing: list[PodBuilder], want_affinity: dict[Any, int], want_anti: dict[Any, int]
) -> None:
    """TestGetTPMapMatchingIncomingAffinityAntiAffinity: the two count maps PreFilter builds."""
    s = _state(incoming.info(), NODE_A, existing)
    assert s.affinity_counts.pairs() == want_affinity
    assert s.anti_affinity_counts.pairs() == want_anti


L1 = {"region": "r1", "zone": "z11"}
L2 = {"region": "r1", "zone": "z12"}
L3 = {"region": "r2", "zone": "z21"}
ABC_NODES = {"nodeA": L1, "nodeB": L2, "nodeC": L3}
FOO_BAR = {"foo": "bar"}


def _anti_foo_bar(b: PodBuilder) -> PodBuilder:
    return term(b, ANTI, "In", "foo", "region", ["bar"])


def _complex(b: PodBuilder, kind: str) -> PodBuilder:
    b = term(b, kind, "In", "foo", "region", ["bar", "buzz"])
    return term(b, kind, "NotIn", "service", "zone", ["bar", "security", "test"])


ADD_REMOVE_CASES = [
    pytest.param(
        _anti_foo_bar(pod(FOO_BAR, name="pending")),
        [pod(FOO_BAR, node="nodeA", name="p1"), _anti_foo_bar(pod(node="nodeC", name="p2"))],
        _anti_foo_bar(pod(FOO_BAR, node="nodeB", name="addedPod")),
        ABC_NODES,
        {("region", "r1"): 2},
        {},
        id="anti-affinity",
    ),
    pytest.param(
        _complex(pod(FOO_BAR, name="pending"), ANTI),
        [pod(FOO_BAR, node="nodeA", name="p1"), _anti_foo_bar(pod(node="nodeC", name="p2"))],
        _complex(pod(FOO_BAR, node="nodeA", name="addedPod"), ANTI),
        ABC_NODES,
        {("region", "r1"): 2, ("zone", "z11"): 2, ("zone", "z21"): 1},
        {},
        id="anti-affinity-complex",
    ),
    pytest.param(
        _complex(pod(FOO_BAR, name="pending"), AFF),
        [pod(FOO_BAR, node="nodeA", name="p1"), _complex(_anti_foo_bar(pod(node="nodeC", name="p2")), AFF)],
        _complex(pod(FOO_BAR, node="nodeA", name="addedPod"), ANTI),
        ABC_NODES,
        {},
        {("region", "r1"): 2, ("zone", "z11"): 2},
        id="affinity-and-anti-affinity",
    ),
    pytest.param(
        _anti_foo_bar(pod(FOO_BAR, name="pending")),
        [pod(FOO_BAR, node="nodeA", name="p1")],
        term(_anti_foo_bar(pod(FOO_BAR, node="nodeA", name="addedPod")), ANTI, "In", "foo", HOST, ["bar"]),
        {"nodeA": {**L1, HOST: "nodeA"}, "nodeB": {**L2, HOST: "nodeB"}},
        {("region", "r1"): 2},
        {},
        id="anti-affinity-hostname-and-region",
    ),
]


def _maps(s: PreFilterState) -> tuple[dict[Any, int], dict[Any, int], dict[Any, int]]:
    return s.existing_anti_affinity_counts.pairs(), s.affinity_counts.pairs(), s.anti_affinity_counts.pairs()


@pytest.mark.parametrize(("pending", "existing", "added", "nodes", "want_anti", "want_aff"), ADD_REMOVE_CASES)
def test_add_pod_and_remove_pod_equal_recomputing(
    pending: PodBuilder,
    existing: list[PodBuilder],
    added: PodBuilder,
    nodes: dict[str, dict[str, str]],
    want_anti: dict[Any, int],
    want_aff: dict[Any, int],
) -> None:
    """TestPreFilterStateAddRemovePod: AddPod gives the state PreFilter computes with the pod present,
    RemovePod gives back the state without it; all three maps are updated."""
    incoming = pending.info()
    added_info = added.info()
    with_added = _state(incoming, nodes, [*existing, added])
    pl, infos = setup(nodes, existing)
    state = CycleState()
    assert pl.pre_filter(state, incoming, infos)[1] is None
    before: PreFilterState = state[PRE_FILTER_STATE_KEY]
    original = _maps(before.clone())
    node = next(i for i in infos if i.name == added_info.node_name)
    ext = pl.pre_filter_extensions()
    assert ext.add_pod(state, incoming, added_info, node) is None
    after: PreFilterState = state[PRE_FILTER_STATE_KEY]
    assert after.anti_affinity_counts.pairs() == want_anti
    assert after.affinity_counts.pairs() == want_aff
    assert _maps(after) == _maps(with_added)
    assert ext.remove_pod(state, incoming, added_info, node) is None
    assert _maps(after) == original
    # Pure RemovePod: start from the state with the pod, remove it.
    pl2, infos2 = setup(nodes, [*existing, added])
    state2 = CycleState()
    assert pl2.pre_filter(state2, incoming, infos2)[1] is None
    node2 = next(i for i in infos2 if i.name == added_info.node_name)
    assert pl2.pre_filter_extensions().remove_pod(state2, incoming, added_info, node2) is None
    assert _maps(state2[PRE_FILTER_STATE_KEY]) == original


def test_add_pod_changes_filter_verdict_and_clone_is_independent() -> None:
    """A nominated pod added through AddPod makes Filter reject its domain; the clone taken before does not."""
    incoming = _anti_foo_bar(pod(FOO_BAR)).info()
    pl, infos = setup(ABC_NODES, [_anti_foo_bar(pod(node="nodeC"))])
    state = CycleState()
    assert pl.pre_filter(state, incoming, infos)[1] is None
    before: PreFilterState = state[PRE_FILTER_STATE_KEY].clone()
    # nodeC's pod keeps foo=bar pods out of region r2.
    assert [verdict(pl.filter(state, incoming, n)) for n in infos] == ["ok", "ok", "existing"]
    assert pl.add_pod(state, incoming, pod(FOO_BAR, node="nodeA").info(), infos[0]) is None
    assert [verdict(pl.filter(state, incoming, n)) for n in infos] == ["anti", "anti", "existing"]
    assert [verdict(before.check(n.node.labels)) for n in infos if n.node] == ["ok", "ok", "existing"]


def test_extensions_without_pre_filter_state_report_an_error() -> None:
    """Like upstream's TestPreFilterDisabled: no state means an Error, never a silent pass."""
    pl, infos = setup(NODE1)
    p = pod().info()
    for st in (pl.filter(CycleState(), p, infos[0]), pl.add_pod(CycleState(), p, p, infos[0])):
        assert st is not None and st.code == Code.ERROR
        assert 'error reading "PreFilterInterPodAffinity" from cycleState' in st.message()


# ---------------------------------------------------------------------------------------------------------
# scoring_test.go: TestPreferredAffinity


def _weighted(
    kind: str,
    weight: int,
    topo: str,
    *exprs: JSON,
    namespaces: list[str] | None = None,
    ns_selector: JSON | None = None,
) -> JSON:
    t: JSON = {"labelSelector": {"matchExpressions": list(exprs)}, "topologyKey": topo}
    if namespaces is not None:
        t["namespaces"] = namespaces
    if ns_selector is not None:
        t["namespaceSelector"] = ns_selector
    return {kind: {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": weight, "podAffinityTerm": t}]}}


def _merge(*parts: JSON) -> JSON:
    out: JSON = {}
    for p in parts:
        for kind, section in p.items():
            out.setdefault(kind, {})
            for field, terms in section.items():
                out[kind].setdefault(field, []).extend(terms)
    return out


S1, S2 = {"security": "S1"}, {"security": "S2"}
STAY_S1_REGION = _weighted(AFF, 5, "region", expr("security", "In", ["S1"]))
STAY_S2_REGION = _weighted(AFF, 6, "region", expr("security", "In", ["S2"]))
AFFINITY3 = _merge(
    _weighted(AFF, 8, "region", expr("security", "NotIn", ["S1"]), expr("security", "In", ["S2"])),
    _weighted(AFF, 2, "region", expr("security", "Exists"), expr("wrongkey", "DoesNotExist")),
)
HARD_AFFINITY = {
    AFF: {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {"matchExpressions": [expr("security", "In", ["S1", "value2"])]},
                "topologyKey": "region",
            },
            {
                "labelSelector": {"matchExpressions": [expr("security", "Exists"), expr("wrongkey", "DoesNotExist")]},
                "topologyKey": "region",
            },
        ]
    }
}
AWAY_S1_AZ = _weighted(ANTI, 5, "az", expr("security", "In", ["S1"]))
AWAY_S2_AZ = _weighted(ANTI, 5, "az", expr("security", "In", ["S2"]))
STAY_S1_REGION_AWAY_S2_AZ = _merge(
    _weighted(AFF, 8, "region", expr("security", "In", ["S1"])),
    _weighted(ANTI, 5, "az", expr("security", "In", ["S2"])),
)
AFFINITY_NS_SELECTOR = _weighted(
    AFF, 5, "region", expr("security", "In", ["S1"]), namespaces=["subteam2.team2"], ns_selector=TEAM1
)
ANTI_AFFINITY_NS_SELECTOR = _weighted(
    ANTI, 5, "region", expr("security", "In", ["S1"]), namespaces=["subteam2.team2"], ns_selector=TEAM1
)
NOT_TEAM1 = {"matchExpressions": [expr("team", "NotIn", ["team1"])]}
AFFINITY_NEGATIVE_NS_SELECTOR = _weighted(AFF, 5, "region", expr("security", "In", ["S1"]), ns_selector=NOT_TEAM1)
ANTI_AFFINITY_NEGATIVE_NS_SELECTOR = _weighted(ANTI, 5, "region", expr("security", "In", ["S1"]), ns_selector=NOT_TEAM1)
INVALID_AFFINITY = _weighted(AFF, 8, "region", expr("security", "In", ["{{.bad-value.}}"]))
INVALID_ANTI_AFFINITY = _weighted(ANTI, 5, "az", expr("security", "In", ["{{.bad-value.}}"]))

AZ1, AZ2 = {"az": "az1"}, {"az": "az2"}


def spod(
    labels: Mapping[str, str] | None = None, affinity: JSON | None = None, node: str | None = None, ns: str = "default"
) -> PodBuilder:
    """A pod for the scoring tables: labels, a raw affinity, a node."""
    b = pod(labels, ns=ns, node=node)
    if affinity is not None:
        b._spec["affinity"] = dict(affinity)
    return b


def run_score(
    incoming: PodBuilder, pods: Sequence[PodBuilder], nodes: Mapping[str, Mapping[str, str]], args: Args | None = None
) -> tuple[Status | None, dict[str, int]]:
    """PreScore, Score (one by one and batched) and NormalizeScore, as the upstream scoring tests run them."""
    pl, infos = setup(nodes, pods, args=args or Args())
    scored = [i for i in infos if i.node is not None]
    state = CycleState()
    info = incoming.info()
    st = pl.pre_score(state, info, scored)
    if st is not None:
        return st, {}
    scores = pl.score_batch(state, info, scored)
    assert scores == [pl.score(state, info, n) for n in scored]
    assert pl.normalize_score(state, info, scores) is None
    return None, {n.name: s for n, s in zip(scored, scores, strict=True)}


N3 = {"node1": CHINA, "node2": INDIA, "node3": AZ1}
PREFERRED_CASES = [
    pytest.param(spod(S1), [], N3, "skip", id="nil-affinity-skips"),
    pytest.param(
        spod(S1, STAY_S1_REGION),
        [spod(S1, node="node1"), spod(S2, node="node2"), spod(S1, node="node3")],
        N3,
        {"node1": 100, "node2": 0, "node3": 0},
        id="affinity-matching-domain-scores-high",
    ),
    pytest.param(
        spod(None, STAY_S1_REGION),
        [spod(S1, node="node1")],
        {"node1": CHINA, "node2": CHINA_AZ1, "node3": INDIA},
        {"node1": 100, "node2": 100, "node3": 0},
        id="affinity-same-domain-same-score",
    ),
    pytest.param(
        spod(S1, STAY_S2_REGION),
        [
            spod(S2, node="node1"),
            spod(S2, node="node1"),
            spod(S2, node="node2"),
            spod(S2, node="node3"),
            spod(S2, node="node4"),
            spod(S2, node="node5"),
        ],
        {"node1": CHINA, "node2": INDIA, "node3": CHINA, "node4": CHINA, "node5": INDIA},
        {"node1": 100, "node2": 0, "node3": 100, "node4": 100, "node5": 0},
        id="affinity-more-matches-higher",
    ),
    pytest.param(
        spod(S1, AFFINITY3),
        [spod(S1, node="node1"), spod(S2, node="node2"), spod(S1, node="node3")],
        N3,
        {"node1": 20, "node2": 100, "node3": 0},
        id="affinity-operators-and-failures",
    ),
    pytest.param(
        spod(S2),
        [spod(S1, STAY_S1_REGION, "node1"), spod(S2, STAY_S2_REGION, "node2")],
        N3,
        {"node1": 0, "node2": 100, "node3": 0},
        id="affinity-symmetry-preferred",
    ),
    pytest.param(
        spod(S1, ns="subteam1.team1"),
        [spod(S1, AFFINITY_NS_SELECTOR, "node1"), spod(S2, STAY_S2_REGION, "node2")],
        N3,
        {"node1": 100, "node2": 0, "node3": 0},
        id="affinity-symmetry-namespace-selector",
    ),
    pytest.param(
        spod(S1, ns="subteam1.team1"),
        [spod(S1, ANTI_AFFINITY_NS_SELECTOR, "node1"), spod(S2, STAY_S2_REGION, "node2")],
        N3,
        {"node1": 0, "node2": 100, "node3": 100},
        id="anti-affinity-symmetry-namespace-selector",
    ),
    pytest.param(
        spod(S1),
        [spod(S1, HARD_AFFINITY, "node1"), spod(S2, HARD_AFFINITY, "node2")],
        N3,
        {"node1": 100, "node2": 100, "node3": 0},
        id="affinity-symmetry-required",
    ),
    pytest.param(
        spod(S1, AWAY_S1_AZ),
        [spod(S1, node="node1"), spod(S2, node="node2")],
        {"node1": AZ1, "node2": CHINA},
        {"node1": 0, "node2": 100},
        id="anti-affinity-matching-pod-scores-low",
    ),
    pytest.param(
        spod(S1, AWAY_S1_AZ),
        [spod(S1, node="node1"), spod(S1, node="node2")],
        {"node1": AZ1, "node2": CHINA},
        {"node1": 0, "node2": 100},
        id="anti-affinity-topology-key-missing-scores-high",
    ),
    pytest.param(
        spod(S1, AWAY_S1_AZ),
        [spod(S1, node="node1"), spod(S1, node="node1"), spod(S2, node="node2")],
        {"node1": AZ1, "node2": INDIA},
        {"node1": 0, "node2": 100},
        id="anti-affinity-more-matches-lower",
    ),
    pytest.param(
        spod(S2),
        [spod(S1, AWAY_S2_AZ, "node1"), spod(S2, AWAY_S1_AZ, "node2")],
        {"node1": AZ1, "node2": AZ2},
        {"node1": 0, "node2": 100},
        id="anti-affinity-symmetry",
    ),
    pytest.param(
        spod(S1, STAY_S1_REGION_AWAY_S2_AZ),
        [spod(S1, node="node1"), spod(S1, node="node2")],
        {"node1": CHINA, "node2": AZ1},
        {"node1": 100, "node2": 0},
        id="affinity-and-anti-affinity",
    ),
    pytest.param(
        spod(S1, STAY_S1_REGION_AWAY_S2_AZ),
        [
            spod(S1, node="node1"),
            spod(S1, node="node1"),
            spod(S1, node="node2"),
            spod(S1, node="node3"),
            spod(S1, node="node3"),
            spod(S1, node="node4"),
            spod(S1, node="node5"),
        ],
        {"node1": CHINA_AZ1, "node2": INDIA, "node3": CHINA, "node4": CHINA, "node5": INDIA},
        {"node1": 100, "node2": 0, "node3": 100, "node4": 100, "node5": 0},
        id="affinity-and-anti-affinity-same-labels",
    ),
    pytest.param(
        spod(S1, STAY_S1_REGION_AWAY_S2_AZ),
        [
            spod(S1, node="node1"),
            spod(S2, node="node2"),
            spod(None, STAY_S1_REGION_AWAY_S2_AZ, "node3"),
            spod(None, AWAY_S1_AZ, "node4"),
        ],
        {"node1": CHINA, "node2": AZ1, "node3": INDIA, "node4": AZ2},
        {"node1": 100, "node2": 0, "node3": 100, "node4": 0},
        id="affinity-anti-affinity-and-symmetry",
    ),
    pytest.param(
        spod(S1),
        [spod(S1, node="node1"), spod(None, STAY_S1_REGION_AWAY_S2_AZ, "node2")],
        {"node1": CHINA, "node2": CHINA},
        {"node1": 0, "node2": 0},
        id="partial-domain-without-affinity-pods",
    ),
    pytest.param(
        spod(None, INVALID_AFFINITY),
        [],
        {"node1": CHINA, "node2": CHINA},
        "error",
        id="invalid-affinity-fails-pre-score",
    ),
    pytest.param(
        spod(None, INVALID_ANTI_AFFINITY),
        [],
        {"node1": CHINA, "node2": CHINA},
        "error",
        id="invalid-anti-affinity-fails-pre-score",
    ),
    pytest.param(
        spod(S1, AFFINITY_NS_SELECTOR, ns="subteam1.team1"),
        [
            spod(S1, node="node1", ns="subteam1.team1"),
            spod(S1, node="node1", ns="subteam1.team1"),
            spod(S1, node="node1", ns="subteam1.team2"),
            spod(S1, node="node2", ns="subteam2.team1"),
        ],
        {"node1": CHINA, "node2": INDIA},
        {"node1": 100, "node2": 0},
        id="affinity-pods-matching-namespace-selector",
    ),
    pytest.param(
        spod(S1, AFFINITY_NS_SELECTOR, ns="subteam1.team1"),
        [
            spod(S1, node="node1", ns="subteam1.team1"),
            spod(S1, node="node1", ns="subteam1.team1"),
            spod(S1, node="node1", ns="subteam2.team2"),
            spod(S1, node="node2", ns="subteam2.team1"),
        ],
        {"node1": CHINA, "node2": INDIA},
        {"node1": 100, "node2": 0},
        id="affinity-pods-matching-namespace-selector-and-namespaces",
    ),
    pytest.param(
        spod(S1, ANTI_AFFINITY_NS_SELECTOR, ns="subteam1.team1"),
        [
            spod(S1, node="node1", ns="subteam1.team1"),
            spod(S1, node="node1", ns="subteam1.team1"),
            spod(S1, node="node1", ns="subteam1.team2"),
            spod(S1, node="node2", ns="subteam2.team1"),
        ],
        {"node1": CHINA, "node2": INDIA},
        {"node1": 0, "node2": 100},
        id="anti-affinity-pods-matching-namespace-selector",
    ),
    pytest.param(
        spod(S1, ANTI_AFFINITY_NS_SELECTOR, ns="subteam1.team1"),
        [
            spod(S1, node="node1", ns="subteam1.team1"),
            spod(S1, node="node1", ns="subteam1.team1"),
            spod(S1, node="node1", ns="subteam2.team2"),
            spod(S1, node="node2", ns="subteam2.team1"),
        ],
        {"node1": CHINA, "node2": INDIA},
        {"node1": 0, "node2": 100},
        id="anti-affinity-pods-matching-namespace-selector-and-namespaces",
    ),
    pytest.param(
        spod(S1, AFFINITY_NEGATIVE_NS_SELECTOR, ns="subteam1.team1"),
        [
            spod(S1, node="node1", ns="subteam1.team1"),
            spod(S1, node="node1", ns="subteam1.team1"),
            spod(S1, node="node2", ns="subteam1.team2"),
        ],
        {"node1": CHINA, "node2": INDIA},
        {"node1": 0, "node2": 100},
        id="affinity-negative-namespace-selector",
    ),
    pytest.param(
        spod(S1, ANTI_AFFINITY_NEGATIVE_NS_SELECTOR, ns="subteam1.team1"),
        [
            spod(S1, node="node1", ns="subteam1.team1"),
            spod(S1, node="node1", ns="subteam1.team1"),
            spod(S1, node="node2", ns="subteam1.team2"),
        ],
        {"node1": CHINA, "node2": INDIA},
        {"node1": 100, "node2": 0},
        id="anti-affinity-negative-namespace-selector",
    ),
    pytest.param(
        spod(S2),
        [spod(S1, STAY_S1_REGION_AWAY_S2_AZ, "node1"), spod(S2, STAY_S2_REGION, "node2")],
        {"node1": CHINA, "node2": INDIA},
        {"node1": 0, "node2": 100},
        id="do-not-ignore-preferred-terms-of-existing-pods",
    ),
    pytest.param(spod(S2), [], {}, "skip", id="no-nodes-to-score"),
]


@pytest.mark.parametrize(("incoming", "pods", "nodes", "want"), PREFERRED_CASES)
def test_preferred_affinity(
    incoming: PodBuilder, pods: list[PodBuilder], nodes: dict[str, dict[str, str]], want: str | dict[str, int]
) -> None:
    """TestPreferredAffinity: normalized scores per node, or the PreScore status."""
    st, scores = run_score(incoming, pods, nodes)
    if want == "skip":
        assert st is not None and st.code == Code.SKIP
    elif want == "error":
        assert st is not None and st.code == Code.ERROR
        assert 'Invalid value: "{{.bad-value.}}"' in st.message()
        assert st.message().startswith("failed to parse pod: preferred")
    else:
        assert st is None
        assert scores == want


def test_ignore_preferred_terms_of_existing_pods_skips() -> None:
    """ignorePreferredTermsOfExistingPods: a pod without preferred terms skips scoring entirely."""
    pods = [spod(S1, STAY_S1_REGION_AWAY_S2_AZ, "node1"), spod(S2, STAY_S2_REGION, "node2")]
    st, _ = run_score(
        spod(S2), pods, {"node1": CHINA, "node2": INDIA}, Args(ignore_preferred_terms_of_existing_pods=True)
    )
    assert st is not None and st.code == Code.SKIP
    # With preferred terms of its own the pod is scored, existing pods' preferred terms included.
    st, scores = run_score(
        spod(S2, STAY_S1_REGION),
        pods,
        {"node1": CHINA, "node2": INDIA},
        Args(ignore_preferred_terms_of_existing_pods=True),
    )
    assert st is None and scores == {"node1": 0, "node2": 100}


# scoring_test.go: TestPreferredAffinityWithHardPodAffinitySymmetricWeight
HARD_POD_AFFINITY = {
    AFF: {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {"matchExpressions": [expr("service", "In", ["S1"])]},
                "namespaces": ["default", "subteam2.team2"],
                "namespaceSelector": TEAM1,
                "topologyKey": "region",
            }
        ]
    }
}


@pytest.mark.parametrize(
    ("ns", "weight", "want"),
    [
        pytest.param("default", 1, {"node1": 100, "node2": 100, "node3": 0}, id="default-weight"),
        pytest.param("default", 0, "skip", id="zero-weight"),
        pytest.param("subteam1.team2", 1, "skip", id="no-matching-namespace"),
        pytest.param("subteam1.team1", 1, {"node1": 100, "node2": 100, "node3": 0}, id="matching-namespace-selector"),
        pytest.param("subteam2.team2", 1, {"node1": 100, "node2": 100, "node3": 0}, id="matching-namespaces"),
    ],
)
def test_hard_pod_affinity_symmetric_weight(ns: str, weight: int, want: str | dict[str, int]) -> None:
    """Existing pods' required affinity counts hardPodAffinityWeight for the pods it selects."""
    pods = [spod(None, HARD_POD_AFFINITY, "node1"), spod(None, HARD_POD_AFFINITY, "node2")]
    st, scores = run_score(spod({"service": "S1"}, ns=ns), pods, N3, Args(hard_pod_affinity_weight=weight))
    if want == "skip":
        assert st is not None and st.code == Code.SKIP
    else:
        assert st is None and scores == want


def test_raw_scores_before_normalization() -> None:
    """Score is the sum of the node's domains (negative for anti-affinity), hard weight included."""
    pl, infos = setup(
        {"n1": {"zone": "a", "rack": "r1"}, "n2": {"zone": "a", "rack": "r2"}, "n3": {"zone": "b"}},
        [
            spod({"app": "db"}, node="n1"),
            spod({"app": "cache"}, node="n3"),
            spod(
                None,
                {
                    AFF: {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "rack"}
                        ]
                    }
                },
                "n2",
            ),
        ],
        args=Args(hard_pod_affinity_weight=7),
    )
    incoming = spod(
        {"app": "web"},
        _merge(
            _weighted(AFF, 10, "zone", expr("app", "In", ["db"])),
            _weighted(ANTI, 3, "zone", expr("app", "In", ["cache"])),
        ),
    ).info()
    state = CycleState()
    assert pl.pre_score(state, incoming, infos) is None
    raw = pl.score_batch(state, incoming, infos)
    assert raw == [10, 17, -3]
    assert pl.normalize_score(state, incoming, raw) is None
    assert raw == [65, 100, 0]  # int(100 * (s - min) / (max - min)), truncated


# ---------------------------------------------------------------------------------------------------------
# Terms, namespaces


def test_terms_are_parsed_once_per_pod() -> None:
    """pod_terms caches in PodInfo.derived, shared by the assumed copy (with caches on, whatever the env says)."""
    info = term(pod(), ANTI, "Exists", "app", HOST).info()
    with caching.caches_enabled():
        first = pod_terms(info)
        assert pod_terms(info) is first
        assert pod_terms(info.with_node("n1")) is first
    assert len(first.required_anti_affinity) == 1
    assert first.required_anti_affinity[0].namespaces == frozenset({"default"})


@pytest.mark.parametrize(
    ("namespaces", "ns_selector", "want_names", "want_everything", "want_nothing"),
    [
        pytest.param(None, None, {"default"}, False, True, id="neither-means-own-namespace"),
        pytest.param(["a", "b"], None, {"a", "b"}, False, True, id="namespaces-only"),
        pytest.param(None, {}, set(), True, False, id="empty-selector-means-all"),
        pytest.param(["a"], TEAM1, {"a"}, False, False, id="both"),
    ],
)
def test_term_namespaces(
    namespaces: list[str] | None,
    ns_selector: JSON | None,
    want_names: set[str],
    want_everything: bool,
    want_nothing: bool,
) -> None:
    """getNamespacesFromPodAffinityTerm and the namespaceSelector's nil-vs-{} meaning."""
    t = pod_terms(term(pod(), AFF, "Exists", "x", "zone", namespaces=namespaces, ns_selector=ns_selector).info())
    [parsed] = t.required_affinity
    assert parsed.namespaces == frozenset(want_names)
    assert parsed.namespace_selector.everything is want_everything
    assert parsed.namespace_selector.nothing is want_nothing


def test_incoming_namespace_selector_resolves_to_names_and_follows_namespace_changes() -> None:
    """The incoming pod's namespaceSelector becomes the names of matching Namespace objects, re-read when
    a Namespace changes."""
    incoming = term(pod(FOO_BAR), ANTI, "In", "foo", "zone", ["bar"], ns_selector=TEAM1).info()
    nodes = {"n1": {"zone": "z1"}, "n2": {"zone": "z2"}}
    pl, infos = setup(nodes, [pod(FOO_BAR, ns="other", node="n1")], namespaces=[make_namespace("other")])
    state = CycleState()
    pl.pre_filter(state, incoming, infos)
    assert [verdict(pl.filter(state, incoming, n)) for n in infos] == ["ok", "ok"]
    # The namespace gains the label: the lister's generation changes and the selector now selects it.
    assert pl._handle is not None
    objects = pl._handle.objects
    objects.apply("Namespace", "MODIFIED", make_namespace("other", {"team": "team1"}))  # type: ignore[attr-defined]
    state = CycleState()
    pl.pre_filter(state, incoming, infos)
    assert [verdict(pl.filter(state, incoming, n)) for n in infos] == ["anti", "ok"]
    assert pl.resolve(pod_terms(incoming).required_anti_affinity[0]).namespaces == frozenset({"other"})


def test_existing_pod_namespace_selector_uses_incoming_namespace_labels() -> None:
    """An existing pod's namespaceSelector is matched against the incoming pod's namespace labels; a
    namespace without a Namespace object has no labels."""
    existing = term(pod(node="n1", ns="elsewhere"), ANTI, "Exists", "app", "zone", ns_selector=TEAM1)
    nodes = {"n1": {"zone": "z1"}}
    assert run_filter(pod({"app": "x"}, ns="subteam1.team1"), nodes, [existing]) == ["existing"]
    assert run_filter(pod({"app": "x"}, ns="subteam1.team2"), nodes, [existing]) == ["skip"]
    assert run_filter(pod({"app": "x"}, ns="no-such-namespace"), nodes, [existing]) == ["skip"]


def test_existing_pod_with_broken_terms_is_ignored_not_fatal() -> None:
    """An existing pod whose term cannot be parsed contributes nothing (NewPodInfo drops that list)."""
    broken = term(pod(node="n1"), ANTI, "In", "app", "zone", ["{{bad}}"])
    assert pod_terms(broken.info()).required_anti_affinity == ()
    assert run_filter(pod({"app": "{{bad}}"}), {"n1": {"zone": "z"}}, [broken]) == ["skip"]


# ---------------------------------------------------------------------------------------------------------
# Speed: memoized node contributions stay correct


def test_memoized_contributions_follow_pod_changes() -> None:
    """Sums are kept per pod shape and follow changed nodes: a later cycle sees the new pods."""
    nodes = {"n1": {HOST: "n1"}, "n2": {HOST: "n2"}}
    pl, infos = setup(nodes, [pod({"app": "web"}, node="n1")])
    incoming = term(pod({"app": "web"}), ANTI, "In", "app", HOST, ["web"]).info()
    for _ in range(2):  # the second cycle is served from the memo
        state = CycleState()
        pl.pre_filter(state, incoming, infos)
        assert pl.filter_batch(state, incoming, infos) == [pl.filter(state, incoming, n) for n in infos]
        assert [verdict(s) for s in pl.filter_batch(state, incoming, infos)] == ["anti", "ok"]
    infos[1] = infos[1].clone()  # a changed node is a new NodeInfo, as the cache puts it in the snapshot
    infos[1].add_pod(pod({"app": "web"}, node="n2").info())
    state = CycleState()
    pl.pre_filter(state, incoming, infos)
    assert [verdict(s) for s in pl.filter_batch(state, incoming, infos)] == ["anti", "anti"]
    # Another pod shape on the same nodes gets its own entries.
    other = term(pod({"app": "db"}), ANTI, "In", "app", HOST, ["db"]).info()
    state = CycleState()
    pl.pre_filter(state, other, infos)
    assert [verdict(s) for s in pl.filter_batch(state, other, infos)] == ["ok", "ok"]


def test_pre_score_uses_the_pre_filter_node_list() -> None:
    """PreScore reads the node list PreFilter got (the cycle's snapshot), not the handle's live one."""
    nodes = {"n1": CHINA, "n2": INDIA}
    pl, _ = setup(nodes, [])  # the handle's snapshot: two nodes without pods
    cycle_nodes = [
        NodeInfo("n1", NodeRecord("n1", labels=dict(CHINA))),
        NodeInfo("n2", NodeRecord("n2", labels=dict(INDIA))),
    ]
    cycle_nodes[0].add_pod(pod(S1, node="n1").info())
    incoming = spod(S1, STAY_S1_REGION).info()
    state = CycleState()
    pl.pre_filter(state, incoming, cycle_nodes)
    assert pl.pre_score(state, incoming, cycle_nodes) is None
    scores = pl.score_batch(state, incoming, cycle_nodes)
    pl.normalize_score(state, incoming, scores)
    assert scores == [100, 0]


# ---------------------------------------------------------------------------------------------------------
# Args, events, registry


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        pytest.param(None, Args(1, False), id="defaults"),
        pytest.param({}, Args(1, False), id="empty"),
        pytest.param({"hardPodAffinityWeight": None}, Args(1, False), id="null-weight-defaults"),
        pytest.param({"hardPodAffinityWeight": 0}, Args(0, False), id="zero-weight"),
        pytest.param(
            {"hardPodAffinityWeight": 100, "ignorePreferredTermsOfExistingPods": True},
            Args(100, True),
            id="max-and-ignore",
        ),
        pytest.param(
            {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "InterPodAffinityArgs"}, Args(), id="envelope"
        ),
    ],
)
def test_args_decode_and_default(raw: dict[str, Any] | None, want: Args) -> None:
    """InterPodAffinityArgs: hardPodAffinityWeight defaults to 1, ignorePreferredTermsOfExistingPods to false."""
    assert parse_args(raw) == want


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        pytest.param(
            {"hardPodAffinityWeight": -1},
            "hardPodAffinityWeight: Invalid value: -1: not in valid range [0, 100]",
            id="negative",
        ),
        pytest.param(
            {"hardPodAffinityWeight": 101},
            "hardPodAffinityWeight: Invalid value: 101: not in valid range [0, 100]",
            id="too-big",
        ),
        pytest.param(
            {"hardPodAffinityWeight": "1"},
            'hardPodAffinityWeight: must be an integer, got string "1"',
            id="string-weight",
        ),
        pytest.param(
            {"hardPodAffinityWeight": 2**31}, "hardPodAffinityWeight: out of range, got 2147483648", id="int32-overflow"
        ),
        pytest.param(
            {"ignorePreferredTermsOfExistingPods": "yes"},
            'ignorePreferredTermsOfExistingPods: must be a boolean, got string "yes"',
            id="string-bool",
        ),
        pytest.param({"hardPodAffinityWeigth": 1}, 'unknown field "hardPodAffinityWeigth"', id="unknown-field"),
        pytest.param(
            {"kind": "NodeAffinityArgs"},
            'kind: want args to be of type InterPodAffinityArgs, got "NodeAffinityArgs"',
            id="wrong-kind",
        ),
    ],
)
def test_args_errors_name_the_field(raw: dict[str, Any], message: str) -> None:
    """Strict decoding and upstream's validation text (ValidateInterPodAffinityArgs)."""
    with pytest.raises(ConfigError) as err:
        parse_args(raw)
    assert str(err.value) == message


def test_args_from_a_configuration_file() -> None:
    """pluginConfig args reach the plugin; a bad weight stops loading with the full field path."""

    def config(args: JSON) -> JSON:
        return {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": "s", "pluginConfig": [{"name": "InterPodAffinity", "args": args}]}],
        }

    cfg = load_config(
        config({"hardPodAffinityWeight": 5}), frozenset(REGISTRY), parse_plugin_args, implements=implements, env={}
    )
    assert cfg.profiles[0].plugin_config[NAME] == Args(5, False)
    with pytest.raises(ConfigError) as err:
        load_config(
            config({"hardPodAffinityWeight": 200}),
            frozenset(REGISTRY),
            parse_plugin_args,
            implements=implements,
            env={},
        )
    assert str(err.value) == (
        "profiles[0].pluginConfig[0].args: hardPodAffinityWeight: Invalid value: 200: not in valid range [0, 100]"
    )


def test_factory_accepts_raw_or_parsed_args() -> None:
    """The registry factory parses raw args and keeps parsed ones."""
    handle = StaticHandle()
    assert new({"hardPodAffinityWeight": 3}, handle).args == Args(3, False)
    assert new(Args(4, True), handle).args == Args(4, True)
    assert new(None, handle).args == Args()


def test_events_and_object_kinds() -> None:
    """v1.37 EventsToRegister, and the Namespace objects it reads."""
    pl = InterPodAffinity()
    events = pl.events_to_register()
    assert [(e.resource, e.action) for e in events] == [
        (ASSIGNED_POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE),
        (NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
    ]
    assert InterPodAffinity.object_kinds == ("Namespace",)


# ---------------------------------------------------------------------------------------------------------
# Explain


def _explain(
    incoming: PodBuilder, nodes: Mapping[str, Mapping[str, str]], pods: Sequence[PodBuilder]
) -> dict[str, list[str]]:
    pl, infos = setup(nodes, pods)
    info = incoming.info()
    state = CycleState()
    _, st = pl.pre_filter(state, info, infos)
    assert st is None
    return {n.name: [d.text for d in pl.explain_node(state, info, n, pl.filter(state, info, n))] for n in infos}


def test_explain_names_the_pods_behind_an_anti_affinity_rejection() -> None:
    """For anti-affinity: the matching pods (ns/name), their node, the term and the domain."""
    out = _explain(
        term(pod({"app": "web"}), ANTI, "In", "app", "zone", ["web"]),
        {"a1": {"zone": "a"}, "a2": {"zone": "a"}, "b1": {"zone": "b"}},
        [pod({"app": "web"}, node="a1", name="web-0"), pod({"app": "db"}, node="a2", name="db-0")],
    )
    line = (
        "pod default/web-0 on node a1 matches required anti-affinity term 0 (labelSelector app in (web) in "
        "namespaces default, topologyKey zone) in domain zone=a"
    )
    assert out == {"a1": [line], "a2": [line], "b1": []}


def test_explain_names_existing_pods_whose_anti_affinity_rejects() -> None:
    """For existing pods' anti-affinity: the pod carrying the term, its node and the domain."""
    out = _explain(
        pod({"app": "web"}),
        {"h1": {HOST: "h1"}, "h2": {HOST: "h2"}},
        [pod(node="h1", name="guard").pod_affinity_term(ANTI, HOST, {"app": "web"}, namespaces=["default", "prod"])],
    )
    assert out["h1"] == [
        "pod default/guard on node h1 has required anti-affinity term 0 (labelSelector app=web in namespaces "
        "default,prod, topologyKey kubernetes.io/hostname) that matches this pod, in domain kubernetes.io/hostname=h1"
    ]
    assert out["h2"] == []


def test_explain_says_which_affinity_term_found_no_pod() -> None:
    """For affinity: the term whose domain has no matching pod, or the missing topology label."""
    out = _explain(
        term(term(pod(), AFF, "In", "app", "zone", ["db"]), AFF, "Exists", "tier", "rack"),
        {"a": {"zone": "a", "rack": "r1"}, "b": {"zone": "b", "rack": "r2"}, "c": {"zone": "a"}},
        [pod({"app": "db", "tier": "x"}, node="a")],
    )
    assert out["a"] == []
    assert out["b"] == [
        "required pod affinity term 0 (labelSelector app in (db) in namespaces default, topologyKey zone): no pod "
        "matching all required affinity terms runs in domain zone=b",
        "required pod affinity term 1 (labelSelector tier in namespaces default, topologyKey rack): no pod matching "
        "all required affinity terms runs in domain rack=r2",
    ]
    assert out["c"] == [
        "required pod affinity term 1 (labelSelector tier in namespaces default, topologyKey rack): the node has no "
        "label rack"
    ]


def test_explain_first_pod_exception_not_applying() -> None:
    """When no pod matches anywhere and the pod does not match its own terms, the explanation says so."""
    out = _explain(term(pod({"app": "web"}), AFF, "In", "app", "zone", ["db"]), {"a": {"zone": "a"}}, [])
    assert out["a"][-1].startswith("no pod in the cluster matches all required affinity terms, and the pod does not")


def test_explain_detail_carries_structured_fields() -> None:
    """JSON output gets pod, node, term and domain as fields."""
    pl, infos = setup({"h1": {HOST: "h1"}}, [pod({"app": "web"}, node="h1", name="w")])
    info = term(pod({"app": "web"}), ANTI, "In", "app", HOST, ["web"]).info()
    state = CycleState()
    pl.pre_filter(state, info, infos)
    [detail] = pl.explain_node(state, info, infos[0], pl.filter(state, info, infos[0]))
    assert detail.data == {
        "pod": "default/w",
        "node": "h1",
        "term": 0,
        "kind": "podAntiAffinity",
        "domain": f"{HOST}=h1",
    }


# ---------------------------------------------------------------------------------------------------------
# Property: the incremental sums equal a from-scratch computation


def _palette_pod(i: int, node: str | None = None) -> PodInfo:
    """Pods of a small palette: app label, and (by i) hostname/zone anti-affinity, zone affinity, preferred terms."""
    app = ("a", "b", "c")[i % 3]
    b = pod({"app": app}, node=node, ns=("default", "subteam1.team1")[i % 2])
    kind = i % 7
    if kind == 1:
        b.pod_affinity_term(ANTI, HOST, {"app": app})
    elif kind == 2:
        b.pod_affinity_term(ANTI, "zone", {"app": ("a", "b", "c")[(i + 1) % 3]}, namespace_selector=TEAM1)
    elif kind == 3:
        b.pod_affinity_term(AFF, "zone", {"app": "a"})
    elif kind == 4:
        b.pod_affinity_term(AFF, "zone", {"app": app}, weight=7).pod_affinity_term(ANTI, HOST, {"app": "b"}, weight=3)
    elif kind == 5:
        b.pod_affinity_term(AFF, HOST, {"app": app}).pod_affinity_term(ANTI, "zone", {"app": "c"}, weight=11)
    return b.info()


_cluster_op = hst.tuples(
    hst.sampled_from(["add-clone", "remove", "relabel", "drop-node", "add-node", "reorder"]),
    hst.integers(0, 5),
    hst.integers(0, 20),
)


def _verdicts(pl: InterPodAffinity, incoming: PodInfo, nodes: list[NodeInfo]) -> tuple[Any, ...]:
    state = CycleState()
    _, st_pre = pl.pre_filter(state, incoming, nodes)
    out: list[Any] = [None if st_pre is None else (st_pre.code, st_pre.reasons)]
    if st_pre is None:
        batch = pl.filter_batch(state, incoming, nodes)
        assert batch == [pl.filter(state, incoming, n) for n in nodes]
        out.append([verdict(x) for x in batch])
        s: PreFilterState = state[PRE_FILTER_STATE_KEY]
        out.append(_maps(s))
    st_score = pl.pre_score(state, incoming, nodes)
    out.append(None if st_score is None else st_score.code)
    if st_score is None:
        out.append(pl.score_batch(state, incoming, nodes))
    return tuple(out)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hst.lists(_cluster_op, max_size=25), hst.lists(hst.integers(0, 20), min_size=1, max_size=4))
def test_property_incremental_sums_equal_recomputation(
    ops: list[tuple[str, int, int]], incoming_ids: list[int]
) -> None:
    """Across random pod adds/removes, relabels, node churn and reordering (a changed node is a new NodeInfo,
    as in snapshots), a long-lived plugin (sums kept up to date from changed nodes) decides and scores
    exactly like a fresh one."""
    nodes: dict[str, NodeInfo] = {}
    for i in range(4):
        nodes[f"n{i}"] = NodeInfo(f"n{i}", NodeRecord(f"n{i}", labels={HOST: f"n{i}", "zone": f"z{i % 2}"}))
    handle = StaticHandle(None, NAMESPACES)
    long_lived = InterPodAffinity(Args(), handle)
    incoming = [_palette_pod(i) for i in incoming_ids]
    serial = itertools.count()
    for op, where, what in ops:
        names = sorted(nodes)
        name = names[where % len(names)] if names else None
        if op == "add-node" or name is None:
            new = f"n{next(serial) + 10}"
            nodes[new] = NodeInfo(new, NodeRecord(new, labels={HOST: new, "zone": f"z{what % 3}"}))
        elif op == "add-clone":
            info = nodes[name].clone()
            info.add_pod(_palette_pod(what, name))
            nodes[name] = info
        elif op == "reorder":  # the same NodeInfos in another order (the node tree's order may change)
            nodes = dict(sorted(nodes.items(), key=lambda kv: (kv[0] != name, kv[0])))
        elif op == "remove" and nodes[name].pods:
            info = nodes[name].clone()
            info.remove_pod(next(iter(info.pods)))
            nodes[name] = info
        elif op == "relabel":
            old = nodes[name]
            assert old.node is not None
            info = NodeInfo(name, NodeRecord(name, labels={**old.node.labels, "zone": f"z{what % 3}"}))
            for p in old.pods.values():
                info.add_pod(p)
            nodes[name] = info
        elif op == "drop-node" and len(nodes) > 1:
            del nodes[name]
        listed = list(nodes.values())
        for p in incoming:
            fresh = InterPodAffinity(Args(), handle)
            assert _verdicts(long_lived, p, listed) == _verdicts(fresh, p, listed)


def test_aggregate_far_behind_the_change_log_is_rebuilt(monkeypatch: pytest.MonkeyPatch) -> None:
    """When the change log was trimmed past an aggregate's epoch, the aggregate is rebuilt from all nodes."""
    import scheduler.plugins.inter_pod_affinity.topology_counts as ipa

    monkeypatch.setattr(ipa, "LOG_LIMIT", 4)
    nodes = [NodeInfo(f"n{i}", NodeRecord(f"n{i}", labels={"zone": "z"})) for i in range(3)]
    changes = ipa.NodeChanges()
    changes.sync(nodes)

    def count_pods(n: NodeInfo) -> ipa.Contribution:
        return tuple(((("zone", "z"), 1),) * len(n.pods))

    behind = ipa.Aggregate("test|pods")
    behind.refresh(changes, count_pods)
    assert behind.counts.pairs() == {}
    for round_ in range(6):  # each round changes every node: the log is trimmed several times
        nodes = [n.clone() for n in nodes]
        nodes[round_ % 3].add_pod(pod(node=f"n{round_ % 3}").info())
        changes.sync(nodes)
    assert changes.since(behind.epoch) is None
    behind.refresh(changes, count_pods)
    assert behind.counts.pairs() == {("zone", "z"): 6}
    assert behind.nonempty == 3


@pytest.mark.usefixtures("caches_on")
@pytest.mark.parametrize("steps", [pytest.param(s, id=f"{s}-updates") for s in (1, 5)])
def test_node_changes_from_the_snapshot_log_equal_the_full_comparison(steps: int) -> None:
    """Syncing from the snapshot's log of replaced nodes (Snapshot.changed_since) records what comparing every
    node records: the same nodes, epochs and changed names (within an update in the cache's order, not the
    node list's: the aggregates add them up, so order does not matter)."""
    cache = Cache()
    for i in range(6):
        cache.add_node(NodeRecord(f"n{i}", labels={"zone": "z"}))
    snap = Snapshot()
    cache.update_snapshot(snap)
    logged, compared = NodeChanges(), NodeChanges()
    logged.sync(snap.node_info_list, snap)
    compared.sync(snap.node_info_list)
    for step in range(steps):
        cache.add_pod(pod(name=f"p{step}", node=f"n{step % 4}").info())
        if step % 2:
            cache.add_pod(pod(name=f"q{step}", node="n5").info())
        cache.update_snapshot(snap)
        assert snap.changed_since(snap.updates - 1, snap.node_info_list) is not None
        logged.sync(snap.node_info_list, snap)
        compared.sync(snap.node_info_list)
    assert logged.nodes == compared.nodes and logged.epoch == compared.epoch
    assert sorted(logged.since(0) or ()) == sorted(compared.since(0) or ())
    for epoch in range(logged.epoch + 1):
        assert set(logged.since(epoch) or ()) == set(compared.since(epoch) or ())
