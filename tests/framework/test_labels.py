"""metav1.LabelSelector semantics and apimachinery's label validation texts (scheduler/framework/labels.py)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.labels import (
    SelectorError,
    compile_label_selector,
    label_key_errors,
    label_value_errors,
    selector_from_set,
)


@pytest.mark.parametrize(
    ("selector", "labels", "want"),
    [
        pytest.param(None, {"app": "web"}, False, id="nil-matches-nothing"),
        pytest.param({}, {}, True, id="empty-matches-everything"),
        pytest.param({"matchLabels": {}, "matchExpressions": []}, {"a": "b"}, True, id="empty-lists-everything"),
        pytest.param({"matchLabels": {"app": "web"}}, {"app": "web", "x": "y"}, True, id="match-labels"),
        pytest.param({"matchLabels": {"app": "web"}}, {"app": "db"}, False, id="match-labels-other-value"),
        pytest.param({"matchLabels": {"app": "web"}}, {}, False, id="match-labels-absent"),
        pytest.param(
            {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]},
            {"tier": "b"},
            True,
            id="in",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["a"]}]}, {}, True, id="notin-absent"
        ),
        pytest.param(
            {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["a"]}]},
            {"tier": "a"},
            False,
            id="notin-present",
        ),
        pytest.param({"matchExpressions": [{"key": "t", "operator": "Exists"}]}, {"t": ""}, True, id="exists"),
        pytest.param({"matchExpressions": [{"key": "t", "operator": "DoesNotExist"}]}, {"t": ""}, False, id="dne"),
        pytest.param(
            {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "t", "operator": "Exists"}]},
            {"app": "web"},
            False,
            id="anded",
        ),
    ],
)
def test_selector_matches(selector: Any, labels: dict[str, str], want: bool) -> None:
    """LabelSelectorAsSelector: nil is Nothing, {} is Everything, requirements are ANDed."""
    assert compile_label_selector(selector).matches(labels) is want


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
            '"Gt" is not a valid label selector operator',
            id="gt-not-a-label-selector-operator",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "In"}]},
            "values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty",
            id="in-without-values",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
            'values: Invalid value: ["x"]: values set must be empty for exists and does not exist',
            id="exists-with-values",
        ),
        pytest.param(
            {"matchLabels": {"bad key": "v"}},
            'key: Invalid value: "bad key": name part must consist of alphanumeric characters',
            id="bad-key",
        ),
    ],
)
def test_selector_errors_use_upstream_text(selector: Any, message: str) -> None:
    """A selector the API would refuse raises SelectorError with apimachinery's wording."""
    with pytest.raises(SelectorError) as err:
        compile_label_selector(selector)
    assert str(err.value).startswith(message)


def test_with_requirements_ands_more() -> None:
    """matchLabelKeys-style merging narrows the selector; Nothing stays Nothing."""
    sel = compile_label_selector({"matchLabels": {"app": "web"}}).with_requirements([("hash", "In", ["1"])])
    assert sel.matches({"app": "web", "hash": "1"})
    assert not sel.matches({"app": "web", "hash": "2"})
    assert not compile_label_selector(None).with_requirements([("hash", "In", ["1"])]).matches({"hash": "1"})


def test_selector_from_set() -> None:
    """SelectorFromSet requires every pair; the empty set matches everything."""
    assert selector_from_set({"a": "1", "b": "2"}).matches({"a": "1", "b": "2", "c": "3"})
    assert not selector_from_set({"a": "1", "b": "2"}).matches({"a": "1"})
    assert selector_from_set({}).matches({})


@pytest.mark.parametrize(
    ("key", "errors"),
    [
        pytest.param("app.kubernetes.io/name", [], id="prefixed"),
        pytest.param("a" * 64, ["name part must be no more than 63 bytes"], id="name-too-long"),
        pytest.param("/name", ["prefix part must be non-empty"], id="empty-prefix"),
        pytest.param("Example.com/x", ["prefix part a lowercase RFC 1123 subdomain"], id="uppercase-prefix"),
    ],
)
def test_label_key_errors(key: str, errors: list[str]) -> None:
    """content.IsLabelKey messages (v0.37: lengths in bytes)."""
    got = label_key_errors(key)
    assert len(got) == len(errors)
    for g, want in zip(got, errors, strict=True):
        assert g.startswith(want)


def test_label_value_errors() -> None:
    """content.IsLabelValue: empty is fine, 64 bytes or a leading dash is not."""
    assert label_value_errors("") == []
    assert label_value_errors("v" * 64) == ["must be no more than 63 bytes"]
    assert label_value_errors("-x")[0].startswith("a valid label must be an empty string")
