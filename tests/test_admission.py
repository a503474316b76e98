"""kube-apiserver's pod create mutation that `simulate` reproduces: matchLabelKeys/mismatchLabelKeys merged
into pod (anti-)affinity label selectors (strategy.go mutatePodAffinity)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from scheduler.admission import admit_pod, mutate_pod_affinity
from scheduler.testing import make_pod

JSON = dict[str, Any]
HOST = "kubernetes.io/hostname"


def _pod(labels: dict[str, str], affinity: JSON, created: bool = False) -> JSON:
    obj = make_pod("p").obj()
    obj["metadata"]["labels"] = labels
    obj["spec"]["affinity"] = affinity
    if created:
        obj["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    return obj


def _term(selector: JSON | None, match: list[str] | None = None, mismatch: list[str] | None = None) -> JSON:
    t: JSON = {"topologyKey": HOST}
    if selector is not None:
        t["labelSelector"] = selector
    if match is not None:
        t["matchLabelKeys"] = match
    if mismatch is not None:
        t["mismatchLabelKeys"] = mismatch
    return t


LABELS = {"app": "web", "pod-template-hash": "abc", "tenant": "t1"}


@pytest.mark.parametrize(
    ("term", "want_expressions"),
    [
        pytest.param(
            _term({"matchLabels": {"app": "web"}}, match=["pod-template-hash"]),
            [{"key": "pod-template-hash", "operator": "In", "values": ["abc"]}],
            id="match-label-keys",
        ),
        pytest.param(
            _term({"matchLabels": {"app": "web"}}, mismatch=["tenant"]),
            [{"key": "tenant", "operator": "NotIn", "values": ["t1"]}],
            id="mismatch-label-keys",
        ),
        pytest.param(
            _term(
                {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
                match=["pod-template-hash", "missing"],
                mismatch=["tenant"],
            ),
            [
                {"key": "app", "operator": "Exists"},
                {"key": "pod-template-hash", "operator": "In", "values": ["abc"]},
                {"key": "tenant", "operator": "NotIn", "values": ["t1"]},
            ],
            id="appended-after-existing-keys-absent-from-labels-skipped",
        ),
        pytest.param(
            _term({}, match=["app"]),
            [{"key": "app", "operator": "In", "values": ["web"]}],
            id="empty-selector-is-narrowed-too",
        ),
    ],
)
def test_label_keys_merge_into_the_selector(term: JSON, want_expressions: list[JSON]) -> None:
    """Each key the pod has becomes `key In/NotIn [value]`, appended to matchExpressions."""
    for kind in ("podAffinity", "podAntiAffinity"):
        for required in (True, False):
            if required:
                affinity = {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [copy.deepcopy(term)]}}
            else:
                affinity = {
                    kind: {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {"weight": 10, "podAffinityTerm": copy.deepcopy(term)}
                        ]
                    }
                }
            obj = _pod(LABELS, affinity)
            before = copy.deepcopy(obj)
            out = admit_pod(obj)
            assert obj == before, "the input is not mutated"
            section = out["spec"]["affinity"][kind]
            merged = (
                section["requiredDuringSchedulingIgnoredDuringExecution"][0]
                if required
                else section["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"]
            )
            assert merged["labelSelector"].get("matchExpressions") == want_expressions
            assert merged.get("matchLabelKeys") == term.get("matchLabelKeys")  # the keys stay, as the API keeps them


def test_nil_selector_is_left_alone() -> None:
    """A nil labelSelector matches nothing; the API server leaves it nil."""
    obj = _pod(LABELS, {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term(None, ["app"])]}})
    out = mutate_pod_affinity(obj)
    assert (
        "labelSelector"
        not in out["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
    )


def test_created_pods_are_not_merged_again() -> None:
    """A pod with a creationTimestamp was stored by the API server: its keys were merged then, against the
    labels it had then, so nothing is added now (even if its labels changed since)."""
    term = _term({"matchLabels": {"app": "web"}}, match=["pod-template-hash"])
    obj = _pod(LABELS, {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}, created=True)
    assert admit_pod(obj) is obj
    assert "matchExpressions" not in term["labelSelector"]


def test_pods_without_label_keys_are_returned_as_is() -> None:
    """No affinity, or no keys: the very same object comes back (no copy)."""
    plain = make_pod("p").obj()
    assert admit_pod(plain) is plain
    obj = _pod(LABELS, {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term({})]}})
    assert admit_pod(obj) is obj


def _spec_pod(spec: JSON) -> JSON:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"}, "spec": spec}


PAUSE = {"name": "c", "image": "registry.k8s.io/pause:3.10"}


@pytest.mark.parametrize(
    ("spec", "requests"),
    [
        pytest.param({"resources": {"limits": {"cpu": "2"}}, "containers": [PAUSE]}, {"cpu": "2"},
                     id="pod-level-limit-becomes-the-request"),
        pytest.param(
            {"resources": {"limits": {"cpu": "2"}},
             "containers": [{**PAUSE, "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}, PAUSE]},
            {"cpu": "500m", "memory": "1073741824"},
            id="container-aggregate-before-the-limit",
        ),
        pytest.param(
            {"resources": {"requests": {"memory": "1Gi"}}, "containers": [{**PAUSE, "resources": {"limits": {"cpu":
             "300m"}}}]},
            {"memory": "1Gi", "cpu": "300m"},
            id="container-limit-defaults-its-request-then-aggregates",
        ),
        pytest.param({"resources": {"requests": {"cpu": "1"}}, "containers": [PAUSE]}, {"cpu": "1"},
                     id="nothing-to-default"),
    ],
)
def test_pod_level_requests_are_defaulted_as_the_api_server_does(spec: JSON, requests: JSON) -> None:
    """PodLevelResourcesFixDefaulting (beta, on): pod-level requests as kube-apiserver v1.37.2 stores them
    (the three shapes were created on the test control plane and read back)."""
    assert admit_pod(_spec_pod(spec))["spec"]["resources"]["requests"] == requests


def test_bind_mount_options_are_dropped_on_create() -> None:
    """VolumeBindMountOptions is alpha (off): the API server drops bindMountOptions, so nothing requires the
    VolumeBindMountOptions declared feature; a created pod is left as it is."""
    mount = {"name": "v", "mountPath": "/v", "bindMountOptions": ["noexec"]}
    obj = _spec_pod({"containers": [{**PAUSE, "volumeMounts": [dict(mount)]}]})
    out = admit_pod(obj)
    assert out["spec"]["containers"][0]["volumeMounts"] == [{"name": "v", "mountPath": "/v"}]
    assert obj["spec"]["containers"][0]["volumeMounts"][0]["bindMountOptions"] == ["noexec"], "input untouched"
    created = copy.deepcopy(obj)
    created["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    assert admit_pod(created) is created
