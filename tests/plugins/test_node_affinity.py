"""NodeAffinity: nodeSelector, required/preferred affinity, addedAffinity and args (upstream v1.37)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.config.errors import ConfigError
from scheduler.framework.interface import MAX_NODE_SCORE, NODE, ActionType, CycleState
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.plugins import node_affinity
from scheduler.plugins.node_affinity import (
    ERR_REASON_CONFLICT,
    ERR_REASON_ENFORCED,
    ERR_REASON_POD,
    NAME,
    Args,
    NodeAffinity,
    parse_args,
)
from scheduler.testing import PodBuilder, StaticHandle, expr, make_node, make_pod


def _node(name: str = "node1", **labels: str) -> NodeInfo:
    builder = make_node(name)
    for key, value in labels.items():
        builder.label(key, value)
    return NodeInfo(name, builder.info())


def _filter(pl: NodeAffinity, pod: PodInfo, node: NodeInfo, pre_filter: bool = True) -> Status | None:
    """Filter one node like the framework: PreFilter (unless told not to), then Filter; batch must agree."""
    state = CycleState()
    if pre_filter:
        _, status = pl.pre_filter(state, pod, [node])
        if status is not None and status.code == Code.SKIP:
            return None
    got = pl.filter(state, pod, node)
    assert pl.filter_batch(state, pod, [node]) == [got]
    return got


LABELED = {"foo": "bar", "num": "5", "zone": "a"}


@pytest.mark.parametrize(
    ("pod", "fits"),
    [
        pytest.param(make_pod(), True, id="nothing-to-match"),
        pytest.param(make_pod().node_selector(foo="bar"), True, id="selector-same-labels"),
        pytest.param(make_pod().node_selector(missing="x"), False, id="selector-missing-label"),
        pytest.param(make_pod().node_selector(foo="bar", zone="a"), True, id="node-labels-superset"),
        pytest.param(make_pod().node_selector(foo="bar", other="y"), False, id="node-labels-subset"),
        pytest.param(make_pod().node_selector(foo="baz"), False, id="selector-other-value"),
        pytest.param(make_pod().node_affinity_in("foo", ["x", "bar"]), True, id="in-matches"),
        pytest.param(make_pod().node_affinity_in("foo", ["x"]), False, id="in-no-match"),
        pytest.param(make_pod().node_affinity_in("absent", ["x"]), False, id="in-absent-label"),
        pytest.param(make_pod().node_affinity_not_in("foo", ["x"]), True, id="notin-other-value"),
        pytest.param(make_pod().node_affinity_not_in("foo", ["bar"]), False, id="notin-value-present"),
        pytest.param(make_pod().node_affinity_not_in("absent", ["x"]), True, id="notin-absent-label-matches"),
        pytest.param(make_pod().required_term([expr("foo", "Exists")]), True, id="exists"),
        pytest.param(make_pod().required_term([expr("absent", "Exists")]), False, id="exists-absent"),
        pytest.param(make_pod().required_term([expr("absent", "DoesNotExist")]), True, id="doesnotexist"),
        pytest.param(make_pod().required_term([expr("foo", "DoesNotExist")]), False, id="doesnotexist-present"),
        pytest.param(make_pod().required_term([expr("num", "Gt", ["4"])]), True, id="gt-greater"),
        pytest.param(make_pod().required_term([expr("num", "Gt", ["5"])]), False, id="gt-equal-is-not-greater"),
        pytest.param(make_pod().required_term([expr("num", "Lt", ["6"])]), True, id="lt-less"),
        pytest.param(make_pod().required_term([expr("num", "Lt", ["5"])]), False, id="lt-equal"),
        pytest.param(make_pod().required_term([expr("num", "Gt", ["+4"])]), False, id="gt-signed-is-bad-label-value"),
        pytest.param(make_pod().required_term([expr("foo", "Gt", ["1"])]), False, id="gt-label-not-integer"),
        pytest.param(make_pod().required_term([expr("absent", "Lt", ["1"])]), False, id="lt-absent-label"),
        pytest.param(make_pod().required_term([expr("num", "Gt", ["four"])]), False, id="gt-value-not-integer"),
        pytest.param(make_pod().required_term([expr("num", "Gt", ["1", "2"])]), False, id="gt-two-values"),
        pytest.param(make_pod().required_term([expr("num", "Gt", ["4 "])]), False, id="gt-value-whitespace"),
        pytest.param(
            make_pod().required_term([expr("foo", "In", ["bar"]), expr("zone", "In", ["a"])]),
            True,
            id="expressions-anded-all-match",
        ),
        pytest.param(
            make_pod().required_term([expr("foo", "In", ["bar"]), expr("zone", "In", ["b"])]),
            False,
            id="expressions-anded-one-fails",
        ),
        pytest.param(
            make_pod().node_affinity_in("foo", ["nope"]).node_affinity_in("zone", ["a"]),
            True,
            id="terms-ored",
        ),
        pytest.param(make_pod().required_term([]), False, id="empty-term-matches-nothing"),
        pytest.param(make_pod().required_term([]).node_affinity_in("foo", ["bar"]), True, id="empty-term-dropped"),
        pytest.param(
            make_pod().node_selector(zone="b").node_affinity_in("foo", ["bar"]),
            False,
            id="selector-and-affinity-both-required",
        ),
        pytest.param(
            make_pod().node_selector(zone="a").node_affinity_in("foo", ["bar"]),
            True,
            id="selector-and-affinity-both-match",
        ),
        pytest.param(
            make_pod().node_affinity_not_in("foo", ["invalid value: ___@#$%^"]),
            False,
            id="invalid-value-term-never-matches",
        ),
        pytest.param(make_pod().required_term([expr("foo", "Like", ["bar"])]), False, id="unknown-operator"),
        pytest.param(
            make_pod().required_term([expr("foo", "Like", ["bar"])]).node_affinity_in("foo", ["bar"]),
            True,
            id="broken-term-ignored-when-other-matches",
        ),
        pytest.param(make_pod().required_term([expr("foo", "In", [])]), False, id="in-without-values"),
        pytest.param(make_pod().required_term([expr("foo", "Exists", ["x"])]), False, id="exists-with-values"),
        pytest.param(make_pod().required_term([expr("bad key!", "Exists")]), False, id="invalid-key"),
        pytest.param(make_pod().pin_to_node("node1"), True, id="matchfields-name-in"),
        pytest.param(make_pod().pin_to_node("node2"), False, id="matchfields-name-not-in"),
        pytest.param(
            make_pod().required_term(fields=[expr("metadata.name", "NotIn", ["node2"])]),
            True,
            id="matchfields-notin-other",
        ),
        pytest.param(
            make_pod().required_term(fields=[expr("metadata.name", "NotIn", ["node1"])]),
            False,
            id="matchfields-notin-self",
        ),
        pytest.param(
            make_pod().required_term(fields=[expr("metadata.name", "In", ["node1", "node2"])]),
            False,
            id="matchfields-two-values-invalid",
        ),
        pytest.param(
            make_pod().required_term(fields=[expr("metadata.name", "Exists")]),
            False,
            id="matchfields-bad-operator",
        ),
        pytest.param(
            make_pod().required_term([expr("foo", "In", ["bar"])], [expr("metadata.name", "In", ["node2"])]),
            False,
            id="one-term-fields-fail-expressions-match",
        ),
        pytest.param(
            make_pod().pin_to_node("node2").node_affinity_in("foo", ["bar"]),
            True,
            id="two-terms-fields-fail-expressions-match",
        ),
        pytest.param(
            make_pod().required_term([expr("foo", "In", ["bar"])], [expr("metadata.name", "In", ["node1"])]),
            True,
            id="one-term-both-match",
        ),
    ],
)
def test_filter(pod: PodBuilder, fits: bool) -> None:
    """Terms ORed, expressions ANDed, nodeSelector ANDed; broken terms never match and never raise."""
    node = _node("node1", **LABELED)
    status = _filter(NodeAffinity(), pod.info(), node)
    if fits:
        assert status is None
    else:
        assert status is not None
        assert (status.code, status.reasons, status.plugin) == (
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            (ERR_REASON_POD,),
            NAME,
        )


def test_filter_without_pre_filter() -> None:
    """Filter compiles the pod's requirements itself when PreFilter did not run (explain, nominated node)."""
    pl = NodeAffinity()
    pod = make_pod().node_selector(foo="bar").info()
    assert _filter(pl, pod, _node(foo="bar"), pre_filter=False) is None
    assert _filter(pl, pod, _node(foo="baz"), pre_filter=False) is not None



@pytest.mark.parametrize(
    ("pod", "skip", "names", "conflict"),
    [
        pytest.param(make_pod(), True, None, False, id="nothing-skip"),
        pytest.param(make_pod().preferred_term(5, [expr("foo", "Exists")]), True, None, False, id="preferred-only"),
        pytest.param(make_pod().node_selector(foo="bar"), False, None, False, id="selector-all-nodes"),
        pytest.param(make_pod().node_affinity_in("foo", ["bar"]), False, None, False, id="labels-all-nodes"),
        pytest.param(make_pod().pin_to_node("node1"), False, {"node1"}, False, id="daemonset-pin"),
        pytest.param(
            make_pod().pin_to_node("node1").pin_to_node("node2"), False, {"node1", "node2"}, False, id="union"
        ),
        pytest.param(
            make_pod().required_term(
                fields=[expr("metadata.name", "In", ["node1"]), expr("metadata.name", "In", ["node2"])]
            ),
            False,
            set(),
            True,
            id="intersection-conflict",
        ),
        pytest.param(
            make_pod().pin_to_node("node1").node_affinity_in("foo", ["bar"]),
            False,
            None,
            False,
            id="unpinned-term-means-all-nodes",
        ),
        pytest.param(
            make_pod().required_term(fields=[expr("metadata.name", "NotIn", ["node1"])]),
            False,
            None,
            False,
            id="notin-does-not-narrow",
        ),
        pytest.param(
            make_pod().required_term([expr("foo", "In", ["bar"])], [expr("metadata.name", "In", ["node3"])]),
            False,
            {"node3"},
            False,
            id="pinned-with-expressions",
        ),
    ],
)
def test_pre_filter(pod: PodBuilder, skip: bool, names: set[str] | None, conflict: bool) -> None:
    """Skip when nothing constrains the pod; the DaemonSet matchFields fast path narrows node names."""
    result, status = NodeAffinity().pre_filter(CycleState(), pod.info(), [])
    if skip:
        assert status is not None and status.code == Code.SKIP
        return
    if conflict:
        assert result is None
        assert status is not None
        assert (status.code, status.reasons) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_CONFLICT,))
        return
    assert status is None
    assert (result.node_names if result is not None else None) == names


def test_conflicting_pin_still_fails_filter() -> None:
    """The conflicting term also never matches at Filter (upstream keeps both answers consistent)."""
    pod = make_pod().required_term(
        fields=[expr("metadata.name", "In", ["node1"]), expr("metadata.name", "In", ["node2"])]
    )
    status = _filter(NodeAffinity(), pod.info(), _node("node2"), pre_filter=False)
    assert status is not None and status.reasons == (ERR_REASON_POD,)


ADDED_REQUIRED = {
    "requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [expr("zone", "In", ["a"])]}]
    }
}


@pytest.mark.parametrize(
    ("pod", "labels", "reason"),
    [
        pytest.param(make_pod().node_affinity_in("foo", ["bar"]), {"zone": "a", "foo": "bar"}, None, id="both-match"),
        pytest.param(make_pod().node_affinity_in("foo", ["bar"]), {"zone": "a"}, ERR_REASON_POD, id="pod-fails"),
        pytest.param(make_pod().node_affinity_in("foo", ["bar"]), {"foo": "bar"}, ERR_REASON_ENFORCED, id="added"),
        pytest.param(make_pod(), {"zone": "b"}, ERR_REASON_ENFORCED, id="plain-pod-still-enforced"),
        pytest.param(make_pod(), {"zone": "a"}, None, id="plain-pod-passes"),
    ],
)
def test_added_affinity_filter(pod: PodBuilder, labels: dict[str, str], reason: str | None) -> None:
    """addedAffinity is checked first with its own reason, then the pod's affinity."""
    pl = node_affinity.new({"addedAffinity": ADDED_REQUIRED}, StaticHandle())
    status = _filter(pl, pod.info(), _node("node1", **labels))
    assert (status.reasons if status is not None else None) == ((reason,) if reason else None)


# ---------------------------------------------------------------------------------------------------------
# Score

WEIGHTED = (
    make_pod()
    .preferred_term(2, [expr("foo", "In", ["bar"])])
    .preferred_term(4, [expr("key", "In", ["value"])])
    .preferred_term(5, [expr("foo", "In", ["bar"]), expr("key", "In", ["value"]), expr("az", "In", ["az1"])])
)


def _scores(pl: NodeAffinity, pod: PodInfo, nodes: list[NodeInfo], pre_score: bool = True) -> list[int]:
    state = CycleState()
    if pre_score:
        assert pl.pre_score(state, pod, nodes) is None
    raw = pl.score_batch(state, pod, nodes)
    assert raw == [pl.score(state, pod, n) for n in nodes]
    assert pl.normalize_score(state, pod, raw) is None
    return raw


@pytest.mark.parametrize("pre_score", [pytest.param(True, id="with-prescore"), pytest.param(False, id="no-prescore")])
def test_score_weights(pre_score: bool) -> None:
    """Raw score sums the weights of matching terms; normalize scales the best node to 100."""
    nodes = [
        _node("node1", foo="bar"),
        _node("node5", foo="bar", key="value", az="az1"),
        _node("node2", key="value"),
        _node("node3", az="az1"),
    ]
    raw = [2, 2 + 4 + 5, 4, 0]
    want = [MAX_NODE_SCORE * r // max(raw) for r in raw]
    assert _scores(NodeAffinity(), WEIGHTED.info(), nodes, pre_score) == want == [18, 100, 36, 0]


def test_score_no_match_all_zero() -> None:
    """No node matching any preferred term leaves every score at 0 (not reversed)."""
    nodes = [_node("a", x="1"), _node("b")]
    assert _scores(NodeAffinity(), WEIGHTED.info(), nodes) == [0, 0]


def test_weight_zero_term_ignored() -> None:
    """Terms with weight 0 contribute nothing."""
    pod = make_pod().preferred_term(0, [expr("foo", "Exists")]).preferred_term(3, [expr("az", "Exists")]).info()
    pl = NodeAffinity()
    state = CycleState()
    pl.pre_score(state, pod, [])
    assert pl.score(state, pod, _node(foo="bar")) == 0
    assert pl.score(state, pod, _node(foo="bar", az="x")) == 3


def test_pre_score_skip_without_preferred_terms() -> None:
    """PreScore returns Skip when neither the pod nor addedAffinity has preferred terms."""
    status = NodeAffinity().pre_score(CycleState(), make_pod().node_affinity_in("foo", ["bar"]).info(), [])
    assert status is not None and status.code == Code.SKIP


def test_pre_score_error_on_broken_preferred_term() -> None:
    """A broken preferred term is an Error at PreScore (not lazy), with upstream's message."""
    pod = make_pod().preferred_term(2, [expr("invalid key", "In", ["bar"])]).info()
    status = NodeAffinity().pre_score(CycleState(), pod, [])
    assert status is not None and status.code == Code.ERROR
    assert status.reasons == (
        '[0].matchExpressions[0].key: Invalid value: "invalid key": name part must consist of alphanumeric '
        "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  "
        "or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
    )


def test_added_preferred_affinity_score() -> None:
    """addedAffinity preferred terms add to the pod's own weights, even for a pod without affinity."""
    added = {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 3, "preference": {"matchExpressions": [expr("key", "In", ["value"])]}}
        ]
    }
    pl = NodeAffinity(parse_args({"addedAffinity": added}))
    nodes = [_node("node1", foo="bar"), _node("node2", key="value"), _node("node3", foo="bar", key="value")]
    pod = make_pod().preferred_term(2, [expr("foo", "In", ["bar"])]).info()
    raw = [2, 3, 5]
    assert _scores(pl, pod, nodes) == [MAX_NODE_SCORE * r // 5 for r in raw] == [40, 60, 100]
    assert _scores(pl, make_pod().info(), nodes) == [0, 100, 100]


# ---------------------------------------------------------------------------------------------------------
# Args


def test_parse_args_defaults() -> None:
    """Missing args mean no added affinity; apiVersion/kind are accepted."""
    assert parse_args(None) == Args()
    assert parse_args({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "NodeAffinityArgs"}) == Args()


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        pytest.param({"addedAfinity": {}}, "addedAfinity", id="unknown-top-field"),
        pytest.param({"addedAffinity": {"required": {}}}, "addedAffinity.required", id="unknown-affinity-field"),
        pytest.param({"addedAffinity": []}, "addedAffinity", id="affinity-not-object"),
        pytest.param(
            {
                "addedAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [expr("zone", "Near", ["a"])]}]
                    }
                }
            },
            "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
            ".matchExpressions[0].operator",
            id="bad-operator",
        ),
        pytest.param(
            {
                "addedAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 1, "preference": {"matchExpressions": [expr("n", "Lt", ["ten"])]}}
                    ]
                }
            },
            "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].matchExpressions[0].values[0]",
            id="bad-preferred-value",
        ),
        pytest.param(
            {
                "addedAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchFields": [expr("metadata.name", "In", ["a", "b"])]}]
                    }
                }
            },
            "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].values",
            id="matchfields-two-values",
        ),
    ],
)
def test_parse_args_errors_name_the_field(raw: dict[str, Any], field: str) -> None:
    """Invalid NodeAffinityArgs raise ConfigError whose message starts with the offending field path."""
    with pytest.raises(ConfigError) as info:
        parse_args(raw)
    assert str(info.value).startswith(field + ":")


def test_bad_operator_message_lists_supported_values() -> None:
    """An unsupported operator is reported like field.NotSupported, listing the valid operators."""
    raw = {
        "addedAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [expr("zone", "Near", ["a"])]}]
            }
        }
    }
    with pytest.raises(ConfigError) as info:
        parse_args(raw)
    assert str(info.value).endswith(
        'Unsupported value: "Near": supported values: "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"'
    )


def test_factory_accepts_parsed_args() -> None:
    """new() takes either the raw pluginConfig args or an already parsed Args."""
    parsed = parse_args({"addedAffinity": ADDED_REQUIRED})
    pl = node_affinity.new(parsed, StaticHandle())
    assert pl.args is parsed
    assert pl.filter(CycleState(), make_pod().info(), _node(zone="b")) is not None


def test_filter_batch_over_many_nodes() -> None:
    """The compiled batch path agrees with per-node Filter over varied nodes."""
    pl = NodeAffinity()
    pod = make_pod().node_selector(zone="a").node_affinity_in("foo", ["bar"]).node_affinity_in("num", ["5"]).info()
    nodes = [
        _node("n0", zone="a", foo="bar"),
        _node("n1", zone="a", num="5"),
        _node("n2", zone="b", foo="bar"),
        _node("n3"),
        _node("n4", zone="a"),
    ]
    state = CycleState()
    pl.pre_filter(state, pod, nodes)
    batch = pl.filter_batch(state, pod, nodes)
    assert batch == [pl.filter(state, pod, n) for n in nodes]
    assert [s is None for s in batch] == [True, True, False, False, False]


def test_events_to_register() -> None:
    """A new node or a label change may satisfy the affinity."""
    (event,) = NodeAffinity().events_to_register()
    assert event.resource == NODE
    assert event.action == ActionType.ADD | ActionType.UPDATE_NODE_LABEL
