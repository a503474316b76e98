"""Run a module under cProfile timed by the process's CPU clock: `python -m bench.cpu_profile -o OUT -m MODULE
ARGS...` (what `python -m cProfile` does, with `time.process_time` as the timer).

cProfile's default timer is the wall clock, so on a shared machine every function's time includes the time the
process waited for a CPU (a `socket.send` that got preempted shows as milliseconds). The CPU clock charges a
function only for the CPU it used, which is what a comparison of CPU per pod needs. bench.e2e --profile uses it.
"""

from __future__ import annotations

import cProfile
import runpy
import sys
import time


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[0] != "-o" or argv[2] != "-m":
        print("usage: python -m bench.cpu_profile -o OUT -m MODULE [ARGS...]", file=sys.stderr)
        return 2
    out, module, args = argv[1], argv[3], argv[4:]
    sys.argv = [module, *args]
    profile = cProfile.Profile(time.process_time)
    code = 0
    try:
        profile.runcall(runpy.run_module, module, run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
    finally:
        profile.dump_stats(out)
    return code


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
