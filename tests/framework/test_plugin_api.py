"""The public plugin API: out-of-tree plugins load through configuration alone, every extension point works
end to end, and a broken plugin costs one pod one attempt, never the scheduler."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from scheduler.config.errors import ConfigError
from scheduler.config.load import load_config
from scheduler.core.explain import explain_pod, render_text
from scheduler.framework.observer import Observer
from scheduler.plugins.registry import PluginLoadError, PluginRegistry
from scheduler.testing import SchedulerHarness, make_node, make_pod
from tests.framework import plugin_samples
from tests.framework.plugin_samples import CALLS

JSON = dict[str, Any]
SAMPLES = "tests.framework.plugin_samples"


class ErrorCounter(Observer):
    def __init__(self) -> None:
        self.errors: list[tuple[str, str]] = []

    def plugin_error(self, plugin: str, point: str) -> None:
        self.errors.append((plugin, point))


def config(plugins: JSON, plugin_config: list[JSON] | None = None) -> JSON:
    profile: JSON = {"schedulerName": "pyscheduler", "plugins": plugins}
    if plugin_config is not None:
        profile["pluginConfig"] = plugin_config
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration", "profiles": [profile]}


RECORDER_EVERYWHERE: JSON = {
    "multiPoint": {"enabled": [{"name": "Recorder", "weight": 5}]},
    "bind": {"enabled": [{"name": "Recorder"}, {"name": "DefaultBinder"}]},
}


def harness(
    raw: JSON, refs: tuple[str, ...] = (f"{SAMPLES}:Recorder",), observer: Observer | None = None
) -> SchedulerHarness:
    """The public harness with the sample plugins loaded like `--plugin`, over three plain nodes."""
    env = SchedulerHarness(raw, plugin_refs=refs, observer=observer)
    env.add(*(make_node(n) for n in ("n1", "n2", "n3")))
    return env


@pytest.fixture(autouse=True)
def _clear_calls() -> None:
    CALLS.clear()


# ---------------------------------------------------------------------------------------------------- loading


def test_plugin_reference_loads_and_is_enabled_by_configuration() -> None:
    """--plugin MODULE:CLASS makes the class known by its name; the config enables it and passes args."""
    env = harness(config(RECORDER_EVERYWHERE, [{"name": "Recorder", "args": {"preferNode": "n2"}}]))
    fwk = env.scheduler.profiles["pyscheduler"]
    recorder = fwk.plugins["Recorder"]
    assert isinstance(recorder, plugin_samples.Recorder) and recorder.args == {"preferNode": "n2"}
    assert [p.name for p in fwk.bind] == ["Recorder", "DefaultBinder"]
    assert fwk.score_weights["Recorder"] == 5


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        pytest.param("nomodule", "expected MODULE:CLASS", id="no-colon"),
        pytest.param("tests.framework.no_such_module:X", "cannot import tests.framework.no_such_module", id="import"),
        pytest.param(f"{SAMPLES}:Missing", "has no attribute Missing", id="attribute"),
        pytest.param(f"{SAMPLES}:NOT_A_PLUGIN", "expected a subclass of scheduler.framework.Plugin", id="not-plugin"),
        pytest.param("scheduler.plugins.node_ports:NodePorts", "'NodePorts' (", id="shadows-in-tree"),
    ],
)
def test_bad_plugin_references_name_the_flag(ref: str, message: str) -> None:
    with pytest.raises(PluginLoadError) as err:
        PluginRegistry.with_out_of_tree([ref], entry_points=False)
    assert message in str(err.value)


def test_args_errors_name_the_field() -> None:
    """The plugin's parse_args error comes back prefixed with the config path."""
    registry = PluginRegistry.with_out_of_tree([f"{SAMPLES}:Recorder"], entry_points=False)
    raw = config(RECORDER_EVERYWHERE, [{"name": "Recorder", "args": {"preferNode": 3}}])
    with pytest.raises(ConfigError, match=r"profiles\[0\]\.pluginConfig\[0\]\.args: preferNode: must be a string"):
        load_config(raw, registry.keys(), registry.parse_args, implements=registry.implements)


def test_plugin_failing_at_start_is_a_config_error() -> None:
    """A constructor that raises: ConfigError naming the plugin (the CLI prints it, exit 2)."""
    with pytest.raises(ConfigError, match="plugin 'BrokenAtStart' failed to start: RuntimeError: no license key"):
        harness(config({"multiPoint": {"enabled": [{"name": "BrokenAtStart"}]}}), (f"{SAMPLES}:BrokenAtStart",))


def test_entry_points_are_discovered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An installed distribution's `pyscheduler.plugins` entry point registers its plugin by name."""
    pkg = tmp_path / "ep_sample_plugin.py"
    pkg.write_text(
        textwrap.dedent(
            """
            from scheduler.framework import FilterPlugin

            class EpFilter(FilterPlugin):
                name = "EpFilter"

                def __init__(self, args, handle):
                    pass

                def filter(self, state, pod, node):
                    return None
            """
        )
    )
    dist = tmp_path / "ep_sample_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: ep-sample-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[pyscheduler.plugins]\nEpFilter = ep_sample_plugin:EpFilter\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = PluginRegistry.with_out_of_tree()
    assert registry["EpFilter"].cls.__name__ == "EpFilter"
    assert registry.implements("EpFilter", "filter") and not registry.implements("EpFilter", "score")
    sys.modules.pop("ep_sample_plugin", None)


# ---------------------------------------------------------------------------------------------- every point


async def test_every_extension_point_runs_in_order() -> None:
    """PreEnqueue → PreFilter → Filter → PreScore → Score → Reserve → Permit → PreBind → Bind → PostBind."""
    env = harness(config(RECORDER_EVERYWHERE, [{"name": "Recorder", "args": {"preferNode": "n2"}}]))
    pod = make_pod("p").obj()
    env.cluster.apply_pod(pod)
    await env.settle()
    assert env.node_of(pod) == "n2"  # the plugin's score decided (weight 5 x 100 beats the rest)
    points = [point for point, name in CALLS if name == "p"]
    assert points == [
        "PreEnqueue", "PreFilter", "Filter", "PreScore", "Score", "Reserve", "Permit", "PreBind", "Bind", "PostBind"
    ]
    assert env.scheduler.profiles["pyscheduler"].plugins["Recorder"].bound == [("p", "n2")]  # type: ignore[attr-defined]


async def test_pre_enqueue_gates_and_post_filter_runs_on_fit_error() -> None:
    """A PreEnqueue rejection keeps the pod out of the queue; a pod fitting nowhere reaches PostFilter, whose
    message is appended to the FitError like upstream's preemption suffix."""
    env = harness(config(RECORDER_EVERYWHERE))
    gated = make_pod("gated").labels(gate="closed").obj()
    stuck = make_pod("stuck").labels(only="nowhere").obj()
    env.cluster.apply_pod(gated)
    env.cluster.apply_pod(stuck)
    await env.settle()
    assert env.scheduler.queue.pending()["gated"] == 1
    assert ("PreFilter", "gated") not in CALLS
    assert ("PostFilter", "stuck") in CALLS
    message = env.cluster.conditions[stuck["metadata"]["uid"]].message
    assert message == (
        "0/3 nodes are available: 3 not the chosen one. "
        "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod., recorder cannot help"
    )  # PostFilter messages joined with ", " as upstream (DefaultPreemption first, in default order)


async def test_reserve_rejection_unreserves_and_requeues() -> None:
    env = harness(config(RECORDER_EVERYWHERE))
    pod = make_pod("r").label("fail-reserve", "yes").obj()
    env.cluster.apply_pod(pod)
    await env.settle()
    assert env.node_of(pod) is None
    assert ("Unreserve", "r") in CALLS
    cond = env.cluster.conditions[pod["metadata"]["uid"]]
    assert cond.reason == "Unschedulable" and cond.message.startswith("0/1 nodes are available: 1 reserve refused")


BROKEN = [("raise", p) for p in ("PreFilter", "Filter", "PreScore", "Score", "Reserve", "Permit", "PreBind")] + [
    ("garbage", p) for p in ("PreFilter", "Filter", "Score")  # the points whose results have a shape to check
]


@pytest.mark.parametrize(("kind", "point"), [pytest.param(k, p, id=f"{k}-{p}") for k, p in BROKEN])
async def test_a_broken_plugin_fails_one_pod_not_the_scheduler(kind: str, point: str) -> None:
    """Raising (or returning garbage) at any point: that pod gets SchedulerError and the error is counted;
    a healthy pod next to it is bound."""
    errors = ErrorCounter()
    env = harness(config(RECORDER_EVERYWHERE), observer=errors)
    bad = make_pod("bad").label(kind, point).obj()
    good = make_pod("good").obj()
    env.cluster.apply_pod(bad)
    env.cluster.apply_pod(good)
    await env.settle()
    assert env.node_of(good) is not None
    assert env.node_of(bad) is None
    cond = env.cluster.conditions[bad["metadata"]["uid"]]
    assert cond.reason == "SchedulerError", cond
    assert "Recorder" in cond.message
    assert ("Recorder", point) in errors.errors


# -------------------------------------------------------------------------------------------------- Permit


def gate_config() -> JSON:
    return config({"multiPoint": {"enabled": [{"name": "ConfigMapGate"}]}}, [
        {"name": "ConfigMapGate", "args": {"timeoutSeconds": 30}}
    ])


def configmap(name: str, go: str) -> JSON:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default",
                                                                  "resourceVersion": go}, "data": {"go": go}}


async def test_permit_wait_then_allow_through_the_handle() -> None:
    """A waiting pod is not bound until the ConfigMap flips; the plugin allows it via Handle waiting pods."""
    env = harness(gate_config(), (f"{SAMPLES}:ConfigMapGate",))
    pod = make_pod("w").label(plugin_samples.ConfigMapGate.LABEL, "release").obj()
    env.add(configmap("release", "wait"), pod)
    await env.settle(expire_permits=False)
    assert [w.pod.name for w in env.waiting()] == ["w"]
    assert env.node_of(pod) is None
    env.add(configmap("release", "true"))  # the object event allows it
    await env.settle()
    assert env.node_of(pod) is not None
    assert env.waiting() == []


async def test_permit_reject_through_the_handle() -> None:
    env = harness(gate_config(), (f"{SAMPLES}:ConfigMapGate",))
    pod = make_pod("w").label(plugin_samples.ConfigMapGate.LABEL, "release").obj()
    env.add(configmap("release", "wait"), pod)
    await env.settle(expire_permits=False)
    env.add(configmap("release", "no"))
    await env.settle(expire_permits=False)
    assert env.node_of(pod) is None
    cond = env.condition(pod)
    assert cond is not None and cond.reason == "Unschedulable"
    assert cond.message == "0/1 nodes are available: 1 configmap release says no."


async def test_permit_timeout_rejects() -> None:
    """Nobody allows it: the wait ends at the plugin's timeout on the scheduler's (fake) clock, with
    upstream's message and the duration printed as Go prints it."""
    raw = config({"multiPoint": {"enabled": [{"name": "ConfigMapGate"}]}}, [
        {"name": "ConfigMapGate", "args": {"timeoutSeconds": 90}}
    ])
    env = harness(raw, (f"{SAMPLES}:ConfigMapGate",))
    pod = make_pod("w").label(plugin_samples.ConfigMapGate.LABEL, "release").obj()
    env.cluster.apply_pod(pod)
    await env.settle()
    assert env.clock.now >= 90.0, "the clock moved to the deadline instead of waiting"
    message = env.cluster.conditions[pod["metadata"]["uid"]].message
    assert message == "0/1 nodes are available: 1 rejected due to timeout after waiting 1m30s at plugin ConfigMapGate."


async def test_explain_shows_the_out_of_tree_score() -> None:
    env = harness(config(RECORDER_EVERYWHERE, [{"name": "Recorder", "args": {"preferNode": "n3"}}]))
    pod = make_pod("e").info()
    expl = explain_pod(env.scheduler.profiles["pyscheduler"], pod, env.scheduler.cache.fresh_snapshot())
    assert expl.best == ["n3"]
    scores = {v.node: dict(v.scores)["Recorder"] for v in expl.nodes}
    assert scores == {"n1": 0, "n2": 0, "n3": 500}


@pytest.mark.parametrize("point", [pytest.param("PreFilter", id="pre-filter"), pytest.param("Filter", id="filter")])
async def test_explain_shows_a_plugin_error_as_an_error(point: str) -> None:
    """Issue 21: a plugin that raises fails the cycle. Explain says so with the scheduler's own message (the
    FailedScheduling note the pod got), and runs no preemption dry run and no fix search after it."""
    env = harness(config(RECORDER_EVERYWHERE))
    bad = make_pod("bad").label("raise", point)
    obj = bad.obj()
    env.cluster.apply_pod(obj)
    await env.settle()
    cond = env.cluster.conditions[obj["metadata"]["uid"]]
    assert cond.reason == "SchedulerError"
    expl = explain_pod(env.scheduler.profiles["pyscheduler"], bad.info(), env.scheduler.cache.fresh_snapshot())
    assert expl.error is not None and expl.error.plugin == "Recorder"
    assert expl.message == cond.message
    assert expl.preemption is None and expl.fixes == []
    doc = expl.to_json()
    assert doc["error"] == {"plugin": "Recorder", "message": cond.message}
    text = render_text(expl)
    assert "Error: plugin Recorder failed, so the whole scheduling cycle fails" in text
    assert f"  {cond.message}" in text.splitlines()
    assert "Preemption" not in text and "What would make it fit" not in text
