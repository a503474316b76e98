"""HostPortInfo and the host-port conflict rule (scheduler/framework/types.py, upstream framework/types.go)."""

from __future__ import annotations

import itertools

import pytest

from scheduler.framework.types import (
    DEFAULT_BIND_ALL_HOST_IP,
    HostPort,
    HostPortInfo,
    conflicts,
    sanitize_host_port,
)

ANY = DEFAULT_BIND_ALL_HOST_IP


def _info(*ports: HostPort) -> HostPortInfo:
    info = HostPortInfo()
    for hp in ports:
        info.add(hp)
    return info


@pytest.mark.parametrize(
    ("ip", "protocol", "want"),
    [
        pytest.param("", "", (ANY, "TCP", 80), id="empty-ip-and-protocol"),
        pytest.param(None, None, (ANY, "TCP", 80), id="missing-ip-and-protocol"),
        pytest.param("10.0.0.1", "UDP", ("10.0.0.1", "UDP", 80), id="explicit-kept"),
        pytest.param("", "SCTP", (ANY, "SCTP", 80), id="sctp-kept"),
    ],
)
def test_sanitize(ip: str | None, protocol: str | None, want: HostPort) -> None:
    """An empty host IP means 0.0.0.0 and an empty protocol means TCP."""
    assert sanitize_host_port(ip, protocol, 80) == want


@pytest.mark.parametrize(
    ("held", "wanted", "conflict"),
    [
        pytest.param((ANY, "TCP", 80), (ANY, "TCP", 80), True, id="same-wildcard"),
        pytest.param(("10.0.0.1", "TCP", 80), (ANY, "TCP", 80), True, id="wildcard-vs-held-ip"),
        pytest.param((ANY, "TCP", 80), ("10.0.0.1", "TCP", 80), True, id="ip-vs-held-wildcard"),
        pytest.param(("10.0.0.1", "TCP", 80), ("10.0.0.1", "TCP", 80), True, id="same-ip"),
        pytest.param(("10.0.0.1", "TCP", 80), ("10.0.0.2", "TCP", 80), False, id="different-ips"),
        pytest.param((ANY, "TCP", 80), (ANY, "UDP", 80), False, id="tcp-vs-udp"),
        pytest.param((ANY, "UDP", 53), ("10.0.0.1", "UDP", 53), True, id="udp-ip-vs-wildcard"),
        pytest.param((ANY, "TCP", 80), (ANY, "TCP", 81), False, id="different-port"),
        pytest.param((ANY, "TCP", 0), (ANY, "TCP", 0), False, id="port-zero-never-conflicts"),
        pytest.param((ANY, "TCP", -1), (ANY, "TCP", -1), False, id="negative-port-never-conflicts"),
    ],
)
def test_check_conflict(held: HostPort, wanted: HostPort, conflict: bool) -> None:
    """0.0.0.0 clashes with any IP on the same protocol/port; a specific IP with itself and 0.0.0.0."""
    assert _info(held).check_conflict(wanted) is conflict
    assert conflicts(wanted, held) is conflict
    assert conflicts(held, wanted) is conflict


def test_conflicts_agrees_with_check_conflict_exhaustively() -> None:
    """The pairwise rule used by `explain` gives the same answer as the node's index for every pair."""
    universe = [
        (ip, proto, port)
        for ip, proto, port in itertools.product((ANY, "10.0.0.1", "10.0.0.2"), ("TCP", "UDP"), (0, 53, 80))
    ]
    for held, wanted in itertools.product(universe, repeat=2):
        assert _info(held).check_conflict(wanted) == conflicts(wanted, held), (held, wanted)


def test_non_positive_ports_are_not_stored() -> None:
    """Add ignores port <= 0, so such ports count neither in len nor in iteration."""
    info = _info((ANY, "TCP", 0), (ANY, "TCP", -5), (ANY, "TCP", 8080))
    assert len(info) == 1
    assert list(info) == [(ANY, "TCP", 8080)]


def test_remove_frees_port() -> None:
    """Removing the only holder frees the port; removing an unknown port is a no-op."""
    info = _info(("10.0.0.1", "TCP", 80))
    info.remove((ANY, "UDP", 99))
    info.remove(("10.0.0.1", "TCP", 80))
    assert len(info) == 0
    assert not info.check_conflict((ANY, "TCP", 80))


def test_remove_keeps_port_held_by_another_pod() -> None:
    """Two pods declaring the same (ip, protocol, port): removing one keeps the other's claim.

    Upstream's HostPortInfo is a set, so there the first removal frees it; counting is deliberate here.
    """
    hp = ("10.0.0.1", "TCP", 80)
    info = _info(hp, hp)
    assert len(info) == 1
    info.remove(hp)
    assert info.check_conflict(hp)
    info.remove(hp)
    assert not info.check_conflict(hp)


def test_remove_one_ip_keeps_other_ips() -> None:
    """Removing one IP's claim leaves another IP's claim on the same protocol/port."""
    info = _info(("10.0.0.1", "TCP", 80), ("10.0.0.2", "TCP", 80))
    info.remove(("10.0.0.1", "TCP", 80))
    assert not info.check_conflict(("10.0.0.1", "TCP", 80))
    assert info.check_conflict(("10.0.0.2", "TCP", 80))
    assert info.check_conflict((ANY, "TCP", 80))


def test_clone_is_independent() -> None:
    """A snapshot clone does not see later changes to the cache's copy, nor the other way round."""
    info = _info((ANY, "TCP", 80))
    copy = info.clone()
    info.add((ANY, "UDP", 53))
    copy.remove((ANY, "TCP", 80))
    assert info.check_conflict((ANY, "TCP", 80)) and info.check_conflict((ANY, "UDP", 53))
    assert not copy.check_conflict((ANY, "TCP", 80)) and not copy.check_conflict((ANY, "UDP", 53))
