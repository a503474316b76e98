"""PodTopologySpread: args, default selectors, add/remove equivalence, system defaults, explanations.

Upstream's own Filter/Score tables run in test_pod_topology_spread_upstream.py; these tests cover what those
tables do not: PodTopologySpreadArgs validation wording, helper.DefaultSelector's rules, that AddPod/RemovePod
keep the PreFilter state equal to a recomputation, and the explain detail.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from scheduler.config.errors import ConfigError
from scheduler.framework.interface import ASSIGNED_POD, NODE, UNSCHEDULED_POD, ActionType, ClusterEvent, CycleState
from scheduler.framework.labels import selector_from_set
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code
from scheduler.framework.types import NodeInfo
from scheduler.plugins.pod_topology_spread.args import Args, parse_args
from scheduler.plugins.pod_topology_spread.common import (
    DEFAULT_SELECTOR_KINDS,
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    LABEL_HOSTNAME,
    LABEL_TOPOLOGY_ZONE,
    PRE_FILTER_STATE_KEY,
    PRE_SCORE_STATE_KEY,
    default_selector,
    parse_group_version,
    selector_string,
)
from scheduler.plugins.pod_topology_spread.filtering import CriticalPaths, PreFilterState
from scheduler.plugins.pod_topology_spread.plugin import PodTopologySpread
from scheduler.plugins.pod_topology_spread.scoring import go_log, go_round
from scheduler.testing import PodBuilder, StaticHandle, make_node, make_pod, node_info

JSON = dict[str, Any]
ZONE = LABEL_TOPOLOGY_ZONE


def rs(name: str, selector: JSON | None, namespace: str = "default") -> JSON:
    spec: JSON = {} if selector is None else {"selector": selector}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def sts(name: str, selector: JSON) -> JSON:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": selector},
    }


def rc(name: str, selector: dict[str, str]) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": selector},
    }


def svc(name: str, selector: dict[str, str] | None, namespace: str = "default") -> JSON:
    spec: JSON = {} if selector is None else {"selector": selector}
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": namespace}, "spec": spec}


# ---------------------------------------------------------------------------------------------------------
# Args


def test_args_default_to_system() -> None:
    """No args: defaultingType System, no listed constraints; the plugin uses the two system constraints."""
    args = parse_args(None)
    assert args == Args((), "System")
    pl = PodTopologySpread(args, StaticHandle())
    assert pl.system_defaulted
    assert [(c["topologyKey"], c["maxSkew"], c["whenUnsatisfiable"]) for c in pl.default_constraints] == [
        (LABEL_HOSTNAME, 3, "ScheduleAnyway"),
        (ZONE, 5, "ScheduleAnyway"),
    ]
    assert pl.object_kinds == DEFAULT_SELECTOR_KINDS


def test_list_args_are_used_verbatim_and_empty_list_watches_nothing() -> None:
    """List with constraints uses them; List without any has no defaults, so reads no Services/controllers."""
    args = parse_args(
        {
            "defaultingType": "List",
            "defaultConstraints": [
                {"maxSkew": 2, "topologyKey": "rack", "whenUnsatisfiable": "DoNotSchedule", "minDomains": 2}
            ],
        }
    )
    pl = PodTopologySpread(args, StaticHandle())
    assert not pl.system_defaulted
    assert pl.default_constraints[0]["topologyKey"] == "rack"
    assert pl.object_kinds == DEFAULT_SELECTOR_KINDS
    empty = PodTopologySpread(parse_args({"defaultingType": "List"}), StaticHandle())
    assert empty.object_kinds == ()
    assert PodTopologySpread.object_kinds == DEFAULT_SELECTOR_KINDS  # the class attribute is untouched


ARG_ERRORS = [
    pytest.param(
        {"defaultingType": "Foo"},
        'defaultingType: Unsupported value: "Foo": supported values: "System", "List"',
        id="unknown-defaulting-type",
    ),
    pytest.param(
        {"defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}]},
        'defaultingType: Invalid value: "System": when .defaultConstraints are not empty',
        id="system-with-constraints",
    ),
    pytest.param(
        {
            "defaultingType": "List",
            "defaultConstraints": [{"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}],
        },
        "defaultConstraints[0].maxSkew: Invalid value: 0: not in valid range (0, inf)",
        id="max-skew-zero",
    ),
    pytest.param(
        {"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "whenUnsatisfiable": "ScheduleAnyway"}]},
        "defaultConstraints[0].topologyKey: Required value: can not be empty",
        id="topology-key-empty",
    ),
    pytest.param(
        {
            "defaultingType": "List",
            "defaultConstraints": [{"maxSkew": 1, "topologyKey": "a/b/c", "whenUnsatisfiable": "ScheduleAnyway"}],
        },
        'defaultConstraints[0].topologyKey: Invalid value: "a/b/c": a valid label key must consist of alphanumeric '
        "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or "
        "'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an "
        "optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
        id="topology-key-invalid",
    ),
    pytest.param(
        {"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone"}]},
        "defaultConstraints[0].whenUnsatisfiable: Required value: can not be empty",
        id="action-empty",
    ),
    pytest.param(
        {
            "defaultingType": "List",
            "defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "Sometimes"}],
        },
        'defaultConstraints[0].whenUnsatisfiable: Unsupported value: "Sometimes": supported values: '
        '"DoNotSchedule", "ScheduleAnyway"',
        id="action-unknown",
    ),
    pytest.param(
        {
            "defaultingType": "List",
            "defaultConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "zone",
                    "whenUnsatisfiable": "ScheduleAnyway",
                    "labelSelector": {"matchLabels": {"a": "b"}},
                }
            ],
        },
        "defaultConstraints[0].labelSelector: Forbidden: constraint must not define a selector, as they deduced for "
        "each pod",
        id="label-selector-forbidden",
    ),
    pytest.param(
        {
            "defaultingType": "List",
            "defaultConstraints": [
                {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"},
                {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"},
            ],
        },
        'defaultConstraints[1]: Duplicate value: "{zone, ScheduleAnyway}"',
        id="duplicate",
    ),
    pytest.param(
        {
            "defaultingType": "List",
            "defaultConstraints": [{"maxSkew": -1, "topologyKey": "", "whenUnsatisfiable": "DoNotSchedule"}],
        },
        "[defaultConstraints[0].maxSkew: Invalid value: -1: not in valid range (0, inf), "
        "defaultConstraints[0].topologyKey: Required value: can not be empty]",
        id="several-errors-aggregate",
    ),
    pytest.param({"defaultConstraint": []}, 'unknown field "defaultConstraint"', id="strict-unknown-field"),
    pytest.param(
        {
            "defaultingType": "List",
            "defaultConstraints": [{"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": "DoNotSchedule", "skew": 1}],
        },
        'defaultConstraints[0]: unknown field "skew"',
        id="strict-unknown-constraint-field",
    ),
    pytest.param(
        {"defaultingType": "List", "defaultConstraints": [{"maxSkew": "1", "topologyKey": "z"}]},
        'defaultConstraints[0].maxSkew: must be an integer, got string "1"',
        id="wrong-type",
    ),
    pytest.param({"defaultConstraints": {}}, "defaultConstraints: must be a list, got mapping", id="not-a-list"),
    pytest.param(
        {"kind": "NodeAffinityArgs"},
        'kind: want args to be of type PodTopologySpreadArgs, got "NodeAffinityArgs"',
        id="wrong-kind",
    ),
]


@pytest.mark.parametrize(("raw", "message"), ARG_ERRORS)
def test_args_errors_name_the_field(raw: JSON, message: str) -> None:
    """ValidatePodTopologySpreadArgs' messages, and strict decoding errors naming the field."""
    with pytest.raises(ConfigError) as err:
        parse_args(raw)
    assert str(err.value) == message


def test_args_through_the_config_loader() -> None:
    """pluginConfig args reach the plugin; errors are prefixed with where they sit in the file."""
    from scheduler.config.load import load_config
    from scheduler.plugins.registry import REGISTRY, implements, parse_plugin_args

    def cfg(args: JSON) -> JSON:
        return {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [
                {"schedulerName": "pyscheduler", "pluginConfig": [{"name": "PodTopologySpread", "args": args}]}
            ],
        }

    good = load_config(cfg({"defaultingType": "List"}), REGISTRY.keys(), parse_plugin_args, implements=implements)
    assert good.profiles[0].plugin_config["PodTopologySpread"] == Args((), "List")
    with pytest.raises(ConfigError) as err:
        load_config(cfg({"defaultingType": "Nope"}), REGISTRY.keys(), parse_plugin_args, implements=implements)
    assert str(err.value) == (
        "profiles[0].pluginConfig[0].args: "
        'defaultingType: Unsupported value: "Nope": supported values: "System", "List"'
    )


# ---------------------------------------------------------------------------------------------------------
# Default selector


DEFAULT_SELECTOR_CASES = [
    pytest.param(make_pod("p").labels(app="web"), [], "", id="bare-pod-no-service"),
    pytest.param(make_pod("p").labels(app="web", tier="fe"), [svc("s", {"app": "web"})], "app=web", id="service"),
    pytest.param(
        make_pod("p").labels(app="web", tier="fe"),
        [svc("s1", {"app": "web"}), svc("s2", {"tier": "fe"}), svc("s3", {"app": "db"})],
        "app=web,tier=fe",
        id="services-merged-non-matching-ignored",
    ),
    pytest.param(make_pod("p").labels(app="web"), [svc("s", None), svc("e", {})], "", id="service-without-selector"),
    pytest.param(
        make_pod("p").labels(app="web"), [svc("s", {"app": "web"}, "other")], "", id="service-other-namespace"
    ),
    pytest.param(
        make_pod("p").labels(app="web", hash="h1").owner("ReplicaSet", "rs1"),
        [rs("rs1", {"matchLabels": {"app": "web", "hash": "h1"}})],
        "app=web,hash=h1",
        id="replicaset",
    ),
    pytest.param(
        make_pod("p").labels(app="web", hash="h1").owner("ReplicaSet", "rs1"),
        [
            svc("s", {"app": "web"}),
            rs("rs1", {"matchExpressions": [{"key": "hash", "operator": "In", "values": ["h1"]}]}),
        ],
        "app=web,hash in (h1)",
        id="service-and-replicaset-anded",
    ),
    pytest.param(make_pod("p").labels(app="web").owner("ReplicaSet", "missing"), [], "", id="replicaset-not-found"),
    pytest.param(
        make_pod("p").labels(app="web").owner("ReplicaSet", "rs1"), [rs("rs1", None)], "", id="replicaset-nil-selector"
    ),
    pytest.param(
        make_pod("p").labels(app="db").owner("StatefulSet", "db"),
        [sts("db", {"matchLabels": {"app": "db"}})],
        "app=db",
        id="statefulset",
    ),
    pytest.param(
        make_pod("p").labels(app="old").owner("ReplicationController", "rc1", api_version="v1"),
        [svc("s", {"app": "old"}), rc("rc1", {"app": "old", "v": "1"})],
        "app=old,v=1",
        id="replicationcontroller-merged",
    ),
    pytest.param(
        make_pod("p").labels(app="web").owner("ReplicaSet", "rs1", api_version="extensions/v1beta1"),
        [rs("rs1", {"matchLabels": {"app": "web"}})],
        "",
        id="owner-other-group-version",
    ),
    pytest.param(make_pod("p").labels(app="web").owner("Deployment", "d"), [], "", id="deployment-owner-adds-nothing"),
    pytest.param(
        make_pod("p").labels(app="web").owner("ReplicaSet", "rs1", api_version="a/b/c"),
        [svc("s", {"app": "web"}), rs("rs1", {"matchLabels": {"app": "web"}})],
        "app=web",
        id="unparsable-api-version",
    ),
]


@pytest.mark.parametrize(("builder", "objects", "want"), DEFAULT_SELECTOR_CASES)
def test_default_selector(builder: PodBuilder, objects: list[JSON], want: str) -> None:
    """helper.DefaultSelector: Services merged, RC merged, RS/StatefulSet ANDed, other owners ignored."""
    sel = default_selector(builder.info(), StaticHandle(objects=objects).objects)
    assert selector_string(sel) == want


def test_parse_group_version() -> None:
    """schema.ParseGroupVersion's cases."""
    assert parse_group_version("") == ("", "")
    assert parse_group_version("/") == ("", "")
    assert parse_group_version("v1") == ("", "v1")
    assert parse_group_version("apps/v1") == ("apps", "v1")
    assert parse_group_version("/v1") == ("", "v1")
    assert parse_group_version("a/b/c") is None


def test_default_selector_follows_object_changes() -> None:
    """The per-pod cache of the default selector is invalidated when a Service changes."""
    handle = StaticHandle(objects=[svc("s", {"app": "web"})])
    pl = PodTopologySpread(Args(), handle)
    p = make_pod("p").labels(app="web", v="2").info()
    assert [selector_string(c.selector) for c in pl.constraints(p, "ScheduleAnyway")] == ["app=web", "app=web"]
    handle.objects.apply("Service", None, svc("s2", {"v": "2"}))  # type: ignore[attr-defined]
    assert [selector_string(c.selector) for c in pl.constraints(p, "ScheduleAnyway")] == ["app=web,v=2"] * 2


def test_explicit_constraints_disable_defaults() -> None:
    """A pod with any constraint of its own gets no default constraint, even for the other action."""
    handle = StaticHandle(objects=[svc("s", {"app": "web"})])
    pl = PodTopologySpread(Args(), handle)
    p = make_pod("p").labels(app="web").spread_constraint(1, ZONE, "DoNotSchedule", {"app": "web"}).info()
    assert pl.constraints(p, "ScheduleAnyway") == ()
    assert len(pl.constraints(p, "DoNotSchedule")) == 1


# ---------------------------------------------------------------------------------------------------------
# Filter messages and AddPod/RemovePod equivalence


def zonal_nodes() -> list[NodeInfo]:
    return [
        node_info(make_node("a1").zone("z1"), make_pod("x1").labels(app="web"), make_pod("x2").labels(app="web")),
        node_info(make_node("a2").zone("z1")),
        node_info(make_node("b1").zone("z2"), make_pod("y1").labels(app="web")),
        node_info(make_node("c1")),  # no zone label
    ]


def test_filter_reasons_are_upstreams() -> None:
    """Byte-identical reasons and codes: missing key is unresolvable, skew is unschedulable."""
    assert ERR_REASON_CONSTRAINTS_NOT_MATCH == "node(s) didn't match pod topology spread constraints"
    assert (
        ERR_REASON_NODE_LABEL_NOT_MATCH
        == "node(s) didn't match pod topology spread constraints (missing required label)"
    )
    nodes = zonal_nodes()
    pl = PodTopologySpread(Args(), StaticHandle(Snapshot.from_node_infos(nodes)))
    p = make_pod("p").labels(app="web").spread_constraint(1, ZONE, "DoNotSchedule", {"app": "web"}).info()
    state = CycleState()
    assert pl.pre_filter(state, p, nodes) == (None, None)
    got = [(s.code, s.reasons, s.plugin) if s else None for s in pl.filter_batch(state, p, nodes)]
    assert got == [
        (Code.UNSCHEDULABLE, (ERR_REASON_CONSTRAINTS_NOT_MATCH,), "PodTopologySpread"),
        (Code.UNSCHEDULABLE, (ERR_REASON_CONSTRAINTS_NOT_MATCH,), "PodTopologySpread"),
        None,
        (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_NODE_LABEL_NOT_MATCH,), "PodTopologySpread"),
    ]


def test_pre_filter_error_wording() -> None:
    """An unparsable selector is a PreFilter Error with upstream's wrapping."""
    pl = PodTopologySpread(Args(), StaticHandle())
    bad = (
        make_pod("p")
        .spread_constraint(
            1, ZONE, "DoNotSchedule", labelSelector={"matchExpressions": [{"key": "a", "operator": "Near"}]}
        )
        .info()
    )
    _, status = pl.pre_filter(CycleState(), bad, [])
    assert status is not None and status.code == Code.ERROR
    assert status.message() == (
        'get constraints from pod: obtaining pod\'s hard topology spread constraints: "Near" is not a valid label '
        "selector operator"
    )


def _random_cluster(rng: random.Random) -> list[NodeInfo]:
    nodes = []
    for i in range(rng.randint(1, 7)):
        b = make_node(f"n{i}")
        if rng.random() < 0.85:
            b.zone(rng.choice(["z1", "z2", "z3"]))
        if rng.random() < 0.3:
            b.taint("dedicated", "x", "NoSchedule")
        if rng.random() < 0.5:
            b.label("disk", rng.choice(["ssd", "hdd"]))
        pods = [
            make_pod(f"e{i}-{j}", rng.choice(["default", "default", "other"])).labels(app=rng.choice(["web", "db"]))
            for j in range(rng.randint(0, 4))
        ]
        nodes.append(node_info(b, *pods))
    return nodes


def _state_of(pl: PodTopologySpread, pod: Any, nodes: list[NodeInfo]) -> PreFilterState:
    state = CycleState()
    _, status = pl.pre_filter(state, pod, nodes)
    assert status is None
    s: PreFilterState = state[PRE_FILTER_STATE_KEY]
    return s


@pytest.mark.parametrize("seed", range(60))
def test_add_and_remove_pod_equal_recomputation(seed: int) -> None:
    """Preemption/nominated-pod bookkeeping: AddPod/RemovePod on one node == PreFilter over the changed node.

    Counts per domain and the global minimum agree for any sequence of adds and removes on one node.
    """
    rng = random.Random(seed)
    nodes = _random_cluster(rng)
    builder = make_pod("incoming").labels(app="web")
    builder.spread_constraint(
        1, ZONE, "DoNotSchedule", {"app": "web"}, nodeTaintsPolicy=rng.choice(["Honor", "Ignore"])
    )
    if rng.random() < 0.5:
        builder.spread_constraint(2, LABEL_HOSTNAME, "DoNotSchedule", {"app": "web"})
    if rng.random() < 0.4:
        builder.node_selector(disk="ssd")
    incoming = builder.info()
    pl = PodTopologySpread(Args(), StaticHandle(Snapshot.from_node_infos(nodes)))
    state = CycleState()
    pl.pre_filter(state, incoming, nodes)
    target_index = rng.randrange(len(nodes))
    target = nodes[target_index].clone()
    for step in range(6):
        if target.pods and rng.random() < 0.5:
            victim = rng.choice(list(target.pods.values()))
            target.remove_pod(victim.uid)
            assert pl.remove_pod(state, incoming, victim, target) is None
        else:
            added = (
                make_pod(f"add{step}", rng.choice(["default", "other"]))
                .labels(app=rng.choice(["web", "db"]))
                .node(target.name)
                .info()
            )
            target.add_pod(added)
            assert pl.add_pod(state, incoming, added, target) is None
        changed = [target if i == target_index else n for i, n in enumerate(nodes)]
        want = _state_of(pl, incoming, changed)
        got: PreFilterState = state[PRE_FILTER_STATE_KEY]
        assert {k: v for k, v in enumerate(got.tp_value_to_match_num)} == dict(enumerate(want.tp_value_to_match_num))
        for i in range(len(want.constraints)):
            assert got.min_match_num(i) == want.min_match_num(i)


def test_add_pod_counts_even_with_empty_selector() -> None:
    """Upstream quirk kept: PreFilter counts 0 pods for `labelSelector: {}`, AddPod still adds 1."""
    nodes = [node_info(make_node("a").zone("z1"), make_pod("e").labels(app="web"))]
    incoming = make_pod("p").spread_constraint(1, ZONE, "DoNotSchedule", labelSelector={}).info()
    pl = PodTopologySpread(Args(), StaticHandle(Snapshot.from_node_infos(nodes)))
    state = CycleState()
    pl.pre_filter(state, incoming, nodes)
    assert state[PRE_FILTER_STATE_KEY].tp_value_to_match_num == [{"z1": 0}]
    pl.add_pod(state, incoming, make_pod("n").info(), nodes[0])
    assert state[PRE_FILTER_STATE_KEY].tp_value_to_match_num == [{"z1": 1}]


def test_state_clone_is_independent() -> None:
    """A preemption trial works on a clone: the original state is untouched."""
    nodes = zonal_nodes()
    pl = PodTopologySpread(Args(), StaticHandle(Snapshot.from_node_infos(nodes)))
    p = make_pod("p").labels(app="web").spread_constraint(1, ZONE, "DoNotSchedule", {"app": "web"}).info()
    state = CycleState()
    pl.pre_filter(state, p, nodes)
    original: PreFilterState = state[PRE_FILTER_STATE_KEY]
    trial = CycleState()
    trial[PRE_FILTER_STATE_KEY] = original.clone()
    pl.add_pod(trial, p, make_pod("n").labels(app="web").info(), nodes[2])
    assert original.tp_value_to_match_num == [{"z1": 2, "z2": 1}]
    assert trial[PRE_FILTER_STATE_KEY].tp_value_to_match_num == [{"z1": 2, "z2": 2}]


def test_critical_paths_match_upstream_update_rule() -> None:
    """criticalPaths.update: [0] is the minimum after any single-domain change."""
    p = CriticalPaths()
    for value, num in [("a", 3), ("b", 1), ("c", 2)]:
        p.update(value, num)
    assert p.paths == [["b", 1], ["c", 2]]
    p.update("b", 4)
    assert p.paths == [["c", 2], ["b", 4]]
    p.update("a", 0)
    assert p.paths == [["a", 0], ["c", 2]]


# ---------------------------------------------------------------------------------------------------------
# Scoring with system defaults


def test_system_defaults_spread_replicaset_pods() -> None:
    """Pods of a ReplicaSet prefer the node and zone with fewer siblings; others' pods don't count."""
    objects = [rs("web-1", {"matchLabels": {"app": "web"}})]
    nodes = [
        node_info(make_node("a1").zone("z1"), make_pod("w1").labels(app="web"), make_pod("w2").labels(app="web")),
        node_info(make_node("a2").zone("z1"), make_pod("d1").labels(app="db"), make_pod("d2").labels(app="db")),
        node_info(make_node("b1").zone("z2"), make_pod("w3").labels(app="web")),
        node_info(make_node("b2").zone("z2")),
    ]
    pl = PodTopologySpread(Args(), StaticHandle(Snapshot.from_node_infos(nodes), objects))
    p = make_pod("w4").labels(app="web").owner("ReplicaSet", "web-1").info()
    state = CycleState()
    _, status = pl.pre_filter(state, p, nodes)
    assert status is not None and status.code == Code.SKIP  # system defaults are all ScheduleAnyway
    assert pl.pre_score(state, p, nodes) is None
    s = state[PRE_SCORE_STATE_KEY]
    assert s.topology_value_to_pod_counts == [{}, {"z1": 2, "z2": 1}]
    scores = pl.score_batch(state, p, nodes)

    # hostname: cnt*ln(4+2) + 2; zone: cnt*ln(2+2) + 4, summed and rounded half away from zero.
    def raw(host: int, zone: int) -> int:
        return go_round(host * go_log(6) + 2 + zone * go_log(4) + 4)

    assert scores == [raw(2, 2), raw(0, 2), raw(1, 1), raw(0, 1)]
    pl.normalize_score(state, p, scores)
    hi, lo = raw(2, 2), raw(0, 1)
    assert scores == [100 * (hi + lo - r) // hi for r in (raw(2, 2), raw(0, 2), raw(1, 1), raw(0, 1))]
    assert scores[3] == 100


def test_system_defaults_hostname_spreading_without_zone_label() -> None:
    """System defaults don't require every key: zoneless nodes still get hostname spreading (not ignored)."""
    objects = [svc("s", {"app": "web"})]
    nodes = [node_info(make_node("a"), make_pod("w1").labels(app="web")), node_info(make_node("b"))]
    pl = PodTopologySpread(Args(), StaticHandle(Snapshot.from_node_infos(nodes), objects))
    p = make_pod("w2").labels(app="web").info()
    state = CycleState()
    pl.pre_filter(state, p, nodes)
    assert pl.pre_score(state, p, nodes) is None
    assert state[PRE_SCORE_STATE_KEY].ignored_nodes == set()
    scores = pl.score_batch(state, p, nodes)
    pl.normalize_score(state, p, scores)
    assert scores[1] == 100 and scores[0] < 100


def test_list_defaults_require_all_keys() -> None:
    """With List defaults (not system), feasible nodes missing a key are ignored and score 0."""
    args = parse_args(
        {
            "defaultingType": "List",
            "defaultConstraints": [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway"}],
        }
    )
    objects = [svc("s", {"app": "web"})]
    nodes = [node_info(make_node("a").zone("z1"), make_pod("w1").labels(app="web")), node_info(make_node("b"))]
    pl = PodTopologySpread(args, StaticHandle(Snapshot.from_node_infos(nodes), objects))
    p = make_pod("w2").labels(app="web").info()
    state = CycleState()
    pl.pre_filter(state, p, nodes)
    assert pl.pre_score(state, p, nodes) is None
    assert state[PRE_SCORE_STATE_KEY].ignored_nodes == {"b"}
    scores = pl.score_batch(state, p, nodes)
    assert pl.score(state, p, nodes[1]) == 0
    pl.normalize_score(state, p, scores)
    assert scores == [100, 0]


def test_go_round_halves_away_from_zero() -> None:
    """math.Round, not Python's banker's rounding."""
    assert [go_round(x) for x in (0.5, 1.5, 2.5, 2.4999999, 0.49999999999999994)] == [1, 2, 3, 2, 0]


def test_memoized_counts_follow_node_changes() -> None:
    """The per-node count memo is dropped when the node's pods change."""
    objects = [svc("s", {"app": "web"})]
    a = node_info(make_node("a").zone("z1"), make_pod("w1").labels(app="web"))
    nodes = [a, node_info(make_node("b").zone("z2"))]
    pl = PodTopologySpread(Args(), StaticHandle(Snapshot.from_node_infos(nodes), objects))
    p = make_pod("w9").labels(app="web").info()
    state = CycleState()
    pl.pre_score(state, p, nodes)
    assert state[PRE_SCORE_STATE_KEY].topology_value_to_pod_counts[1] == {"z1": 1, "z2": 0}
    a.add_pod(make_pod("w2").labels(app="web").node("a").info())
    state = CycleState()
    pl.pre_score(state, p, nodes)
    assert state[PRE_SCORE_STATE_KEY].topology_value_to_pod_counts[1] == {"z1": 2, "z2": 0}


# ---------------------------------------------------------------------------------------------------------
# Events and explanations


def test_events_are_v1_37s() -> None:
    """EventsToRegister of v1.37 (AssignedPod, TargetPod as UnscheduledPod, Node)."""
    pl = PodTopologySpread(Args(), StaticHandle())
    assert pl.events_to_register() == [
        ClusterEvent(ASSIGNED_POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE),
        ClusterEvent(UNSCHEDULED_POD, ActionType.UPDATE_POD_TOLERATION | ActionType.UPDATE_POD_LABEL),
        ClusterEvent(
            NODE, ActionType.ADD | ActionType.DELETE | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT
        ),
    ]


def test_explain_names_domain_counts_minimum_and_skew() -> None:
    """explain_node: the domain, its matching pods, the global minimum (and minDomains) and the skew."""
    nodes = zonal_nodes()
    pl = PodTopologySpread(Args(), StaticHandle(Snapshot.from_node_infos(nodes)))
    p = make_pod("p").labels(app="web").spread_constraint(1, ZONE, "DoNotSchedule", {"app": "web"}).info()
    state = CycleState()
    pl.pre_filter(state, p, nodes)
    statuses = pl.filter_batch(state, p, nodes)
    a1 = pl.explain_node(state, p, nodes[0], statuses[0])
    assert [d.text for d in a1] == [
        f"spread constraint {ZONE} (maxSkew 1): domain {ZONE}=z1 has 2 matching pod(s) + this pod; global minimum 1 "
        "over 2 eligible domain(s) (minDomains 1); skew 2+1-1 = 2 > maxSkew 1"
    ]
    assert a1[0].data == {
        "topologyKey": ZONE,
        "domain": "z1",
        "matchingPods": 2,
        "selfMatch": True,
        "globalMinimum": 1,
        "eligibleDomains": 2,
        "minDomains": 1,
        "skew": 2,
        "maxSkew": 1,
    }
    c1 = pl.explain_node(state, p, nodes[3], statuses[3])
    assert c1[0].text == f"spread constraint {ZONE} (maxSkew 1): node has no label {ZONE}, so it is in no domain"
    p3 = (
        make_pod("p").labels(app="web").spread_constraint(1, ZONE, "DoNotSchedule", {"app": "web"}, minDomains=3).info()
    )
    state = CycleState()
    pl.pre_filter(state, p3, nodes)
    b1 = pl.explain_node(state, p3, nodes[2], None)
    assert "global minimum 0 (only 2 eligible domain(s) < minDomains 3)" in b1[0].text
    assert b1[0].data["skew"] == 2 and b1[0].data["globalMinimum"] == 0


def test_selector_string_is_labels_string() -> None:
    """labels.Selector.String() form (sorted by key), used in memo keys and tests."""
    assert selector_string(selector_from_set({"b": "2", "a": "1"})) == "a=1,b=2"


@pytest.mark.parametrize("seed", range(40))
def test_sums_kept_across_cycles_equal_a_fresh_count(seed: int) -> None:
    """DomainSums: one plugin over a changing cluster (nodes cloned on change, pods changed in place, nodes
    added, relabelled and removed) agrees every cycle with a fresh plugin counting from scratch."""
    rng = random.Random(1000 + seed)
    nodes = _random_cluster(rng)
    objects = [rs("web-1", {"matchLabels": {"app": "web"}})]
    kept = PodTopologySpread(Args(), StaticHandle(objects=objects))
    for cycle in range(8):
        b = make_pod(f"in{cycle}").labels(app="web").owner("ReplicaSet", "web-1")
        if seed % 3 == 1:
            b.spread_constraint(1, ZONE, "DoNotSchedule", {"app": "web"}, nodeTaintsPolicy="Honor")
            b.spread_constraint(1, LABEL_HOSTNAME, "ScheduleAnyway", {"app": "web"})
        if seed % 4 == 2:
            b.node_selector(disk="ssd")
        incoming = b.info()
        fresh = PodTopologySpread(Args(), StaticHandle(objects=objects))
        feasible = [n for n in nodes if rng.random() < 0.7] or nodes[:1]
        results = []
        for pl in (kept, fresh):
            state = CycleState()
            pl.pre_filter(state, incoming, nodes)
            pf = state.get(PRE_FILTER_STATE_KEY)
            pl.pre_score(state, incoming, feasible)
            ps = state.get(PRE_SCORE_STATE_KEY)
            results.append((
                pf.tp_value_to_match_num if pf else None,
                ps.topology_value_to_pod_counts if ps else None,
                pl.score_batch(state, incoming, feasible) if ps else None,
            ))
        assert results[0] == results[1], f"cycle {cycle}"
        # Change the cluster the way the cache and tests do.
        i = rng.randrange(len(nodes))
        action = rng.choice(["clone-add", "inplace-add", "inplace-remove", "relabel", "new-node", "drop-node"])
        if action == "clone-add":
            nodes[i] = nodes[i].clone()
            nodes[i].add_pod(make_pod(f"c{cycle}").labels(app="web").node(nodes[i].name).info())
        elif action == "inplace-add":
            nodes[i].add_pod(make_pod(f"i{cycle}").labels(app=rng.choice(["web", "db"])).node(nodes[i].name).info())
        elif action == "inplace-remove" and nodes[i].pods:
            nodes[i].remove_pod(next(iter(nodes[i].pods)))
        elif action == "relabel":
            record = nodes[i].node
            assert record is not None
            relabelled = make_node(record.name).zone(rng.choice(["z1", "z2", "z9"]))
            clone = node_info(relabelled)
            for p in nodes[i].pods.values():
                clone.add_pod(p)
            nodes[i] = clone
        elif action == "new-node":
            nodes.append(node_info(make_node(f"new{cycle}").zone("z3"), make_pod(f"np{cycle}").labels(app="web")))
        elif action == "drop-node" and len(nodes) > 1:
            nodes.pop(i)
