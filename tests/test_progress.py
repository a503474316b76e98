"""Progress lines: silent for a quick command, the current phase and every later one once it runs long."""

from __future__ import annotations

import io

from scheduler.progress import Progress


def test_a_quick_command_prints_nothing() -> None:
    """Done before the threshold: not a line."""
    out = io.StringIO()
    progress = Progress(out, after=60.0)
    progress.phase("parsing x.yaml (1.0 MB)")
    progress.done()
    assert out.getvalue() == ""


def test_a_long_command_prints_its_phases_once_past_the_threshold() -> None:
    """Past the threshold the phase it is in is printed (by the timer), then each new phase and the end."""
    out = io.StringIO()
    progress = Progress(out, after=0.0, prog="p")
    progress.phase("parsing x.yaml (224.0 MB)")
    progress._timer.join()  # the threshold has passed: the timer printed the phase under way
    progress.phase("checking 55,001 objects as kube-apiserver would")
    progress.done()
    lines = [line.rsplit(" (", 1)[0] for line in out.getvalue().splitlines()]
    assert lines == [
        "p: parsing x.yaml (224.0 MB)",
        "p: checking 55,001 objects as kube-apiserver would",
        "p: done",
    ]


def test_a_phase_named_after_the_threshold_is_printed_at_once() -> None:
    """A slow read before the first phase (stdin, a slow disk) does not keep the command silent."""
    out = io.StringIO()
    progress = Progress(out, after=0.0, prog="p")
    progress._timer.join()
    progress.phase("parsing - (500.0 MB)")
    progress.done()
    assert [line.rsplit(" (", 1)[0] for line in out.getvalue().splitlines()] == ["p: parsing - (500.0 MB)", "p: done"]
