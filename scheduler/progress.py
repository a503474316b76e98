"""Progress lines on stderr for commands that can run long on big input (`simulate` of a 200 MB dump).

Quiet for the common small file: nothing is printed until the command has run `after` seconds; then the
phase it is in, and each later phase, get one line with the time elapsed. A timer thread prints the first
line, so it appears while a long parse is still running (at the latest when the parser lets go of the GIL).
"""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO


class Progress:
    """`phase("parsing x.yaml")` as work goes on; `done()` at the end (prints the total once anything was)."""

    def __init__(self, stream: TextIO | None = None, after: float = 2.0, prog: str = "pyscheduler") -> None:
        self._stream = stream if stream is not None else sys.stderr
        self._prog = prog
        self._start = time.monotonic()
        self._phase = ""
        self._shown = False
        self._due = False
        self._lock = threading.Lock()
        self._timer = threading.Timer(after, self._show)
        self._timer.daemon = True
        self._timer.start()

    def phase(self, text: str) -> None:
        with self._lock:
            self._phase = text
            if self._shown:
                self._print(text)
            elif self._due:  # the threshold passed before any phase was named
                self._shown = True
                self._print(text)

    def done(self, text: str = "done") -> None:
        self._timer.cancel()
        with self._lock:
            if self._shown:
                self._print(text)
            self._phase = ""

    def _show(self) -> None:
        with self._lock:
            self._due = True
            if self._phase and not self._shown:
                self._shown = True
                self._print(self._phase)

    def _print(self, text: str) -> None:
        elapsed = time.monotonic() - self._start
        print(f"{self._prog}: {text} ({elapsed:.1f} s)", file=self._stream, flush=True)
