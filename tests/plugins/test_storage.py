"""Storage helpers (component-helpers storage/volume) and csi-translation, ported from upstream tests:
pv_helpers_test.go TestFindMatchVolumeWithNode and TestDelayBindingMode, helpers_test.go
TestCheckVolumeNodeAffinity, csi-translation-lib translate_test.go TestTopologyTranslation."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.backend.cache.objects import ClusterObjects
from scheduler.plugins import csi_translation as csi
from scheduler.plugins import storage as st

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


# ---------------------------------------------------------------------------------------------------------
# csi-translation

BETA = {"failure-domain.beta.kubernetes.io/zone": "us-east-1a", "failure-domain.beta.kubernetes.io/region": "us-east-1"}
GA = {"topology.kubernetes.io/zone": "us-east-1a", "topology.kubernetes.io/region": "us-east-1"}
REGIONAL_BETA = {"failure-domain.beta.kubernetes.io/zone": "europe-west1-b__europe-west1-c"}
REGIONAL_GA = {"topology.kubernetes.io/zone": "europe-west1-b__europe-west1-c"}


def topo(key: str, *values: str) -> JSON:
    return {"key": key, "operator": "In", "values": list(values)}


def in_tree_pv(source: JSON, labels: dict[str, str] | None, *terms: JSON) -> JSON:
    pv: JSON = {"metadata": {"name": "pv", "labels": dict(labels or {})}, "spec": dict(source)}
    if terms:
        pv["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [t]} for t in terms]}}
    return pv


GCE = {"gcePersistentDisk": {"pdName": "test-disk", "fsType": "ext4", "partition": 0, "readOnly": False}}
EBS = {"awsElasticBlockStore": {"volumeID": "vol01", "fsType": "ext3", "partition": 1, "readOnly": True}}
CINDER = {"cinder": {"volumeID": "vol1", "fsType": "ext4", "readOnly": False}}


def want_affinity(key: str, *values: str, multi: bool = False) -> JSON:
    if multi:
        return {"required": {"nodeSelectorTerms": [{"matchExpressions": [topo(key, v)]} for v in values]}}
    return {"required": {"nodeSelectorTerms": [{"matchExpressions": [topo(key, *values)]}]}}


GKE = csi.GCE_PD_TOPOLOGY_KEY


@pytest.mark.parametrize(
    ("pv", "want"),
    [
        pytest.param(in_tree_pv(GCE, BETA), want_affinity(GKE, "us-east-1a"), id="GCE PD with beta zone labels"),
        pytest.param(in_tree_pv(GCE, GA), want_affinity(GKE, "us-east-1a"), id="GCE PD with GA kubernetes zone labels"),
        pytest.param(
            in_tree_pv(GCE, None, topo("failure-domain.beta.kubernetes.io/zone", "us-east-2a")),
            want_affinity(GKE, "us-east-2a"),
            id="GCE PD with existing topology (beta keys)",
        ),
        pytest.param(
            in_tree_pv(GCE, None, topo(GKE, "us-east-2a")),
            want_affinity(GKE, "us-east-2a"),
            id="GCE PD with existing topology (CSI keys)",
        ),
        pytest.param(
            in_tree_pv(GCE, BETA, topo("failure-domain.beta.kubernetes.io/zone", "us-east-2a")),
            want_affinity(GKE, "us-east-2a"),
            id="GCE PD with zone labels and topology",
        ),
        pytest.param(
            in_tree_pv(GCE, REGIONAL_BETA),
            want_affinity(GKE, "europe-west1-b", "europe-west1-c"),
            id="GCE PD with regional zones",
        ),
        pytest.param(
            in_tree_pv(GCE, None, topo("topology.kubernetes.io/zone", "europe-west1-b", "europe-west1-c")),
            want_affinity(GKE, "europe-west1-b", "europe-west1-c"),
            id="GCE PD with regional topology",
        ),
        pytest.param(
            in_tree_pv(
                GCE, REGIONAL_BETA, topo("failure-domain.beta.kubernetes.io/zone", "europe-west1-f", "europe-west1-g")
            ),
            want_affinity(GKE, "europe-west1-f", "europe-west1-g"),
            id="GCE PD with Beta regional zone and topology",
        ),
        pytest.param(
            in_tree_pv(GCE, REGIONAL_GA, topo("topology.kubernetes.io/zone", "europe-west1-f", "europe-west1-g")),
            want_affinity(GKE, "europe-west1-f", "europe-west1-g"),
            id="GCE PD with GA regional zone and topology",
        ),
        pytest.param(
            in_tree_pv(
                GCE,
                None,
                topo("topology.kubernetes.io/zone", "europe-west1-f"),
                topo("topology.kubernetes.io/zone", "europe-west1-g"),
            ),
            want_affinity(GKE, "europe-west1-f", "europe-west1-g", multi=True),
            id="GCE PD with multiple node selector terms",
        ),
        pytest.param(
            in_tree_pv(EBS, BETA),
            want_affinity(csi.AWS_EBS_TOPOLOGY_KEY, "us-east-1a"),
            id="AWS EBS with beta zone labels",
        ),
        pytest.param(
            in_tree_pv(EBS, BETA, topo("failure-domain.beta.kubernetes.io/zone", "us-east-2a")),
            want_affinity(csi.AWS_EBS_TOPOLOGY_KEY, "us-east-2a"),
            id="AWS EBS with beta zone labels and topology",
        ),
        pytest.param(
            in_tree_pv(EBS, GA), want_affinity(csi.AWS_EBS_TOPOLOGY_KEY, "us-east-1a"), id="AWS EBS with GA zone labels"
        ),
        pytest.param(
            in_tree_pv(EBS, GA, topo("topology.kubernetes.io/zone", "us-east-2a")),
            want_affinity(csi.AWS_EBS_TOPOLOGY_KEY, "us-east-2a"),
            id="AWS EBS with GA zone labels and topology",
        ),
        pytest.param(
            in_tree_pv(CINDER, BETA),
            want_affinity(csi.CINDER_TOPOLOGY_KEY, "us-east-1a"),
            id="OpenStack Cinder with zone labels",
        ),
        pytest.param(
            in_tree_pv(CINDER, BETA, topo("failure-domain.beta.kubernetes.io/zone", "us-east-2a")),
            want_affinity(csi.CINDER_TOPOLOGY_KEY, "us-east-2a"),
            id="OpenStack Cinder with zone labels and topology",
        ),
    ],
)
def test_topology_translation(pv: JSON, want: JSON) -> None:
    """TestTopologyTranslation: the translated PV's node affinity uses the CSI driver's topology key."""
    assert csi.translate_pv(pv)["spec"]["nodeAffinity"] == want


@pytest.mark.parametrize(
    ("source", "labels", "driver", "handle"),
    [
        pytest.param(
            GCE,
            {"topology.kubernetes.io/zone": "us-east-1a"},
            csi.GCE_PD_DRIVER,
            "projects/UNSPECIFIED/zones/us-east-1a/disks/test-disk",
            id="gce-zonal",
        ),
        pytest.param(
            GCE,
            REGIONAL_GA,
            csi.GCE_PD_DRIVER,
            "projects/UNSPECIFIED/regions/europe-west1/disks/test-disk",
            id="gce-regional",
        ),
        pytest.param(
            GCE, {}, csi.GCE_PD_DRIVER, "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/test-disk", id="gce-unspecified"
        ),
        pytest.param(
            {"awsElasticBlockStore": {"volumeID": "aws://us-east-1a/vol-123"}},
            {},
            csi.AWS_EBS_DRIVER,
            "vol-123",
            id="ebs-url",
        ),
        pytest.param(CINDER, {}, csi.CINDER_DRIVER, "vol1", id="cinder"),
        pytest.param(
            {"azureDisk": {"diskName": "d", "diskURI": "uri", "kind": "Managed"}},
            {},
            csi.AZURE_DISK_DRIVER,
            "uri",
            id="azure-disk-managed",
        ),
    ],
)
def test_pv_handles(source: JSON, labels: dict[str, str], driver: str, handle: str) -> None:
    """The CSI driver and volume handle a translated PV gets (what NodeVolumeLimits counts)."""
    out = csi.translate_pv(in_tree_pv(source, labels))
    assert out["spec"]["csi"] == {"driver": driver, "volumeHandle": handle}
    assert set(out["spec"]) & {"gcePersistentDisk", "awsElasticBlockStore", "cinder", "azureDisk"} == set()


@pytest.mark.parametrize(
    ("source", "message"),
    [
        pytest.param(
            {"awsElasticBlockStore": {"volumeID": "aws://zone/bad"}},
            "failed to translate Kubernetes ID to EBS Volume ID Invalid format for AWS volume (aws://zone/bad)",
            id="ebs-bad-id",
        ),
        pytest.param(
            {"azureDisk": {"diskName": "d", "diskURI": "u", "kind": "Shared"}},
            "kind(Shared) is not supported in csi migration",
            id="azure-shared",
        ),
    ],
)
def test_translation_errors(source: JSON, message: str) -> None:
    """Untranslatable volumes raise upstream's error text."""
    with pytest.raises(csi.TranslationError) as exc:
        csi.translate_pv(in_tree_pv(source, {}))
    assert str(exc.value) == message
    with pytest.raises(csi.TranslationError) as exc:
        csi.translate_inline({"name": "v", **source})
    assert str(exc.value) == message


def test_gce_region_errors() -> None:
    """A regional PD whose zones span regions cannot be translated."""
    pv = in_tree_pv(GCE, {"topology.kubernetes.io/zone": "us-east1-b__europe-west1-c"})
    with pytest.raises(csi.TranslationError, match=r"^failed to get region from zones: multiple or no regions gotten"):
        csi.translate_pv(pv)
