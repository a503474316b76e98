"""Values in explanations are YAML flow style a manifest author can paste back, never Python reprs."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from scheduler.framework.yaml_flow import flow, scalar


@pytest.mark.parametrize(
    ("value", "text"),
    [
        pytest.param(["arm64"], "[arm64]", id="list"),
        pytest.param(["a", "b-c", "x.io/y"], "[a, b-c, x.io/y]", id="plain-strings"),
        pytest.param([], "[]", id="empty-list"),
        pytest.param({"app": "web", "tier": ["a"]}, "{app: web, tier: [a]}", id="mapping"),
        pytest.param(["yes", "On", "null", "~"], '["yes", "On", "null", "~"]', id="yaml-1.1-words-quoted"),
        pytest.param(["1.5", "200002", "017"], '["1.5", "200002", "017"]', id="numbers-as-strings-quoted"),
        pytest.param(["a: b", "*x", "", "#c"], '["a: b", "*x", "", "#c"]', id="indicators-quoted"),
        pytest.param([3, True, None], "[3, true, null]", id="non-strings"),
        pytest.param({"b", "a"}, "[a, b]", id="set-sorted"),
    ],
)
def test_flow(value: Any, text: str) -> None:
    """Each value prints as YAML flow style, quoting only what YAML 1.1 would read as something else."""
    assert flow(value) == text


@given(st.text(st.characters(codec="utf-8", exclude_categories=("Cc", "Cs", "Zl", "Zp", "Co", "Cn"))))
def test_scalars_read_back_as_the_same_string(text: str) -> None:
    """Whatever the string, YAML 1.1 (PyYAML, as kubectl's reader) reads the printed scalar back unchanged."""
    assert yaml.safe_load(f"v: {scalar(text)}")["v"] == text
