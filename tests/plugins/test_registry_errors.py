"""Plugin loading fails loudly and precisely: two distributions cannot both provide a plugin name, a broken
entry point costs a warning until a profile uses it, and a class that misspells its extension point's
method is refused at load, naming the method.

Installed distributions are real ones: a `*.dist-info` directory (METADATA and entry_points.txt) and a
module in a temporary directory put on sys.path, which importlib.metadata reads as pip's installs.
"""

from __future__ import annotations

import logging
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from scheduler.config.errors import ConfigError
from scheduler.config.load import load_config
from scheduler.framework import CycleState, FilterPlugin, NodeInfo, PodInfo, ReservePlugin, Status
from scheduler.plugins.registry import PluginLoadError, PluginRegistry
from scheduler.testing import configuration

FILTER_MODULE = """
from scheduler.framework import FilterPlugin

class {cls}(FilterPlugin):
    name = "{name}"

    def __init__(self, args, handle):
        pass

    def filter(self, state, pod, node):
        return None
"""


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A directory on sys.path where tests install distributions; their modules are forgotten afterwards."""
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        if name.startswith("dist_"):
            del sys.modules[name]


def install(site: Path, dist: str, module: str, source: str, entry_points: dict[str, str]) -> None:
    """Install a distribution `dist` 1.0 with `module` and its pyscheduler.plugins entry points."""
    (site / f"{module}.py").write_text(textwrap.dedent(source))
    info = site / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    lines = "".join(f"{name} = {ref}\n" for name, ref in entry_points.items())
    (info / "entry_points.txt").write_text(f"[pyscheduler.plugins]\n{lines}")


def test_two_distributions_with_one_plugin_name_are_refused_naming_both(site: Path) -> None:
    """Team A's and team B's packages both advertise TeamMatch: neither silently wins."""
    install(site, "team-a-plugins", "dist_a", FILTER_MODULE.format(cls="TeamMatch", name="TeamMatch"),
            {"TeamMatch": "dist_a:TeamMatch"})
    install(site, "team-b-plugins", "dist_b", FILTER_MODULE.format(cls="TeamMatch", name="TeamMatch"),
            {"TeamMatch": "dist_b:TeamMatch"})
    with pytest.raises(PluginLoadError) as err:
        PluginRegistry.with_out_of_tree()
    message = str(err.value)
    assert message.startswith("plugin 'TeamMatch' is provided by two installed distributions: ")
    assert "team-a-plugins 1.0 (TeamMatch = dist_a:TeamMatch)" in message
    assert "team-b-plugins 1.0 (TeamMatch = dist_b:TeamMatch)" in message
    assert message.endswith("uninstall one of them or rename its entry point")


def test_a_broken_entry_point_is_a_warning_until_a_profile_enables_it(
    site: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A distribution whose module fails to import: the registry still builds (a warning naming it), the
    default profile loads; enabling it is a configuration error naming the field and the cause."""
    install(site, "broken-plugins", "dist_broken", "raise ImportError('needs libfoo')\n",
            {"Broken": "dist_broken:Broken"})
    good = FILTER_MODULE.format(cls="Good", name="Good")
    install(site, "good-plugins", "dist_good", good, {"Good": "dist_good:Good"})
    with caplog.at_level(logging.WARNING, logger="pyscheduler.plugins"):
        registry = PluginRegistry.with_out_of_tree()
    assert registry["Good"].cls.__name__ == "Good"
    where = "entry point Broken = dist_broken:Broken (pyscheduler.plugins) of broken-plugins 1.0"
    [warning] = [r.getMessage() for r in caplog.records]
    assert warning == (
        f"plugin entry point ignored: {where}: cannot load: ImportError: needs libfoo "
        "(an error only if a profile enables it)"
    )
    load_config(None, registry.keys(), registry.parse_args, implements=registry.implements)
    enabling = configuration({"multiPoint": {"enabled": [{"name": "Broken"}]}})
    with pytest.raises(ConfigError) as err:
        load_config(enabling, registry.keys(), registry.parse_args, implements=registry.implements)
    assert str(err.value) == (
        f'profiles[0].pluginConfig: default args of plugin "Broken": {where}: cannot load: ImportError: needs libfoo'
    )


class Misspelt(FilterPlugin):
    """def filtr: never called."""

    name = "Misspelt"

    def filtr(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return None


class HalfReserve(ReservePlugin):
    """reserve without unreserve: an undo that would fail on every rollback."""

    name = "HalfReserve"

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        return None


@pytest.mark.parametrize(
    ("cls", "message"),
    [
        pytest.param(
            Misspelt,
            "plugin Misspelt: plugin class Misspelt derives from FilterPlugin but does not define `def filter` or "
            "`def filter_batch` (a misspelt method is never called)",
            id="filter",
        ),
        pytest.param(
            HalfReserve,
            "plugin HalfReserve: plugin class HalfReserve derives from ReservePlugin but does not define "
            "`def unreserve` (a misspelt method is never called)",
            id="unreserve",
        ),
    ],
)
def test_a_class_that_defines_no_method_of_its_extension_point_is_refused(cls: type, message: str) -> None:
    """Refused at load, naming the method to define, instead of failing every pod with an empty message."""
    with pytest.raises(PluginLoadError) as err:
        PluginRegistry.with_out_of_tree(entry_points=False, plugins=[cls])
    assert str(err.value) == message


def test_the_same_check_applies_to_installed_entry_points(site: Path, caplog: pytest.LogCaptureFixture) -> None:
    """An installed class with `def filtr` is a broken entry point: warned about, refused when enabled."""
    source = FILTER_MODULE.format(cls="Typo", name="Typo").replace("def filter(", "def filtr(")
    install(site, "typo-plugins", "dist_typo", source, {"Typo": "dist_typo:Typo"})
    with caplog.at_level(logging.WARNING, logger="pyscheduler.plugins"):
        registry = PluginRegistry.with_out_of_tree()
    with pytest.raises(PluginLoadError, match="derives from FilterPlugin but does not define `def filter`"):
        registry["Typo"]
