"""The import-linter contracts in pyproject.toml cover what they claim to: every in-tree plugin is in the
independence contract (a new plugin left out would be free to import the others), and nothing else is."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from scheduler.plugins.registry import REGISTRY

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
INDEPENDENCE = "Plugins are independent of each other: a plugin module never imports another plugin module"


def _contract(name: str) -> dict[str, Any]:
    with PYPROJECT.open("rb") as f:
        contracts = tomllib.load(f)["tool"]["importlinter"]["contracts"]
    matching = [c for c in contracts if c["name"] == name]
    assert len(matching) == 1, f"pyproject.toml has {len(matching)} contracts named {name!r}"
    return dict(matching[0])


def _plugin_module(cls: type) -> str:
    """The module or package under scheduler.plugins that holds a plugin class."""
    parts = cls.__module__.split(".")
    assert parts[:2] == ["scheduler", "plugins"], f"{cls.__name__} lives in {cls.__module__}"
    return ".".join(parts[:3])


def test_every_in_tree_plugin_is_independent_of_the_others() -> None:
    """The independence contract lists exactly the modules (or packages) of the registry's plugins."""
    contract = _contract(INDEPENDENCE)
    assert contract["type"] == "independence"
    listed = contract["modules"]
    assert len(listed) == len(set(listed)), "a module is listed twice"
    assert set(listed) == {_plugin_module(spec.cls) for spec in REGISTRY.values()}
