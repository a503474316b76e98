"""Go's time.Duration.String(), for messages that print a duration with %v exactly as kube-scheduler does.

Upstream's Permit timeout message is `rejected due to timeout after waiting %v at plugin %v`: a 1 s wait
reads `1s`, a minute `1m0s`, half a second `500ms` (never Python's `1.0s` or `60.0`).
"""

from __future__ import annotations

_SECOND = 1_000_000_000


def _fraction(value: int, digits: int) -> str:
    """`value` divided by 10**digits, printed like Go's fmtFrac/fmtInt: trailing zeros and a bare `.` dropped."""
    whole, frac = divmod(value, 10**digits)
    text = f"{frac:0{digits}d}".rstrip("0")
    return f"{whole}.{text}" if text else str(whole)


def format_nanoseconds(ns: int) -> str:
    """time.Duration(ns).String(): `0s`, `999ns`, `1.5µs`, `250ms`, `1s`, `1m0s`, `1h30m0s`, `-2s`."""
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    u = abs(ns)
    if u < _SECOND:
        if u < 1_000:
            return f"{sign}{u}ns"
        if u < 1_000_000:
            return f"{sign}{_fraction(u, 3)}µs"
        return f"{sign}{_fraction(u, 6)}ms"
    seconds, frac = divmod(u, _SECOND)
    minutes, secs = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    text = _fraction(secs * _SECOND + frac, 9) + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{text}"
    if minutes:
        return f"{sign}{minutes}m{text}"
    return f"{sign}{text}"


def format_seconds(seconds: float) -> str:
    """A duration given in seconds (a plugin's timeout), rounded to whole nanoseconds as Go stores it."""
    return format_nanoseconds(round(seconds * _SECOND))
