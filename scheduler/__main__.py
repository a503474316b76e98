"""`python -m scheduler` is the `pyscheduler` command."""

from scheduler.cli import main

raise SystemExit(main())
