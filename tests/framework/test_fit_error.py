"""FitError message and event-note truncation, byte for byte as upstream framework/types.go and schedule_one.go."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler.framework.fit_error import (
    NOTE_LENGTH_LIMIT,
    Diagnosis,
    FitError,
    NoNodesAvailableError,
    truncate_message,
)
from scheduler.framework.status import Code, Status

CPU = "Insufficient cpu"
MEM = "Insufficient memory"
PODS = "Too many pods"
PORTS = "node(s) didn't have free ports for the requested pod ports"
AFFINITY = "node(s) didn't match Pod's node affinity/selector"
TAINT = "node(s) had untolerated taint(s)"
ABSENT_NA = "node(s) didn't satisfy plugin(s) [NodeAffinity]"


def _unsched(*reasons: str) -> Status:
    return Status(Code.UNSCHEDULABLE, reasons)


def _diag(statuses: dict[str, Status], absent: Status | None = None, pre: str = "", post: str = "") -> Diagnosis:
    d = Diagnosis(node_to_status=statuses, pre_filter_msg=pre, post_filter_msg=post)
    if absent is not None:
        d.absent_nodes_status = absent
    return d


@pytest.mark.parametrize(
    ("num_all", "diagnosis", "want"),
    [
        pytest.param(
            3,
            _diag({"n1": _unsched(CPU, MEM), "n2": _unsched(CPU), "n3": _unsched(PODS)}),
            "0/3 nodes are available: 1 Insufficient memory, 1 Too many pods, 2 Insufficient cpu.",
            id="histogram-counts-every-reason-of-every-node",
        ),
        pytest.param(
            12,
            _diag({f"n{i}": _unsched(CPU) for i in range(10)} | {"n10": _unsched(PODS), "n11": _unsched(PODS)}),
            "0/12 nodes are available: 10 Insufficient cpu, 2 Too many pods.",
            id="plain-string-sort-10-before-2",
        ),
        pytest.param(
            3,
            _diag({"n1": _unsched(TAINT), "n2": _unsched(AFFINITY), "n3": _unsched(CPU)}),
            "0/3 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match Pod's node affinity/selector, "
            "1 node(s) had untolerated taint(s).",
            id="same-count-sorted-by-reason-uppercase-first",
        ),
        pytest.param(
            5,
            _diag({"n1": _unsched(PORTS)}, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ABSENT_NA,))),
            f"0/5 nodes are available: 1 {PORTS}, 4 {ABSENT_NA}.",
            id="absent-nodes-counted-with-absent-status",
        ),
        pytest.param(
            4,
            _diag({"n1": _unsched(AFFINITY)}, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (AFFINITY,))),
            f"0/4 nodes are available: 4 {AFFINITY}.",
            id="absent-and-explicit-same-reason-add-up",
        ),
        pytest.param(
            3,
            _diag({"n1": _unsched(CPU)}),
            "0/3 nodes are available: 1 Insufficient cpu.",
            id="default-absent-status-has-no-reasons",
        ),
        pytest.param(
            3,
            _diag({}),
            "0/3 nodes are available:",
            id="no-reasons-no-period",
        ),
        pytest.param(
            2,
            _diag(
                {"n1": _unsched(CPU), "n2": _unsched(CPU)}, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ABSENT_NA,))
            ),
            "0/2 nodes are available: 2 Insufficient cpu.",
            id="no-absent-nodes-when-all-explicit",
        ),
        pytest.param(
            3,
            _diag(
                {n: _unsched("Node(s) failed PreFilter plugin FalsePreFilter") for n in ("node1", "node2", "node3")},
                pre="Node(s) failed PreFilter plugin FalsePreFilter",
            ),
            "0/3 nodes are available: Node(s) failed PreFilter plugin FalsePreFilter.",
            id="upstream-prefilter-replaces-histogram",
        ),
        pytest.param(
            3,
            _diag(
                {n: _unsched("Node(s) failed PreFilter plugin FalsePreFilter") for n in ("node1", "node2", "node3")},
                pre="Node(s) failed PreFilter plugin FalsePreFilter",
                post="Error running PostFilter plugin FailedPostFilter",
            ),
            "0/3 nodes are available: Node(s) failed PreFilter plugin FalsePreFilter. "
            "Error running PostFilter plugin FailedPostFilter",
            id="upstream-prefilter-and-postfilter",
        ),
        pytest.param(
            3,
            _diag({n: _unsched("Node(s) failed Filter plugin FalseFilter-1") for n in ("node1", "node2", "node3")}),
            "0/3 nodes are available: 3 Node(s) failed Filter plugin FalseFilter-1.",
            id="upstream-one-filter",
        ),
        pytest.param(
            3,
            _diag(
                {n: _unsched("Node(s) failed Filter plugin FalseFilter-1") for n in ("node1", "node2", "node3")},
                post="Error running PostFilter plugin FailedPostFilter",
            ),
            "0/3 nodes are available: 3 Node(s) failed Filter plugin FalseFilter-1. "
            "Error running PostFilter plugin FailedPostFilter",
            id="upstream-one-filter-postfilter-no-extra-period",
        ),
        pytest.param(
            3,
            _diag(
                {
                    "node1": _unsched("Node(s) failed Filter plugin FalseFilter-1"),
                    "node2": _unsched("Node(s) failed Filter plugin FalseFilter-1"),
                    "node3": _unsched("Node(s) failed Filter plugin FalseFilter-2"),
                }
            ),
            "0/3 nodes are available: 1 Node(s) failed Filter plugin FalseFilter-2, "
            "2 Node(s) failed Filter plugin FalseFilter-1.",
            id="upstream-two-filters",
        ),
        pytest.param(
            1,
            _diag({"node1": _unsched("Node failed Permit plugin Permit-1")}),
            "0/1 nodes are available: 1 Node failed Permit plugin Permit-1.",
            id="upstream-permit",
        ),
        pytest.param(
            1,
            _diag({"node1": _unsched("Node failed Reserve plugin Reserve-1")}),
            "0/1 nodes are available: 1 Node failed Reserve plugin Reserve-1.",
            id="upstream-reserve",
        ),
        pytest.param(
            3,
            _diag(
                {},
                Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("pod has unbound immediate PersistentVolumeClaims",)),
                pre="pod has unbound immediate PersistentVolumeClaims",
                post="preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
            ),
            "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims. "
            "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
            id="reference-unbound-pvc-with-preemption",
        ),
        pytest.param(
            1,
            _diag(
                {"n1": _unsched(PORTS)},
                post="no new claims to deallocate, preemption: 0/1 nodes are available: 1 " + PORTS + ".",
            ),
            f"0/1 nodes are available: 1 {PORTS}. no new claims to deallocate, preemption: "
            f"0/1 nodes are available: 1 {PORTS}.",
            id="reference-dra-and-preemption-joined",
        ),
    ],
)
def test_fit_error_message(num_all: int, diagnosis: Diagnosis, want: str) -> None:
    """str(FitError) reproduces upstream FitError.Error()."""
    assert str(FitError(num_all, diagnosis)) == want


def test_nested_preemption_fit_error_reference_example() -> None:
    """The older observed event: ports + prefilter-filtered nodes, then the preemption FitError as suffix."""
    old_absent = "node is filtered out by the prefilter result"
    preemption = FitError(
        3,
        _diag(
            {"n2": _unsched("No preemption victims found for incoming pod")},
            Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("Preemption is not helpful for scheduling",)),
        ),
    )
    main = FitError(
        3,
        _diag(
            {"n2": _unsched(PORTS)},
            Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (old_absent,)),
            post=f"preemption: {preemption}",
        ),
    )
    assert str(main) == (
        "0/3 nodes are available: 1 node(s) didn't have free ports for the requested pod ports, 2 node is filtered "
        "out by the prefilter result. preemption: 0/3 nodes are available: 1 No preemption victims found for "
        "incoming pod, 2 Preemption is not helpful for scheduling."
    )


def test_reason_histogram_counts_absent_nodes() -> None:
    """reason_histogram adds NumAllNodes - len(NodeToStatus) for each absent-status reason."""
    fit = FitError(
        6,
        _diag(
            {"a": _unsched(CPU, MEM), "b": _unsched(CPU)},
            Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ABSENT_NA, "second reason")),
        ),
    )
    assert fit.reason_histogram() == {CPU: 2, MEM: 1, ABSENT_NA: 4, "second reason": 4}


@pytest.mark.parametrize(
    ("status", "unschedulable", "pending"),
    [
        pytest.param(Status(Code.UNSCHEDULABLE, ("x",), "P"), {"P"}, set(), id="unschedulable"),
        pytest.param(Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("x",), "P"), {"P"}, set(), id="unresolvable"),
        pytest.param(Status(Code.PENDING, ("x",), "P"), {"P"}, {"P"}, id="pending-is-also-rejected"),
        pytest.param(Status(Code.ERROR, ("x",), "P"), set(), set(), id="error-not-recorded"),
        pytest.param(Status(Code.UNSCHEDULABLE, ("x",)), set(), set(), id="no-plugin-ignored"),
    ],
)
def test_diagnosis_add_plugin_status(status: Status, unschedulable: set[str], pending: set[str]) -> None:
    """AddPluginStatus records rejecting plugins and Pending plugins, as upstream Diagnosis does."""
    d = Diagnosis()
    d.add_plugin_status(status)
    assert (d.unschedulable_plugins, d.pending_plugins) == (unschedulable, pending)


def test_no_nodes_available_message() -> None:
    """ErrNoNodesAvailable text is upstream's."""
    assert str(NoNodesAvailableError()) == "no nodes available to schedule pods"


def test_note_length_limit_is_upstream() -> None:
    """validation.NoteLengthLimit is 1024."""
    assert NOTE_LENGTH_LIMIT == 1024


@pytest.mark.parametrize(
    ("message", "want"),
    [
        pytest.param("short", "short", id="short-unchanged"),
        pytest.param("a" * 1024, "a" * 1024, id="exactly-1024-bytes-unchanged"),
        pytest.param("a" * 1025, "a" * 1020 + " ...", id="1025-bytes-cut-to-1024"),
        pytest.param("b" * 5000, "b" * 1020 + " ...", id="long-ascii"),
        pytest.param("é" * 512, "é" * 512, id="2-byte-chars-exactly-1024-bytes"),
        pytest.param("é" * 600, "é" * 510 + " ...", id="600-chars-but-1200-bytes-is-truncated"),
        pytest.param("a" + "é" * 600, "a" + "é" * 509 + " ...", id="cut-inside-2-byte-char-drops-it"),
        pytest.param("€" * 400, "€" * 340 + " ...", id="3-byte-chars-on-boundary"),
        pytest.param("ab" + "€" * 400, "ab" + "€" * 339 + " ...", id="cut-inside-3-byte-char-drops-it"),
        pytest.param("a" + "😀" * 300, "a" + "😀" * 254 + " ...", id="cut-inside-4-byte-char-drops-it"),
    ],
)
def test_truncate_message(message: str, want: str) -> None:
    """Event notes are cut to 1024 BYTES ending in " ..." and stay valid UTF-8."""
    got = truncate_message(message)
    assert got == want
    assert len(got.encode()) <= NOTE_LENGTH_LIMIT


@given(st.text(max_size=1500))
def test_truncate_message_property(message: str) -> None:
    """Any note: at most 1024 bytes; unchanged when it fits; else an original prefix plus " ..."."""
    got = truncate_message(message)
    raw = got.encode()
    assert len(raw) <= NOTE_LENGTH_LIMIT
    if len(message.encode()) <= NOTE_LENGTH_LIMIT:
        assert got == message
    else:
        assert got.endswith(" ...")
        prefix = got[: -len(" ...")]
        assert message.startswith(prefix)
        assert len(prefix.encode()) > NOTE_LENGTH_LIMIT - 4 - 4  # only a partial character may be dropped
