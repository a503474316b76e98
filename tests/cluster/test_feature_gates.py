"""docs/feature-gates.md against the pinned release's own source: every default-on gate and every gate the
scheduler reads is listed with its true state, and each verdict is one pyscheduler can stand behind.

The source is k8s.io/kubernetes (and component-helpers) of tests/cluster/VERSION in the Go module cache,
which tests/cluster/build.sh fills. Without Go or the modules these tests are skipped, under CI they fail
(tests/e2e/tools.py's rule). A new release that turns a gate on, flips a listed one, or adds one the
scheduler reads fails here until the table says what pyscheduler does about it.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from scheduler.core.unsupported import UNSUPPORTED
from scheduler.framework.declared_features import FEATURES
from scheduler.release import UPSTREAM_RELEASE
from tests.cluster.harness import pinned_release
from tests.e2e.tools import missing_programs, require

DOC = Path(__file__).resolve().parents[2] / "docs" / "feature-gates.md"
SCHEDULING_HEADER = "| Gate | v1.37.2 | What it changes for a scheduler | pyscheduler | How it is proven |"
OTHER_HEADER = "| Gate | v1.37.2 | Whose | pyscheduler |"
VERDICTS = ("does", "does not", "fail-closed", "n/a")

Version = tuple[int, ...]


def _version(text: str) -> Version:
    return tuple(int(p) for p in text.split("."))


# ---------------------------------------------------------------------------------------------------------
# kube_features.go


@dataclass(frozen=True, slots=True)
class GateSpec:
    """One `{Version: ..., Default: ..., PreRelease: ...}` entry of a gate's VersionedSpecs."""

    version: Version
    default: bool
    stage: str
    locked: bool = False
    min_compatibility: Version | None = None


_GATE = re.compile(r"^\t(\w+): \{\n(.*?)^\t\},", re.M | re.S)
_SPEC = re.compile(r"\{(Version: [^{}]*)\}")


def parse_gates(source: str) -> dict[str, list[GateSpec]]:
    """The `defaultVersionedKubernetesFeatureGates` map of kube_features.go: gate -> its specs in order."""
    start = source.index("var defaultVersionedKubernetesFeatureGates")
    body = source[start : source.index("\n}\n", start)]
    gates: dict[str, list[GateSpec]] = {}
    for name, block in _GATE.findall(body):
        specs = []
        for fields in _SPEC.findall(block):
            version = re.match(r'Version: version\.MustParse\("([\d.]+)"\)', fields)
            default = re.search(r"Default: (true|false)", fields)
            stage = re.search(r"PreRelease: featuregate\.(\w+)", fields)
            assert version and default and stage, f"{name}: cannot read {fields!r}"
            min_compat = re.search(r'MinCompatibilityVersion: version\.MustParse\("([\d.]+)"\)', fields)
            specs.append(
                GateSpec(
                    _version(version.group(1)),
                    default.group(1) == "true",
                    stage.group(1),
                    "LockToDefault: true" in fields,
                    _version(min_compat.group(1)) if min_compat else None,
                )
            )
        assert specs and block.count("{Version:") == len(specs), f"{name}: cannot read its specs"
        gates[name] = specs
    return gates


def effective(specs: list[GateSpec], emulation: Version) -> GateSpec:
    """featureSpecAtEmulationAndMinCompatVersion: the last spec not newer than the emulated version whose
    MinCompatibilityVersion the default minimum compatibility (one minor before) reaches; else PreAlpha, off."""
    min_compat = (emulation[0], emulation[1] - 1)
    for spec in reversed(specs):
        if spec.version > emulation:
            continue
        if spec.min_compatibility is not None and min_compat < spec.min_compatibility:
            continue
        return spec
    return GateSpec((0, 0), False, "PreAlpha")


def state_text(spec: GateSpec) -> str:
    """How the table states a gate: `Beta, on`, `GA, on, locked`, `Alpha, off`."""
    return f"{spec.stage}, {'on' if spec.default else 'off'}" + (", locked" if spec.locked else "")


@pytest.mark.parametrize(
    ("specs", "expected"),
    [
        pytest.param([GateSpec((1, 35), False, "Alpha"), GateSpec((1, 36), True, "Beta")], "Beta, on",
                     id="last-spec-not-newer"),
        pytest.param([GateSpec((1, 36), True, "Beta"), GateSpec((1, 38), True, "GA", True)], "Beta, on",
                     id="future-spec-ignored"),
        pytest.param([GateSpec((1, 37), False, "Beta"), GateSpec((1, 37), True, "Beta", False, (1, 37))],
                     "Beta, off", id="min-compatibility-not-reached"),
        pytest.param([GateSpec((1, 36), False, "Beta"), GateSpec((1, 36), True, "Beta", False, (1, 36))],
                     "Beta, on", id="min-compatibility-reached"),
        pytest.param([GateSpec((1, 33), True, "GA", True)], "GA, on, locked", id="locked"),
        pytest.param([GateSpec((1, 38), False, "Alpha")], "PreAlpha, off", id="not-yet"),
    ],
)
def test_gate_state_resolution(specs: list[GateSpec], expected: str) -> None:
    """A gate's state at v1.37 is resolved as component-base's featuregate resolves it."""
    assert state_text(effective(specs, (1, 37))) == expected


def test_parse_gates_reads_every_field() -> None:
    """The parser reads versions, defaults, stages, locks and minimum compatibility versions."""
    source = (
        "var defaultVersionedKubernetesFeatureGates = map[featuregate.Feature]featuregate.VersionedSpecs{\n"
        "\tA: {\n"
        '\t\t{Version: version.MustParse("1.35"), Default: false, PreRelease: featuregate.Beta},\n'
        '\t\t{Version: version.MustParse("1.35"), Default: true, PreRelease: featuregate.Beta, '
        'MinCompatibilityVersion: version.MustParse("1.35")},\n'
        "\t},\n"
        "\tB: {\n"
        '\t\t{Version: version.MustParse("1.30"), Default: true, PreRelease: featuregate.GA, LockToDefault: true},'
        " // remove in 1.40\n"
        "\t},\n"
        "}\n"
    )
    assert parse_gates(source) == {
        "A": [GateSpec((1, 35), False, "Beta"), GateSpec((1, 35), True, "Beta", False, (1, 35))],
        "B": [GateSpec((1, 30), True, "GA", True)],
    }


# ---------------------------------------------------------------------------------------------------------
# The pinned release's source


@cache
def _module(name: str) -> Path:
    """k8s.io/<name>@<version of the pinned release> in the Go module cache (skip, or fail under CI)."""
    require(missing_programs({"go": "golang-go"}), needed_for="reading the pinned release's source")
    modcache = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True).stdout.strip()
    release = pinned_release()
    version = release if name == "kubernetes" else "v0." + release.split(".", 1)[1]
    root = Path(modcache) / f"k8s.io/{name}@{version}"
    if not root.is_dir():
        message = f"{root} is missing: run bash tests/cluster/build.sh (it downloads the pinned release)"
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return root


@cache
def release_gates() -> dict[str, GateSpec]:
    """Every gate of the pinned release with its effective spec."""
    source = (_module("kubernetes") / "pkg/features/kube_features.go").read_text(encoding="utf-8")
    emulation = _version(pinned_release().lstrip("v").rsplit(".", 1)[0])
    return {name: effective(specs, emulation) for name, specs in parse_gates(source).items()}


@cache
def scheduler_gates() -> frozenset[str]:
    """Gates named `features.<Gate>` in the non-test Go code under pkg/scheduler."""
    names: set[str] = set()
    for path in (_module("kubernetes") / "pkg/scheduler").rglob("*.go"):
        if not path.name.endswith("_test.go"):
            names.update(re.findall(r"\bfeatures\.([A-Z]\w+)", path.read_text(encoding="utf-8")))
    return frozenset(names & release_gates().keys())


# ---------------------------------------------------------------------------------------------------------
# The table


@dataclass(frozen=True, slots=True)
class Row:
    gate: str
    state: str
    verdict: str
    cell: str  # the whole pyscheduler cell


def _table(header: str) -> list[Row]:
    lines = DOC.read_text(encoding="utf-8").splitlines()
    start = lines.index(header) + 2  # the header and its |---| line
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        verdict_cell = cells[3]
        match = re.match(r"\*\*(.+?)\*\*", verdict_cell)
        rows.append(Row(cells[0], cells[1], match.group(1) if match else verdict_cell, verdict_cell))
    return rows


SCHEDULING = _table(SCHEDULING_HEADER)
OTHER = _table(OTHER_HEADER)
ALL = SCHEDULING + OTHER


def test_each_gate_is_listed_once() -> None:
    """No gate appears twice across the two tables."""
    names = [r.gate for r in ALL]
    assert len(names) == len(set(names)), sorted({n for n in names if names.count(n) > 1})


def test_verdicts_are_known_and_consistent() -> None:
    """Every verdict is one the doc defines; off gates are n/a; a fail-closed entry exists."""
    entries = {f.feature for f in UNSUPPORTED}
    for row in ALL:
        assert row.verdict in VERDICTS, f"{row.gate}: unknown verdict {row.verdict!r}"
        if row.state.endswith(", off"):
            assert row.verdict == "n/a", f"{row.gate} is off by default: its verdict is n/a"
        if row.verdict == "fail-closed":
            entry = re.search(r"\(`(\w+)`\)", row.cell)
            assert entry and entry.group(1) in entries, f"{row.gate}: no fail-closed entry {row.cell!r}"
    assert {r.verdict for r in OTHER} == {"n/a"}


def test_every_default_on_gate_is_listed() -> None:
    """A gate the pinned release turns on by default must be in one of the tables."""
    on = {name for name, spec in release_gates().items() if spec.default}
    assert sorted(on - {r.gate for r in ALL}) == []


def test_every_gate_the_scheduler_reads_is_in_the_scheduling_table() -> None:
    """Whatever its state, a gate pkg/scheduler reads belongs to the first table."""
    assert sorted(scheduler_gates() - {r.gate for r in SCHEDULING}) == []


def test_listed_states_are_the_releases() -> None:
    """Each listed gate exists in the pinned release with exactly the state the table gives it."""
    gates = release_gates()
    wrong = {
        r.gate: (r.state, state_text(gates[r.gate]) if r.gate in gates else "no such gate")
        for r in ALL
        if r.gate not in gates or r.state != state_text(gates[r.gate])
    }
    assert wrong == {}, "table state vs the release's: " + repr(wrong)


def test_release_is_stated_once() -> None:
    """scheduler/release.py and tests/cluster/VERSION (the control plane and the upstream binary) agree."""
    assert pinned_release() == UPSTREAM_RELEASE


def test_declared_feature_registry_is_upstreams() -> None:
    """Our NodeDeclaredFeatures registry is component-helpers': the same feature names, the same ones
    inferring something for scheduling, every MaxVersion nil."""
    root = _module("component-helpers") / "nodedeclaredfeatures" / "features"
    registry = (root / "registry.go").read_text(encoding="utf-8")
    entries = re.search(r"AllFeatures = \[\]types\.Feature\{(.*?)\n\}", registry, re.S)
    assert entries is not None
    assert len(re.findall(r"^\t\w+\.\w+,$", entries.group(1), re.M)) == len(FEATURES)
    upstream: dict[str, bool] = {}
    for path in root.rglob("*.go"):
        if path.name.endswith("_test.go") or path.name == "registry.go":
            continue
        text = path.read_text(encoding="utf-8")
        name_const = re.search(r"\) Name\(\) string \{\s*return (\w+)\s*\}", text)
        assert name_const, path
        value = re.search(rf"\b{name_const.group(1)}\s*(?:featuregate\.Feature\s*)?=\s*\"(\w+)\"", text)
        assert value, f"{path}: the value of {name_const.group(1)}"
        infer = re.search(r"\) InferForScheduling\(podInfo \*types\.PodInfo\) bool \{(.*?)\n\}", text, re.S)
        assert infer, path
        body = "\n".join(line for line in infer.group(1).splitlines() if not line.strip().startswith("//"))
        upstream[value.group(1)] = body.strip() != "return false"
        max_version = re.search(r"\) MaxVersion\(\) \*version\.Version \{\s*return nil\s*\}", text)
        assert max_version, f"{path}: MaxVersion is no longer nil: give the entry its window"
    ours = {f.name: f.infer_for_scheduling.__name__ != "_never" for f in FEATURES}
    assert ours == upstream


def test_the_stated_verdict_counts_are_the_tables() -> None:
    """The counts the doc's summary gives are those of its tables."""
    def count(verdict: str) -> int:
        return sum(r.verdict == verdict for r in SCHEDULING)

    off = sum(r.state.endswith(", off") for r in SCHEDULING)
    summary = (
        f"Verdict counts: gates that touch scheduling: {len(SCHEDULING)} (does {count('does')}, does not "
        f"{count('does not')}, n/a {count('n/a')} of which {off} are off by default); other gates on by default: "
        f"{len(OTHER)} (n/a)."
    )
    assert count("fail-closed") == 0, "give the summary a fail-closed count"
    assert summary in " ".join(DOC.read_text(encoding="utf-8").split())
