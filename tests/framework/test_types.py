"""Taints and tolerations as the framework's types read them (framework/types.py)."""

from __future__ import annotations

from scheduler.framework.types import Taint, find_untolerated_taint
from scheduler.testing import make_pod


def test_first_untolerated_taint_in_node_order() -> None:
    """The offending taint reported to logs/explain is the first one in spec.taints order."""
    taints = (Taint("z", "", "NoSchedule"), Taint("a", "", "NoExecute"))
    assert find_untolerated_taint(taints, ()) == taints[0]
    tol = make_pod().toleration("z", effect="NoSchedule").info().tolerations
    assert find_untolerated_taint(taints, tol) == taints[1]
    assert find_untolerated_taint((Taint("p", "", "PreferNoSchedule"),), ()) is None
