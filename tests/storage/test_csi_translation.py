"""csi-translation-lib (in-tree volume sources as CSI): upstream's translate_test.go TestTopologyTranslation,
the driver and volume handle a translated PV gets, and upstream's error texts."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.storage import csi_translation as csi

JSON = dict[str, Any]

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
