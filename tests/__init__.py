"""pyscheduler's tests: unit tests beside the real-cluster harness (cluster/) and e2e tests (e2e/)."""
