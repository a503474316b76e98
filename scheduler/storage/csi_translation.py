"""In-tree volume to CSI translation, as far as the volume plugins need it (not a plugin).

Our counterpart of `k8s.io/csi-translation-lib` v0.37: which in-tree volume sources are migratable, the
CSI driver each one became, and the CSI volume handle and PV node affinity a translated volume gets.
VolumeBinding checks a bound in-tree PV's *translated* node affinity on nodes whose CSINode says the plugin
is migrated; NodeVolumeLimits counts migrated in-tree volumes against the CSI driver's attach limit.

Only the plugins the scheduler treats as migrated (AWS EBS, GCE PD, Azure Disk, Cinder, Portworx) are ever
translated; Azure File and vSphere volumes are recognised (IsPVMigratable) but never translated by the
scheduler, exactly as upstream's `isCSIMigrationOn*` switch statements decide.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlparse

from scheduler.framework.objects import JSON
from scheduler.framework.types import REGION_LABEL, REGION_LABEL_BETA, ZONE_LABEL, ZONE_LABEL_BETA

LABEL_MULTI_ZONE_DELIMITER: Final = "__"
UNSPECIFIED: Final = "UNSPECIFIED"

GCE_PD_DRIVER: Final = "pd.csi.storage.gke.io"
GCE_PD_PLUGIN: Final = "kubernetes.io/gce-pd"
GCE_PD_TOPOLOGY_KEY: Final = "topology.gke.io/zone"
AWS_EBS_DRIVER: Final = "ebs.csi.aws.com"
AWS_EBS_PLUGIN: Final = "kubernetes.io/aws-ebs"
AWS_EBS_TOPOLOGY_KEY: Final = "topology." + AWS_EBS_DRIVER + "/zone"
CINDER_DRIVER: Final = "cinder.csi.openstack.org"
CINDER_PLUGIN: Final = "kubernetes.io/cinder"
CINDER_TOPOLOGY_KEY: Final = "topology.cinder.csi.openstack.org/zone"
AZURE_DISK_DRIVER: Final = "disk.csi.azure.com"
AZURE_DISK_PLUGIN: Final = "kubernetes.io/azure-disk"
AZURE_FILE_DRIVER: Final = "file.csi.azure.com"
AZURE_FILE_PLUGIN: Final = "kubernetes.io/azure-file"
VSPHERE_DRIVER: Final = "csi.vsphere.vmware.com"
VSPHERE_PLUGIN: Final = "kubernetes.io/vsphere-volume"
PORTWORX_DRIVER: Final = "pxd.portworx.com"
PORTWORX_PLUGIN: Final = "kubernetes.io/portworx-volume"


@dataclass(frozen=True, slots=True)
class InTreePlugin:
    """One migratable in-tree plugin: its volume source field, plugin name and CSI driver."""

    source: str
    plugin: str
    driver: str


IN_TREE_PLUGINS: Final = (
    InTreePlugin("gcePersistentDisk", GCE_PD_PLUGIN, GCE_PD_DRIVER),
    InTreePlugin("awsElasticBlockStore", AWS_EBS_PLUGIN, AWS_EBS_DRIVER),
    InTreePlugin("cinder", CINDER_PLUGIN, CINDER_DRIVER),
    InTreePlugin("azureDisk", AZURE_DISK_PLUGIN, AZURE_DISK_DRIVER),
    InTreePlugin("azureFile", AZURE_FILE_PLUGIN, AZURE_FILE_DRIVER),
    InTreePlugin("vsphereVolume", VSPHERE_PLUGIN, VSPHERE_DRIVER),
    InTreePlugin("portworxVolume", PORTWORX_PLUGIN, PORTWORX_DRIVER),
)
"""csi-translation-lib's inTreePlugins."""

# Plugins whose migration the scheduler considers on (volumebinding isCSIMigrationOnForPlugin and
# nodevolumelimits isCSIMigrationOn; CSIMigration{AzureFile,vSphere} are not in their switch).
SCHEDULER_MIGRATED_PLUGINS: Final = frozenset(
    {AWS_EBS_PLUGIN, GCE_PD_PLUGIN, AZURE_DISK_PLUGIN, CINDER_PLUGIN, PORTWORX_PLUGIN}
)


class TranslationError(ValueError):
    """A volume the library cannot translate; the message is upstream's."""


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    value = obj.get("spec")
    return value if isinstance(value, Mapping) else {}


def _source_plugin(source: Mapping[str, Any]) -> InTreePlugin | None:
    for plugin in IN_TREE_PLUGINS:
        if source.get(plugin.source) is not None:
            return plugin
    return None


def is_pv_migratable(pv: Mapping[str, Any]) -> bool:
    """IsPVMigratable: the PV uses one of the in-tree sources that have a CSI driver."""
    return _source_plugin(_spec(pv)) is not None


def is_inline_migratable(volume: Mapping[str, Any]) -> bool:
    """IsInlineMigratable: the pod volume uses one of those in-tree sources."""
    return _source_plugin(volume) is not None


def plugin_name_from_pv(pv: Mapping[str, Any]) -> str:
    """GetInTreePluginNameFromSpec(pv, nil)."""
    plugin = _source_plugin(_spec(pv))
    if plugin is None:
        name = (pv.get("metadata") or {}).get("name", "")
        raise TranslationError(f"could not find in-tree plugin name from persistent volume {name}")
    return plugin.plugin


def plugin_name_from_volume(volume: Mapping[str, Any]) -> str:
    """GetInTreePluginNameFromSpec(nil, volume)."""
    plugin = _source_plugin(volume)
    if plugin is None:
        raise TranslationError(f"could not find in-tree plugin name from volume {volume.get('name', '')}")
    return plugin.plugin


def is_migratable_plugin_name(name: str) -> bool:
    """IsMigratableIntreePluginByName."""
    return any(p.plugin == name for p in IN_TREE_PLUGINS)


def csi_name_from_plugin(name: str) -> str:
    """GetCSINameFromInTreeName."""
    for plugin in IN_TREE_PLUGINS:
        if plugin.plugin == name:
            return plugin.driver
    raise TranslationError(f"could not find CSI Driver name for plugin {name}")


# ---------------------------------------------------------------------------------------------------------
# Volume handles


def _go_set(values: set[str]) -> str:
    """fmt %v of a sets.String (a Go map printed with sorted keys)."""
    return "map[" + " ".join(f"{v}:{{}}" for v in sorted(values)) + "]"


def _gce_region_from_zones(zones: list[str]) -> str:
    if not zones:
        raise TranslationError("no zones specified")
    regions: set[str] = set()
    for zone in zones:
        parts = zone.split("-")
        if len(parts) != 3:
            raise TranslationError(f"zone in unexpected format, expected: {{locale}}-{{region}}-{{zone}}, got: {zone}")
        regions.add("-".join(parts[:2]))
    if len(regions) != 1:
        raise TranslationError(f"multiple or no regions gotten from zones, got: {_go_set(regions)}")
    return next(iter(regions))


def ebs_volume_id(kubernetes_id: str) -> str:
    """KubernetesVolumeIDToEBSVolumeID: `aws://zone/vol-...` or a bare `vol-...`."""
    if not kubernetes_id.startswith("aws://"):
        return kubernetes_id
    try:
        url = urlparse(kubernetes_id)
    except ValueError as exc:
        raise TranslationError(f"Invalid disk name ({kubernetes_id}): {exc}") from exc
    if url.scheme != "aws":
        raise TranslationError(f"Invalid scheme for AWS volume ({kubernetes_id})")
    aws_id = url.path.strip("/")
    if not aws_id.startswith("vol-") or "/" in aws_id:
        raise TranslationError(f"Invalid format for AWS volume ({kubernetes_id})")
    return aws_id


def _ebs_id(source: Mapping[str, Any]) -> str:
    try:
        return ebs_volume_id(str(source.get("volumeID") or ""))
    except TranslationError as exc:
        raise TranslationError(f"failed to translate Kubernetes ID to EBS Volume ID {exc}") from exc


def _azure_disk_kind_check(source: Mapping[str, Any]) -> None:
    kind = source.get("kind")
    if kind is not None and str(kind).lower() != "managed":
        raise TranslationError(f"kind({kind}) is not supported in csi migration")


# ---------------------------------------------------------------------------------------------------------
# Topology (in_tree_volume.go)


def _terms(pv: JSON) -> list[Any]:
    affinity = _spec(pv).get("nodeAffinity")
    required = affinity.get("required") if isinstance(affinity, Mapping) else None
    terms = required.get("nodeSelectorTerms") if isinstance(required, Mapping) else None
    return terms if isinstance(terms, list) else []


def _expressions(term: Any) -> list[Any]:
    exprs = term.get("matchExpressions") if isinstance(term, Mapping) else None
    return exprs if isinstance(exprs, list) else []


def _topology_key_exists(key: str, pv: JSON) -> bool:
    return any(isinstance(e, Mapping) and e.get("key") == key for t in _terms(pv) for e in _expressions(t))


def _topology_label(pv: JSON) -> tuple[str, str]:
    """getTopologyLabel: GA or beta zone/region keys, whichever the PV's affinity (then labels) uses."""
    labels = (pv.get("metadata") or {}).get("labels") or {}
    if _topology_key_exists(ZONE_LABEL, pv):
        return ZONE_LABEL, REGION_LABEL
    if _topology_key_exists(ZONE_LABEL_BETA, pv):
        return ZONE_LABEL_BETA, REGION_LABEL_BETA
    if ZONE_LABEL in labels:
        return ZONE_LABEL, REGION_LABEL
    if ZONE_LABEL_BETA in labels:
        return ZONE_LABEL_BETA, REGION_LABEL_BETA
    return ZONE_LABEL, REGION_LABEL


def _topology_values(pv: JSON, key: str) -> list[str]:
    values: set[str] = set()
    for term in _terms(pv):
        for expr in _expressions(term):
            if isinstance(expr, Mapping) and expr.get("key") == key:
                values.update(str(v) for v in expr.get("values") or [])
    return sorted(values)


def _replace_topology(pv: JSON, old: str, new: str) -> None:
    for term in _terms(pv):
        for expr in _expressions(term):
            if isinstance(expr, dict) and expr.get("key") == old:
                expr["key"] = new


def _add_topology(pv: JSON, key: str, zones: list[str]) -> None:
    filtered = sorted({z.strip() for z in zones if z.strip()})
    if not filtered:
        return  # upstream returns an error here, which its caller ignores
    pv_spec = pv.setdefault("spec", {})
    affinity = pv_spec.get("nodeAffinity")
    if not isinstance(affinity, dict):
        affinity = pv_spec["nodeAffinity"] = {}
    required = affinity.get("required")
    if not isinstance(required, dict):
        required = affinity["required"] = {}
    terms = required.get("nodeSelectorTerms")
    if not isinstance(terms, list) or not terms:
        terms = required["nodeSelectorTerms"] = [{}]
    for term in terms:
        if isinstance(term, dict):
            term.setdefault("matchExpressions", []).append({"key": key, "operator": "In", "values": list(filtered)})


def _translate_topology(pv: JSON, csi_key: str) -> None:
    """translateTopologyFromInTreeToCSI: zone terms (or the zone label) become the driver's topology key;
    beta region terms become the GA region key."""
    zone_label, region_label = _topology_label(pv)
    if _topology_values(pv, zone_label):
        _replace_topology(pv, zone_label, csi_key)
    else:
        labels = (pv.get("metadata") or {}).get("labels") or {}
        if zone_label in labels:
            _add_topology(pv, csi_key, str(labels[zone_label]).split(LABEL_MULTI_ZONE_DELIMITER))
    if region_label == REGION_LABEL_BETA and _topology_values(pv, region_label):
        _replace_topology(pv, region_label, REGION_LABEL)


# ---------------------------------------------------------------------------------------------------------
# Translations


def translate_pv(pv: Mapping[str, Any]) -> JSON:
    """TranslateInTreePVToCSI for the scheduler's migrated plugins: a copy with spec.csi (driver and
    volumeHandle) and the translated node affinity. TranslationError as upstream."""
    out: JSON = copy.deepcopy(dict(pv))
    pv_spec = out.setdefault("spec", {})
    plugin = _source_plugin(pv_spec)
    if plugin is None:
        name = (pv.get("metadata") or {}).get("name", "")
        raise TranslationError(f"could not find in-tree plugin translation logic for {name!r}")
    source = pv_spec.get(plugin.source) or {}
    labels = (out.get("metadata") or {}).get("labels") or {}
    if plugin.plugin == GCE_PD_PLUGIN:
        pd_name = str(source.get("pdName") or "")
        zones_label = str(labels.get(ZONE_LABEL_BETA) or labels.get(ZONE_LABEL) or "")
        zones = zones_label.split(LABEL_MULTI_ZONE_DELIMITER)
        if len(zones) == 1 and zones[0]:
            handle = f"projects/{UNSPECIFIED}/zones/{zones[0]}/disks/{pd_name}"
        elif len(zones) > 1:
            try:
                region = _gce_region_from_zones(zones)
            except TranslationError as exc:
                raise TranslationError(f"failed to get region from zones: {exc}") from exc
            handle = f"projects/{UNSPECIFIED}/regions/{region}/disks/{pd_name}"
        else:
            handle = f"projects/{UNSPECIFIED}/zones/{UNSPECIFIED}/disks/{pd_name}"
        _translate_topology(out, GCE_PD_TOPOLOGY_KEY)
    elif plugin.plugin == AWS_EBS_PLUGIN:
        handle = _ebs_id(source)
        _translate_topology(out, AWS_EBS_TOPOLOGY_KEY)
    elif plugin.plugin == CINDER_PLUGIN:
        handle = str(source.get("volumeID") or "")
        _translate_topology(out, CINDER_TOPOLOGY_KEY)
    elif plugin.plugin == AZURE_DISK_PLUGIN:
        handle = str(source.get("diskURI") or "")
        _azure_disk_kind_check(source)
    elif plugin.plugin == PORTWORX_PLUGIN:
        handle = str(source.get("volumeID") or "")
    else:  # Azure File, vSphere: the scheduler never asks for these
        raise TranslationError(f"translation of {plugin.plugin} volumes is not needed by the scheduler")
    del pv_spec[plugin.source]
    pv_spec["csi"] = {"driver": plugin.driver, "volumeHandle": handle}
    return out


def translate_inline(volume: Mapping[str, Any]) -> tuple[str, str]:
    """TranslateInTreeInlineVolumeToCSI for the scheduler's migrated plugins: (driver, volume handle)."""
    plugin = _source_plugin(volume)
    if plugin is None:
        raise TranslationError(f"could not find in-tree plugin translation logic for {volume.get('name', '')!r}")
    source = volume.get(plugin.source) or {}
    if plugin.plugin == GCE_PD_PLUGIN:
        return plugin.driver, f"projects/{UNSPECIFIED}/zones/{UNSPECIFIED}/disks/{source.get('pdName') or ''}"
    if plugin.plugin == AWS_EBS_PLUGIN:
        return plugin.driver, _ebs_id(source)
    if plugin.plugin in (CINDER_PLUGIN, PORTWORX_PLUGIN):
        return plugin.driver, str(source.get("volumeID") or "")
    if plugin.plugin == AZURE_DISK_PLUGIN:
        _azure_disk_kind_check(source)
        return plugin.driver, str(source.get("diskURI") or "")
    raise TranslationError(f"translation of {plugin.plugin} volumes is not needed by the scheduler")
