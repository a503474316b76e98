"""Status codes and the Status record every extension point returns (upstream framework.Status).

Success is spelled ``None`` on hot paths (like upstream's nil status) so a passing node costs no allocation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum


class Code(IntEnum):
    """Outcome of running a plugin, same meaning and order as kube-scheduler's framework.Code."""

    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5
    PENDING = 6


@dataclass(slots=True)
class Status:
    """A plugin's verdict: a code, the user-facing reasons and the plugin that produced it."""

    code: Code
    reasons: tuple[str, ...] = ()
    plugin: str = ""
    error: BaseException | None = field(default=None, compare=False)

    def message(self) -> str:
        """The reasons joined the way upstream's Status.Message() joins them."""
        return ", ".join(self.reasons)

    def is_success(self) -> bool:
        return self.code == Code.SUCCESS

    def is_skip(self) -> bool:
        return self.code == Code.SKIP

    def is_rejected(self) -> bool:
        """True for Unschedulable, UnschedulableAndUnresolvable and Pending (a node or pod rejection)."""
        return self.code in _REJECTED

    def with_plugin(self, plugin: str) -> Status:
        """Return this status stamped with the plugin name (a copy when it already names another)."""
        if self.plugin == plugin:
            return self
        return Status(self.code, self.reasons, plugin, self.error)


_REJECTED = frozenset({Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING})


def unschedulable(*reasons: str, plugin: str = "") -> Status:
    """Shorthand for an Unschedulable status (preemption might help)."""
    return Status(Code.UNSCHEDULABLE, reasons, plugin)


def unresolvable(*reasons: str, plugin: str = "") -> Status:
    """Shorthand for UnschedulableAndUnresolvable (preemption cannot help)."""
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reasons, plugin)


def error_status(err: BaseException | str, plugin: str = "") -> Status:
    """An Error status carrying the exception text as its only reason."""
    if isinstance(err, BaseException):
        return Status(Code.ERROR, (str(err) or type(err).__name__,), plugin, err)
    return Status(Code.ERROR, (err,), plugin)


SKIP = Status(Code.SKIP)


def is_success(status: Status | None) -> bool:
    """None and Code.SUCCESS both mean success, as nil does upstream."""
    return status is None or status.code == Code.SUCCESS
