"""ResourceClaims in the in-memory cluster: the writes DynamicResources makes (the ClaimWriter half of
`MemoryCluster`), and what kube-controller-manager's resourceclaim controller and a DRA driver do.

- Controller: a pod entry naming a ResourceClaimTemplate gets a claim made from it (named
  `<pod>-<entry>-<5 characters>` like the API server's generateName, owned by the pod, annotated with the
  entry's name), recorded in the pod's `status.resourceClaimStatuses`; a pod that is gone leaves the
  `reservedFor` of its claims, a claim nobody uses any more is deallocated (finalizer removed), and the claims
  generated for a pod are deleted with it.
- Driver: a device allocated with binding conditions gets them reported true at once in `status.devices`
  (the devices are attached instantly), so offline binding never waits.

The API server's rules that matter are kept: an update must carry the stored resourceVersion (409 otherwise),
an update of the object leaves its status alone and a status update leaves the rest alone, and a claim with
finalizers is only marked for deletion until they are gone.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from scheduler.core.api import WriteError
from scheduler.framework.interface import ConflictError, NotFoundError
from scheduler.framework.objects import RESOURCE_CLAIM, RESOURCE_CLAIM_TEMPLATE, object_key
from scheduler.framework.types import PodInfo

if TYPE_CHECKING:
    from scheduler.adapters.memory import MemoryCluster

JSON = dict[str, Any]
FINALIZER = "resource.kubernetes.io/delete-protection"
POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
_RESOURCE = "resourceclaims.resource.k8s.io"
_DELETED_AT = "2026-01-01T00:00:00Z"


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    value = obj.get("metadata")
    return value if isinstance(value, Mapping) else {}


def _suffix(*parts: str) -> str:
    """Five characters of the API server's generateName alphabet, derived from `parts` so a simulation is
    reproducible."""
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    digest = int.from_bytes(hashlib.sha256("/".join(parts).encode()).digest()[:8], "big")
    out = []
    for _ in range(5):
        digest, index = divmod(digest, len(alphabet))
        out.append(alphabet[index])
    return "".join(out)


def pod_uid(pod: Mapping[str, Any]) -> str:
    """The pod's uid as the in-memory cluster knows it ("namespace/name" for hand-written pods without one)."""
    meta = _meta(pod)
    return str(meta.get("uid") or f"{meta.get('namespace') or 'default'}/{meta.get('name')}")


def generate_name(base: str, *seed: str) -> str:
    return base + _suffix(base, *seed)


def _default_request(request: JSON) -> None:
    """SetDefaults_ExactDeviceRequest / SetDefaults_DeviceSubRequest, and a toleration's operator Equal."""
    if not request.get("allocationMode"):
        request["allocationMode"] = "ExactCount"
    if request["allocationMode"] == "ExactCount" and not request.get("count"):
        request["count"] = 1
    for toleration in request.get("tolerations") or []:
        if isinstance(toleration, dict) and not toleration.get("operator"):
            toleration["operator"] = "Equal"


def default_claim_spec(spec: Any) -> None:
    """What the API server defaults in a ResourceClaim's (or a template's) spec when it is created: every
    request's allocationMode (ExactCount) and count (1), tolerations' operator (Equal). In place."""
    devices = spec.get("devices") if isinstance(spec, dict) else None
    requests = devices.get("requests") if isinstance(devices, dict) else None
    for request in requests if isinstance(requests, list) else []:
        if not isinstance(request, dict):
            continue
        if isinstance(request.get("exactly"), dict):
            _default_request(request["exactly"])
        for sub in request.get("firstAvailable") or []:
            if isinstance(sub, dict):
                _default_request(sub)


class ClaimWrites:
    """The ClaimWriter over a MemoryCluster's object store (409/404 like the API server)."""

    def __init__(self, cluster: MemoryCluster) -> None:
        self.cluster = cluster

    def _stored(self, namespace: str, name: str) -> JSON:
        stored = self.cluster.objects.get((RESOURCE_CLAIM, namespace, name))
        if stored is None:
            raise NotFoundError(f'{_RESOURCE} "{name}" not found')
        return stored

    def _check_version(self, stored: Mapping[str, Any], obj: Mapping[str, Any]) -> None:
        if str(_meta(obj).get("resourceVersion") or "") != str(_meta(stored).get("resourceVersion") or ""):
            raise ConflictError(
                f'Operation cannot be fulfilled on {_RESOURCE} "{_meta(stored).get("name")}": the object has been '
                "modified; please apply your changes to the latest version and try again"
            )

    def _write(self, claim: JSON) -> JSON:
        """Store a new version; a claim marked for deletion whose finalizers are gone is removed."""
        meta = claim.setdefault("metadata", {})
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            namespace, name = object_key(claim)
            self.cluster.delete_object(RESOURCE_CLAIM, namespace, name)
            return copy.deepcopy(claim)
        claim.setdefault("kind", RESOURCE_CLAIM)
        written = self.cluster.write_object(claim)
        self.cluster.claims.after_write(written)
        return copy.deepcopy(written)

    async def get_resource_claim(self, namespace: str, name: str) -> JSON:
        return copy.deepcopy(self._stored(namespace, name))

    async def create_resource_claim(self, claim: Mapping[str, Any]) -> JSON:
        new = copy.deepcopy(dict(claim))
        meta = new.setdefault("metadata", {})
        namespace = str(meta.get("namespace") or "default")
        if not meta.get("name"):
            base = str(meta.get("generateName") or "")
            if not base:
                raise WriteError("ResourceClaim: metadata.name or metadata.generateName is required")
            meta["name"] = generate_name(base, namespace, str(len(self.cluster.objects)))
        if (RESOURCE_CLAIM, namespace, str(meta["name"])) in self.cluster.objects:
            raise WriteError(f'{_RESOURCE} "{meta["name"]}" already exists')
        meta["namespace"] = namespace
        meta.setdefault("uid", f"resourceclaim-{namespace}-{meta['name']}")
        meta.setdefault("creationTimestamp", _DELETED_AT)
        new["kind"] = RESOURCE_CLAIM
        new.setdefault("apiVersion", "resource.k8s.io/v1")
        meta["resourceVersion"] = ""
        return self._write(new)

    async def update_resource_claim(self, claim: Mapping[str, Any]) -> JSON:
        stored = self._stored(*object_key(dict(claim)))
        self._check_version(stored, claim)
        new = copy.deepcopy(dict(claim))
        new["status"] = copy.deepcopy(stored.get("status") or {})  # the main resource ignores status
        new.setdefault("metadata", {})["deletionTimestamp"] = _meta(stored).get("deletionTimestamp")
        if new["metadata"]["deletionTimestamp"] is None:
            del new["metadata"]["deletionTimestamp"]
        return self._write(new)

    async def update_resource_claim_status(self, claim: Mapping[str, Any]) -> JSON:
        stored = self._stored(*object_key(dict(claim)))
        self._check_version(stored, claim)
        new = copy.deepcopy(stored)
        new["status"] = copy.deepcopy(dict(claim).get("status") or {})  # the status subresource ignores the rest
        return self._write(new)

    async def unreserve_resource_claim(self, namespace: str, name: str, claim_uid: str, pod_uid: str) -> None:
        stored = self._stored(namespace, name)
        if claim_uid and str(_meta(stored).get("uid") or "") != claim_uid:
            raise ConflictError(
                f"Precondition failed: UID in precondition: {claim_uid}, UID in object meta: {_meta(stored).get('uid')}"
            )
        new = copy.deepcopy(stored)
        status = new.setdefault("status", {})
        status["reservedFor"] = [r for r in status.get("reservedFor") or [] if str(r.get("uid") or "") != pod_uid]
        if not status["reservedFor"]:
            del status["reservedFor"]
        self._write(new)

    async def delete_resource_claim(self, namespace: str, name: str) -> None:
        stored = self._stored(namespace, name)
        if _meta(stored).get("finalizers"):
            new = copy.deepcopy(stored)
            new["metadata"]["deletionTimestamp"] = _DELETED_AT
            self._write(new)
            return
        self.cluster.delete_object(RESOURCE_CLAIM, namespace, name)

    async def patch_pod_extended_resource_claim_status(self, pod: PodInfo, status: Mapping[str, Any]) -> None:
        obj = self.cluster.pods.get(pod.uid)
        if obj is None:
            raise NotFoundError(f'pods "{pod.name}" not found')
        obj.setdefault("status", {})["extendedResourceClaimStatus"] = copy.deepcopy(dict(status))
        self.cluster.apply_pod(obj)


class ResourceClaimController:
    """The resourceclaim controller and a DRA driver, in memory (see the module docstring)."""

    def __init__(self, cluster: MemoryCluster) -> None:
        self.cluster = cluster

    # ------------------------------------------------------------------ pods

    def pod_applied(self, pod: JSON) -> bool:
        """Make the claims of the pod's template entries that do not exist yet; True when the pod's status
        changed (the caller delivers the pod again)."""
        spec = pod.get("spec") or {}
        entries = spec.get("resourceClaims") if isinstance(spec, Mapping) else None
        if not isinstance(entries, list) or spec.get("nodeName"):
            return False
        meta = _meta(pod)
        namespace = str(meta.get("namespace") or "default")
        status = pod.setdefault("status", {})
        recorded = {str(e.get("name")): e for e in status.get("resourceClaimStatuses") or [] if isinstance(e, Mapping)}
        changed = False
        for entry in entries:
            if not isinstance(entry, Mapping) or not entry.get("resourceClaimTemplateName") or not entry.get("name"):
                continue
            if str(entry["name"]) in recorded:
                continue
            template_key = (RESOURCE_CLAIM_TEMPLATE, namespace, str(entry["resourceClaimTemplateName"]))
            template = self.cluster.objects.get(template_key)
            if template is None:
                continue  # the controller retries when the template appears
            claim = self._claim_from_template(pod, str(entry["name"]), template)
            self.cluster.apply_object(claim)
            recorded[str(entry["name"])] = {"name": str(entry["name"]), "resourceClaimName": claim["metadata"]["name"]}
            changed = True
        if changed:
            status["resourceClaimStatuses"] = list(recorded.values())
        return changed

    @staticmethod
    def _claim_from_template(pod: Mapping[str, Any], entry: str, template: Mapping[str, Any]) -> JSON:
        meta = _meta(pod)
        pod_name = str(meta.get("name") or "")
        base = f"{pod_name}-{entry}-"
        if len(base) > 57:  # room for the 5 random characters in 63
            base = pod_name[: len(pod_name) * 57 // len(base)] + "-" + entry[: len(entry) * 57 // len(base)]
        raw_spec = template.get("spec")
        template_spec: Mapping[str, Any] = raw_spec if isinstance(raw_spec, Mapping) else {}
        raw_meta = template_spec.get("metadata")
        template_meta: Mapping[str, Any] = raw_meta if isinstance(raw_meta, Mapping) else {}
        annotations = dict(template_meta.get("annotations") or {})
        annotations[POD_CLAIM_NAME_ANNOTATION] = entry
        namespace = str(meta.get("namespace") or "default")
        uid = pod_uid(pod)
        name = generate_name(base, namespace, uid)
        claim: JSON = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": RESOURCE_CLAIM,
            "metadata": {
                "name": name,
                "namespace": namespace,
                "generateName": base,
                "annotations": annotations,
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "name": pod_name,
                        "uid": uid,
                        "controller": True,
                    }
                ],
            },
            "spec": copy.deepcopy(template_spec.get("spec") or {}),
        }
        if template_meta.get("labels"):
            claim["metadata"]["labels"] = dict(template_meta["labels"])
        return claim

    def pod_gone(self, pod: Mapping[str, Any]) -> None:
        """A pod was deleted: it leaves the reservedFor of every claim (the last one out deallocates), and the
        claims generated for it are deleted."""
        uid = pod_uid(pod)
        namespace = str(_meta(pod).get("namespace") or "default")
        for key, stored in list(self.cluster.objects.items()):
            if key[0] != RESOURCE_CLAIM or key[1] != namespace:
                continue
            claim: JSON | None = stored
            reserved = (stored.get("status") or {}).get("reservedFor") or []
            if any(str(r.get("uid") or "") == uid for r in reserved):
                claim = self._release(stored, uid)
            if claim is None:
                continue
            owners = _meta(claim).get("ownerReferences") or []
            if any(r.get("controller") and str(r.get("uid") or "") == uid for r in owners):
                self._delete(claim)

    def _release(self, claim: JSON, pod_uid: str) -> JSON | None:
        new = copy.deepcopy(claim)
        status = new.setdefault("status", {})
        status["reservedFor"] = [r for r in status.get("reservedFor") or [] if str(r.get("uid") or "") != pod_uid]
        if not status["reservedFor"]:
            del status["reservedFor"]
            finalizers = new["metadata"].get("finalizers") or []
            if FINALIZER in finalizers:
                status.pop("allocation", None)
                status.pop("devices", None)
                new["metadata"]["finalizers"] = [f for f in finalizers if f != FINALIZER]
        self.cluster.write_object(new)
        return self.cluster.objects.get((RESOURCE_CLAIM, *object_key(new)))

    def _delete(self, claim: JSON) -> None:
        namespace, name = object_key(claim)
        if _meta(claim).get("finalizers"):
            new = copy.deepcopy(claim)
            new["metadata"]["deletionTimestamp"] = _DELETED_AT
            self.cluster.write_object(new)
            return
        self.cluster.delete_object(RESOURCE_CLAIM, namespace, name)

    # ------------------------------------------------------------------ the driver

    def after_write(self, claim: JSON) -> None:
        """Report every binding condition of a newly allocated device as met (status.devices)."""
        allocation = (claim.get("status") or {}).get("allocation")
        results = ((allocation or {}).get("devices") or {}).get("results") or []
        waiting = [r for r in results if r.get("bindingConditions")]
        if not waiting:
            return
        devices = list((claim.get("status") or {}).get("devices") or [])
        known = {(d.get("driver"), d.get("pool"), d.get("device")) for d in devices}
        added = False
        for result in waiting:
            key = (result.get("driver"), result.get("pool"), result.get("device"))
            if key in known:
                continue
            conditions = [
                {"type": str(kind), "status": "True", "reason": "Attached", "lastTransitionTime": _DELETED_AT}
                for kind in result.get("bindingConditions") or []
            ]
            devices.append({"driver": key[0], "pool": key[1], "device": key[2], "conditions": conditions})
            added = True
        if added:
            new = copy.deepcopy(claim)
            new["status"]["devices"] = devices
            self.cluster.write_object(new)
