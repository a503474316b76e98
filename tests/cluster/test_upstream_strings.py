"""Every user-facing reason string pyscheduler shares with kube-scheduler appears, verbatim, in the pinned
release's own source (k8s.io/kubernetes in the Go module cache, which tests/cluster/build.sh fills).

A check against upstream rather than against our own constants: it fails when a constant drifts from the
release we claim to match, or when a new release (tests/cluster/VERSION) rewords a reason. The e2e parity
tests (test_message_parity.py, test_preemption_parity.py) prove the assembled messages against the binary;
this proves the pieces at the source, including reasons those shapes do not reach.
"""

from __future__ import annotations

import json
import subprocess
from functools import cache
from pathlib import Path

import pytest

from scheduler.framework import fit_error
from scheduler.plugins import (
    node_affinity,
    node_declared_features,
    node_name,
    node_ports,
    node_resources_fit,
    node_unschedulable,
    node_volume_limits,
    taint_toleration,
    volume_restrictions,
    volume_zone,
)
from scheduler.plugins.volume_binding import binder as volume_binder
from scheduler.plugins.volume_binding import plugin as volume_binding
from tests.cluster.harness import pinned_release

PLUGINS = "pkg/scheduler/framework/plugins"


@cache
def kubernetes_source() -> Path:
    """k8s.io/kubernetes@<pinned release> in the Go module cache."""
    modcache = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True).stdout.strip()
    root = Path(modcache) / f"k8s.io/kubernetes@{pinned_release()}"
    assert root.is_dir(), f"{root} is missing: run bash tests/cluster/build.sh (it downloads the pinned release)"
    return root


REASONS = [
    (node_ports.ERR_REASON, f"{PLUGINS}/nodeports/node_ports.go"),
    (node_name.ERR_REASON, f"{PLUGINS}/nodename/node_name.go"),
    (taint_toleration.ERR_REASON_UNTOLERATED, f"{PLUGINS}/tainttoleration/taint_toleration.go"),
    (node_affinity.ERR_REASON_POD, f"{PLUGINS}/nodeaffinity/node_affinity.go"),
    (node_affinity.ERR_REASON_ENFORCED, f"{PLUGINS}/nodeaffinity/node_affinity.go"),
    (node_affinity.ERR_REASON_CONFLICT, f"{PLUGINS}/nodeaffinity/node_affinity.go"),
    (node_unschedulable.ERR_REASON_UNSCHEDULABLE, f"{PLUGINS}/nodeunschedulable/node_unschedulable.go"),
    (node_unschedulable.ERR_REASON_UNKNOWN_CONDITION, f"{PLUGINS}/nodeunschedulable/node_unschedulable.go"),
    (node_resources_fit.REASON_TOO_MANY_PODS, f"{PLUGINS}/noderesources/fit.go"),
    (node_resources_fit.REASON_INSUFFICIENT_CPU, f"{PLUGINS}/noderesources/fit.go"),
    (node_resources_fit.REASON_INSUFFICIENT_MEMORY, f"{PLUGINS}/noderesources/fit.go"),
    (node_resources_fit.REASON_INSUFFICIENT_EPHEMERAL_STORAGE, f"{PLUGINS}/noderesources/fit.go"),
    (fit_error.ERR_NO_NODES_AVAILABLE, "pkg/scheduler/scheduler.go"),
    (volume_binding.ERR_REASON_UNBOUND_IMMEDIATE, f"{PLUGINS}/volumebinding/volume_binding.go"),
    (volume_binder.ERR_REASON_NODE_CONFLICT, f"{PLUGINS}/volumebinding/binder.go"),
    (volume_binder.ERR_REASON_BIND_CONFLICT, f"{PLUGINS}/volumebinding/binder.go"),
    (volume_binder.ERR_REASON_NOT_ENOUGH_SPACE, f"{PLUGINS}/volumebinding/binder.go"),
    (volume_binder.ERR_REASON_PV_NOT_EXIST, f"{PLUGINS}/volumebinding/binder.go"),
    (volume_restrictions.ERR_REASON_DISK_CONFLICT, f"{PLUGINS}/volumerestrictions/volume_restrictions.go"),
    (
        volume_restrictions.ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT,
        f"{PLUGINS}/volumerestrictions/volume_restrictions.go",
    ),
    (volume_zone.ERR_REASON_CONFLICT, f"{PLUGINS}/volumezone/volume_zone.go"),
    (node_volume_limits.ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED, f"{PLUGINS}/nodevolumelimits/csi.go"),
    (
        node_declared_features.ERR_REASON_UNSATISFIED_REQUIREMENTS,
        f"{PLUGINS}/nodedeclaredfeatures/nodedeclaredfeatures.go",
    ),
]


@pytest.mark.parametrize(("text", "path"), REASONS, ids=[f"{p.rsplit('/', 1)[1]}:{t[:40]}" for t, p in REASONS])
def test_reason_is_a_string_literal_of_the_pinned_release(text: str, path: str) -> None:
    source = (kubernetes_source() / path).read_text(encoding="utf-8")
    literal = json.dumps(text)  # a Go interpreted string literal of these ASCII texts is their JSON form
    assert literal in source, f"{literal} is not in {path} of k8s.io/kubernetes@{pinned_release()}"
