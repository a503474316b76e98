"""Tests of the framework's core records: quantities, pod requests, statuses."""
