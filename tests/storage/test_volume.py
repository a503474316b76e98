"""Storage rules (component-helpers storage/volume), ported from upstream tests: pv_helpers_test.go
TestFindMatchVolumeWithNode and TestDelayBindingMode, helpers_test.go TestCheckVolumeNodeAffinity."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.backend.cache.objects import ClusterObjects
from scheduler.storage import volume as st

JSON = dict[str, Any]


def affinity(key: str, value: str) -> JSON:
    return {
        "required": {"nodeSelectorTerms": [{"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}]}
    }


def volume(name: str, capacity: str, available: bool = True, cls: str = "", **spec: Any) -> JSON:
    pv_spec: JSON = {
        "capacity": {"storage": capacity},
        "local": {},
        "accessModes": ["ReadWriteOnce", "ReadOnlyMany"],
        "volumeMode": "Filesystem",
        **spec,
    }
    if cls:
        pv_spec["storageClassName"] = cls
    obj: JSON = {"kind": "PersistentVolume", "metadata": {"name": name}, "spec": pv_spec}
    if available:
        obj["status"] = {"phase": "Available"}
    return obj


VOLUMES = [
    volume("local001", "5G"),
    volume("local002", "200E", cls="large"),
    volume("affinity001", "100G", cls="wait", nodeAffinity=affinity("key1", "value1")),
    volume("affinity002", "150G", cls="wait", nodeAffinity=affinity("key1", "value1")),
    volume(
        "affinity003",
        "100G",
        cls="wait",
        nodeAffinity=affinity("key1", "value1"),
        claimRef={"name": "claim02", "namespace": "myns"},
    ),
    volume("affinity003", "200G", cls="wait", nodeAffinity=affinity("key1", "value3")),
    volume("affinity004", "200G", available=False, cls="wait", nodeAffinity=affinity("key1", "value4")),
]
# Upstream tells the two "affinity003" volumes apart by uid; here by capacity.
WHICH = {id(v): f"{v['metadata']['name']}/{v['spec']['capacity']['storage']}" for v in VOLUMES}


def with_vac(name: str) -> list[JSON]:
    out = []
    for v in VOLUMES:
        copy_ = {**v, "spec": {**v["spec"], "volumeAttributesClassName": name}}
        WHICH[id(copy_)] = WHICH[id(v)]
        out.append(copy_)
    return out


def claim(name: str, size: str, modes: list[str], vac: str | None = None) -> JSON:
    spec: JSON = {
        "accessModes": modes,
        "resources": {"requests": {"storage": size}},
        "storageClassName": "wait",
        "volumeMode": "Filesystem",
    }
    if vac is not None:
        spec["volumeAttributesClassName"] = vac
    return {"kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": "myns"}, "spec": spec}


RWO = ["ReadWriteOnce"]


@pytest.mark.parametrize(
    ("pvc", "labels", "volumes", "excluded", "vac", "want", "err"),
    [
        pytest.param(
            claim("claim01", "100G", RWO),
            {"key1": "value1"},
            VOLUMES,
            {},
            True,
            "affinity001/100G",
            False,
            id="success-match",
        ),
        pytest.param(
            claim("claim02", "100G", RWO),
            {"key1": "value1"},
            VOLUMES,
            {},
            True,
            "affinity003/100G",
            False,
            id="success-prebound",
        ),
        pytest.param(
            claim("claim01", "100G", RWO),
            {"key1": "value1"},
            VOLUMES,
            {"affinity001": None},
            True,
            "affinity002/150G",
            False,
            id="success-exclusion",
        ),
        pytest.param(
            claim("claim01", "100G", RWO),
            {"key1": "value1"},
            VOLUMES,
            {"affinity001": None, "affinity002": None},
            True,
            None,
            False,
            id="fail-exclusion",
        ),
        pytest.param(
            claim("claim01", "100G", ["ReadWriteMany"]),
            {"key1": "value1"},
            VOLUMES,
            {},
            True,
            None,
            False,
            id="fail-accessmode",
        ),
        pytest.param(
            claim("claim01", "100G", RWO), {"key1": "value2"}, VOLUMES, {}, True, None, False, id="fail-nodeaffinity"
        ),
        pytest.param(
            claim("claim02", "100G", RWO),
            {"key1": "value3"},
            VOLUMES,
            {},
            True,
            None,
            False,
            id="fail-prebound-node-affinity",
        ),
        pytest.param(
            claim("claim04", "100G", RWO), {"key1": "value4"}, VOLUMES, {}, True, None, False, id="fail-nonavaliable"
        ),
        pytest.param(
            claim("claim03", "100G", RWO),
            {"key1": "value3"},
            VOLUMES,
            {},
            True,
            "affinity003/200G",
            False,
            id="success-bad-and-good-node-affinity",
        ),
        pytest.param(
            claim("claim01", "100G", RWO, vac="gold"),
            {"key1": "value1"},
            with_vac("gold"),
            {},
            True,
            "affinity001/100G",
            False,
            id="success-match-with-vac",
        ),
        pytest.param(
            claim("claim01", "100G", RWO, vac="silver"),
            {"key1": "value1"},
            VOLUMES,
            {},
            True,
            None,
            False,
            id="fail-vac",
        ),
        pytest.param(
            claim("claim02", "100G", RWO, vac="silver"),
            {"key1": "value1"},
            with_vac("gold"),
            {},
            True,
            None,
            False,
            id="fail-prebound-vac",
        ),
        pytest.param(
            claim("claim01", "100G", RWO, vac="gold"),
            {"key1": "value1"},
            VOLUMES,
            {},
            False,
            None,
            True,
            id="fail-on-error",
        ),
        pytest.param(
            claim("claim01", "100G", RWO),
            {"key1": "value1"},
            with_vac("gold"),
            {},
            False,
            None,
            False,
            id="fail-volumes-vac",
        ),
    ],
)
def test_find_matching_volume_with_node(
    pvc: JSON,
    labels: dict[str, str],
    volumes: list[JSON],
    excluded: dict[str, Any],
    vac: bool,
    want: str | None,
    err: bool,
) -> None:
    """FindMatchingVolume (scheduler path): pre-bound wins or loses outright, else the smallest fitting PV."""
    try:
        got = st.find_matching_volume(pvc, volumes, labels, excluded, True, vac)
    except st.StorageError:
        assert err
        return
    assert not err
    assert (WHICH[id(got)] if got is not None else None) == want


def test_find_matching_volume_controller_path_skips_unbound_when_delayed() -> None:
    """node None + delayBinding: only a PV pre-bound to the claim matches (the PV controller's path)."""
    assert st.find_matching_volume(claim("claim01", "1G", RWO), VOLUMES, None, {}, True) is None
    got = st.find_matching_volume(claim("claim02", "1G", RWO), VOLUMES, None, {}, True)
    assert got is not None and WHICH[id(got)] == "affinity003/100G"
    small = st.find_matching_volume(claim("claim01", "1G", RWO), VOLUMES, None, {}, False)
    assert small is not None and WHICH[id(small)] == "affinity001/100G"  # smallest of class "wait"


def _class(name: str, mode: str | None) -> JSON:
    obj: JSON = {"kind": "StorageClass", "metadata": {"name": name}}
    if mode is not None:
        obj["volumeBindingMode"] = mode
    return obj


@pytest.mark.parametrize(
    ("cls", "delay", "fail"),
    [
        pytest.param(None, False, False, id="nil-class"),
        pytest.param("not-here", False, False, id="class-not-found"),
        pytest.param("no-mode", False, True, id="no-mode-class"),
        pytest.param("immediate-mode", False, False, id="immediate-mode-class"),
        pytest.param("wait-mode", True, False, id="wait-mode-class"),
    ],
)
def test_delay_binding_mode(cls: str | None, delay: bool, fail: bool) -> None:
    """IsDelayBindingMode: only an existing WaitForFirstConsumer class delays; a class without mode errs."""
    objects = ClusterObjects()
    for c in (
        _class("no-mode", None),
        _class("immediate-mode", "Immediate"),
        _class("wait-mode", "WaitForFirstConsumer"),
    ):
        objects.apply("StorageClass", None, c)
    pvc: JSON = {"metadata": {"name": "c"}, "spec": {} if cls is None else {"storageClassName": cls}}
    try:
        assert st.is_delay_binding_mode(pvc, objects) == delay
    except st.StorageError:
        assert fail
    else:
        assert not fail


NODE_LABELS = {"test-key1": "test-value1", "test-key2": "test-value2"}


def _terms(*terms: list[tuple[str, list[str]]]) -> JSON:
    return {
        "required": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": k, "operator": "In", "values": v} for k, v in term]} for term in terms
            ]
        }
    }


@pytest.mark.parametrize(
    ("node_affinity", "ok"),
    [
        pytest.param(None, True, id="valid-nil"),
        pytest.param({}, True, id="valid-no-constraints"),
        pytest.param({"required": {}}, False, id="select-nothing"),
        pytest.param(
            {"required": {"nodeSelectorTerms": [{"matchExpressions": []}]}}, False, id="select-nothing-empty-terms"
        ),
        pytest.param(
            _terms([("test-key3", ["test-value1", "test-value3"])], [("test-key2", ["test-value0", "test-value2"])]),
            True,
            id="valid-multiple-terms",
        ),
        pytest.param(
            _terms([("test-key1", ["test-value1", "test-value3"]), ("test-key2", ["test-value0", "test-value2"])]),
            True,
            id="valid-multiple-match-expressions",
        ),
        pytest.param(
            _terms([("test-key1", ["test-value1", "test-value3"]), ("test-key3", ["test-value0", "test-value2"])]),
            False,
            id="invalid-multiple-match-expressions-key",
        ),
        pytest.param(
            _terms([("test-key1", ["test-value3", "test-value4"]), ("test-key2", ["test-value0", "test-value2"])]),
            False,
            id="invalid-multiple-match-expressions-values",
        ),
        pytest.param(
            _terms([("test-key3", ["test-value1", "test-value3"])], [("test-key2", ["test-value0", "test-value1"])]),
            False,
            id="invalid-multiple-terms",
        ),
    ],
)
def test_check_volume_node_affinity(node_affinity: JSON | None, ok: bool) -> None:
    """CheckNodeAffinity: terms ORed, expressions ANDed; no required selector admits every node."""
    pv: JSON = {"metadata": {"name": "test-constraints"}, "spec": {}}
    if node_affinity is not None:
        pv["spec"]["nodeAffinity"] = node_affinity
    assert st.check_node_affinity(pv, NODE_LABELS) is ok
    err = st.node_affinity_error(pv, NODE_LABELS)
    assert (err is None) is ok
    if not ok:
        assert err == "no matching NodeSelectorTerms"


def test_pv_affinity_ignores_match_fields_like_upstream() -> None:
    """CheckNodeAffinity builds a Node from labels only: a matchFields metadata.name term is never checked."""
    pv = {
        "spec": {
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["elsewhere"]}]}
                    ]
                }
            }
        }
    }
    assert st.check_node_affinity(pv, {})


def test_bind_volume_to_claim() -> None:
    """GetBindVolumeToClaim: claimRef with uid/resourceVersion, bound-by-controller; no change when bound."""
    pvc = {
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "c", "namespace": "ns", "uid": "u1", "resourceVersion": "7"},
        "spec": {},
    }
    pv = {"metadata": {"name": "pv"}, "spec": {}}
    bound, dirty = st.bind_volume_to_claim(pv, pvc)
    assert dirty
    assert bound["spec"]["claimRef"] == {
        "kind": "PersistentVolumeClaim",
        "namespace": "ns",
        "name": "c",
        "apiVersion": "v1",
        "uid": "u1",
        "resourceVersion": "7",
    }
    assert bound["metadata"]["annotations"] == {st.ANN_BOUND_BY_CONTROLLER: "yes"}
    assert "claimRef" not in pv["spec"]  # the input is never modified
    again, dirty = st.bind_volume_to_claim(bound, pvc)
    assert not dirty and again == bound
    user_prebound = {"metadata": {"name": "pv"}, "spec": {"claimRef": {"name": "c", "namespace": "ns"}}}
    fixed, dirty = st.bind_volume_to_claim(user_prebound, pvc)
    assert dirty and fixed["spec"]["claimRef"]["uid"] == "u1"
    assert "annotations" not in fixed["metadata"]  # pre-bound by the user: not bound by the controller


@pytest.mark.parametrize(
    ("terms", "labels", "want"),
    [
        pytest.param(None, {}, True, id="no-terms-match-all"),
        pytest.param(
            [{"matchLabelExpressions": [{"key": "zone", "values": ["a", "b"]}]}], {"zone": "b"}, True, id="in"
        ),
        pytest.param(
            [{"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]}], {"zone": "b"}, False, id="not-in"
        ),
        pytest.param(
            [{}, {"matchLabelExpressions": [{"key": "zone", "values": ["b"]}]}],
            {"zone": "b"},
            True,
            id="empty-term-skipped",
        ),
        pytest.param(
            [{"matchLabelExpressions": [{"key": "zone", "values": []}]}],
            {"zone": "b"},
            False,
            id="invalid-term-never-matches",
        ),
    ],
)
def test_match_topology_selector_terms(terms: Any, labels: dict[str, str], want: bool) -> None:
    """StorageClass allowedTopologies against node labels (v1helper.MatchTopologySelectorTerms)."""
    assert st.match_topology_selector_terms(terms, labels) is want
