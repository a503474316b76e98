"""The live-cluster adapter: kubernetes_asyncio for writes and LISTs, kopf for watches, aiohttp for endpoints.

`run.run()` wires a `scheduler.core.scheduler.Scheduler` to a real API server; `cli.run_command()` is what
`pyscheduler run` calls. Nothing in the core imports this package (import-linter contract).
"""
