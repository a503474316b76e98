"""A pod's required node affinity (framework/node_selector.py, component-helpers nodeaffinity
GetRequiredNodeAffinity): nodeSelector and required terms together, errors reported as upstream reports them."""

from __future__ import annotations

from scheduler.framework.node_selector import RequiredNodeAffinity
from scheduler.testing import expr, make_pod

LABELED = {"foo": "bar", "num": "5", "zone": "a"}


def test_lazy_error_reported_only_without_match() -> None:
    """A broken term's error surfaces only when no other term matched (LazyErrorNodeSelector)."""
    broken = make_pod().required_term([expr("num", "Gt", ["x"])])
    required = RequiredNodeAffinity.of(broken.info())
    matched, err = required.match(LABELED, "node1")
    assert not matched
    assert err == (
        'nodeSelectorTerms[0].matchExpressions[0].values[0]: Invalid value: "x": '
        "for 'Gt', 'Lt' operators, the value must be an integer"
    )
    healed = RequiredNodeAffinity.of(broken.node_affinity_in("foo", ["bar"]).info())
    assert healed.match(LABELED, "node1") == (True, None)
