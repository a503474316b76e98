"""DefaultBinder: binds the pod through the handle's binder (pods/binding in a cluster)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from scheduler.framework.interface import BindPlugin, CycleState, Handle
from scheduler.framework.status import Status
from scheduler.framework.types import PodInfo

NAME = "DefaultBinder"


class DefaultBinder(BindPlugin):
    """Writes the binding; the adapter behind the handle decides where it goes."""

    name: ClassVar[str] = NAME

    def __init__(self, handle: Handle) -> None:
        self._handle = handle

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        status = await self._handle.binder.bind(pod, node_name)
        return status.with_plugin(NAME) if status is not None else None


def new(raw_args: Mapping[str, Any] | None, handle: Handle) -> DefaultBinder:
    return DefaultBinder(handle)
