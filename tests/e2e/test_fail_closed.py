"""Fail closed on a real API server: the guard's list is empty, so nothing is left to refuse end to end.

The fail-closed list (scheduler/core/unsupported.py) has had no entry since DynamicResources landed
(spec.resourceClaims was the last; tests/e2e/test_dra.py shows such pods scheduled like upstream's). Its
mechanism is tested without a server in tests/core/test_unsupported.py with entries of its own. The e2e
case that created one pod per entry, checked it stayed Pending with FailedScheduling and PodScheduled naming
the field while an ordinary pod bound, is in this file's history (commit 962af52): a new entry brings it
back with a pod shape for that entry, which the test below demands.
"""

from __future__ import annotations

import pytest

from scheduler.core.unsupported import UNSUPPORTED

pytestmark = [pytest.mark.e2e]


def test_a_new_guard_entry_needs_its_e2e_case() -> None:
    """Empty since DynamicResources: an entry added without restoring the e2e case above fails here."""
    assert [f.feature for f in UNSUPPORTED] == [], "restore the e2e case of commit 962af52 for the new entries"
