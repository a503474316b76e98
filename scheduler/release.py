"""The Kubernetes release whose semantics pyscheduler implements, stated once.

Everything that depends on "which kube-scheduler are we" reads it from here: the feature gates taken as on
(docs/feature-gates.md), the scheduler's own version in NodeDeclaredFeatures' MaxVersion windows (upstream
parses `version.Get()` of the binary). tests/cluster/VERSION pins the same release for the control plane and
the upstream binary the parity tests run against; a test keeps the two equal.

This module is the lowest layer with `scheduler.caching` (no scheduler imports).
"""

from __future__ import annotations

from typing import Final

UPSTREAM_RELEASE: Final = "v1.37.2"
"""The kube-scheduler release pyscheduler matches: default profile, feature gates, messages, metrics."""
