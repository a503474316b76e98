"""Out-of-tree-style plugins used by tests/framework/test_plugin_api.py (loaded with `--plugin MODULE:CLASS`).

They only use the public surface (`scheduler.framework`), as a plugin installed from outside would.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from scheduler.framework import (
    BindPlugin,
    CycleState,
    FilterPlugin,
    Handle,
    NodeInfo,
    ObjectEventHandler,
    PermitPlugin,
    PodInfo,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ReservePlugin,
    ScorePlugin,
    Status,
    unschedulable,
)
from scheduler.framework import Code as FrameworkCode

CALLS: list[tuple[str, str]] = []
"""(extension point, pod name) in call order, shared by every Recorder instance."""


class Recorder(
    PreEnqueuePlugin,
    PreFilterPlugin,
    FilterPlugin,
    PostFilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    ReservePlugin,
    PermitPlugin,
    PreBindPlugin,
    BindPlugin,
    PostBindPlugin,
):
    """Implements every extension point; records each call. Label behaviour on the pod:
    `gate=closed` → PreEnqueue rejects; `only=<node>` → Filter keeps that node; `fail-reserve` → Reserve
    rejects; `raise=<Point>` → that point raises; `garbage=<Point>` → that point returns garbage."""

    name: ClassVar[str] = "Recorder"

    def __init__(self, args: Mapping[str, Any] | None, handle: Handle) -> None:
        self.args = dict(args or {})
        self.handle = handle
        self.bound: list[tuple[str, str]] = []

    @staticmethod
    def parse_args(raw: Mapping[str, Any] | None) -> dict[str, Any]:
        args = dict(raw or {})
        unknown = set(args) - {"preferNode"}
        if unknown:
            raise ValueError(f"unknown field {sorted(unknown)[0]!r}")
        if "preferNode" in args and not isinstance(args["preferNode"], str):
            raise ValueError("preferNode: must be a string")
        return args

    def _hook(self, point: str, pod: PodInfo) -> None:
        CALLS.append((point, pod.name))
        if pod.labels.get("raise") == point:
            raise RuntimeError(f"boom in {point}")

    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        self._hook("PreEnqueue", pod)
        return unschedulable("gate closed") if pod.labels.get("gate") == "closed" else None

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        self._hook("PreFilter", pod)
        if pod.labels.get("garbage") == "PreFilter":
            return "nonsense"  # type: ignore[return-value]
        return None, None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        only = pod.labels.get("only")
        return None if not only or node.name == only else unschedulable("not the chosen one")

    def filter_batch(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[Status | None]:
        self._hook("Filter", pod)
        if pod.labels.get("garbage") == "Filter":
            return [None]  # wrong length
        return [self.filter(state, pod, n) for n in nodes]

    def post_filter(
        self, state: CycleState, pod: PodInfo, node_to_status: Mapping[str, Status]
    ) -> tuple[PostFilterResult | None, Status | None]:
        self._hook("PostFilter", pod)
        return None, unschedulable("recorder cannot help")

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        self._hook("PreScore", pod)
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return 100 if node.name == self.args.get("preferNode") else 0

    def score_batch(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[int]:
        self._hook("Score", pod)
        if pod.labels.get("garbage") == "Score":
            return ["high" for _ in nodes]  # type: ignore[misc]
        return [self.score(state, pod, n) for n in nodes]

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        self._hook("Reserve", pod)
        return unschedulable("reserve refused") if "fail-reserve" in pod.labels else None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        CALLS.append(("Unreserve", pod.name))

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        self._hook("Permit", pod)
        return None, 0.0

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        self._hook("PreBind", pod)
        return None

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        self._hook("Bind", pod)
        return Status(FrameworkCode.SKIP)  # let DefaultBinder bind

    def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        self._hook("PostBind", pod)
        self.bound.append((pod.name, node_name))


class ConfigMapGate(PermitPlugin, ObjectEventHandler):
    """Permit: pods labelled gate.example.com/configmap=<name> wait until that ConfigMap (same namespace)
    has data.go == "true"; a ConfigMap saying "no" rejects them."""

    name: ClassVar[str] = "ConfigMapGate"
    object_kinds: ClassVar[tuple[str, ...]] = ("ConfigMap",)
    LABEL: ClassVar[str] = "gate.example.com/configmap"

    def __init__(self, args: Mapping[str, Any] | None, handle: Handle) -> None:
        self.handle = handle
        self.timeout = float((args or {}).get("timeoutSeconds", 60))

    @staticmethod
    def parse_args(raw: Mapping[str, Any] | None) -> dict[str, Any]:
        args = dict(raw or {})
        if not isinstance(args.get("timeoutSeconds", 60), int | float):
            raise ValueError("timeoutSeconds: must be a number")
        return args

    def _verdict(self, namespace: str, name: str) -> str:
        cm = self.handle.objects.get("ConfigMap", namespace, name)
        return str(((cm or {}).get("data") or {}).get("go", ""))

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        gate = pod.labels.get(self.LABEL)
        if not gate:
            return None, 0.0
        verdict = self._verdict(pod.namespace, gate)
        if verdict == "true":
            return None, 0.0
        if verdict == "no":
            return unschedulable(f"configmap {gate} says no"), 0.0
        return Status(FrameworkCode.WAIT), self.timeout

    def on_object_event(self, kind: str, event_type: str | None, obj: Mapping[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        for waiting in self.handle.iterate_over_waiting_pods():
            pod = waiting.pod
            if pod.namespace != meta.get("namespace") or pod.labels.get(self.LABEL) != meta.get("name"):
                continue
            verdict = self._verdict(pod.namespace, str(meta.get("name")))
            if verdict == "true":
                waiting.allow(self.name)
            elif verdict == "no":
                waiting.reject(self.name, f"configmap {meta.get('name')} says no")


class BrokenAtStart(FilterPlugin):
    """A plugin whose constructor fails: startup must end with one clear line."""

    name: ClassVar[str] = "BrokenAtStart"

    def __init__(self, args: Mapping[str, Any] | None, handle: Handle) -> None:
        raise RuntimeError("no license key")

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return None


NOT_A_PLUGIN = 42
