"""`pyscheduler simulate`: replay a cluster dump (Nodes, Pods, DaemonSets) through the real scheduler offline.

Objects apply in file order; after each one the scheduler runs until no queued pod can make progress, as
in a live cluster with infinitely fast time, on a fake clock: backoffs pass at once, and Permit waits (a
gang gathering) time out only after the last object, when nothing else can move. DaemonSets expand to one
pod per node, pinned with `matchFields metadata.name` exactly as the DaemonSet controller pins them,
including for nodes added later. Pods not created yet first get what kube-apiserver does on create
(`scheduler/admission.py`: matchLabelKeys/mismatchLabelKeys merged into spread and pod affinity selectors), so
offline results equal live ones.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import mmap
import os
import stat
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Final

from scheduler import caching
from scheduler.adapters.memory import MemoryCluster
from scheduler.admission import admit_pod
from scheduler.config.documents import DocumentError, decode_text, load_all, load_json_bytes, looks_like_json
from scheduler.config.json_dump import load_json_list
from scheduler.config.types import SchedulerConfiguration
from scheduler.core.clock import FakeClock
from scheduler.core.explain import Explanation, explain_pod
from scheduler.core.profile import build_scheduler
from scheduler.core.scheduler import Scheduler
from scheduler.framework.node_selector import RequiredNodeAffinity
from scheduler.framework.objects import KINDS, NAMESPACE, RESOURCE_CLAIM, SYSTEM_NAMESPACES
from scheduler.framework.types import (
    NodeRecord,
    ParseError,
    PodInfo,
    parse_node,
    parse_pod,
    parse_pod_like,
    tolerations_tolerate,
)
from scheduler.plugins.dynamic_resources.claims import ClaimError, allocation_of, allocation_results, claim_name
from scheduler.validation import PodSpecMemo, validate

JSON = dict[str, Any]
SUPPORTED_KINDS = ("Node", "Pod", "DaemonSet", *sorted(KINDS))

# Tolerations the DaemonSet controller adds to every daemon pod (AddOrUpdateDaemonPodTolerations).
_DAEMON_TOLERATIONS = [
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
]
_HOST_NETWORK_TOLERATION = ("node.kubernetes.io/network-unavailable", "NoSchedule")


class InputError(ValueError):
    """Malformed simulation input; the message names the document and the field."""


# The PriorityClasses every API server creates at startup (scheduling.SystemPriorityClasses).
SYSTEM_PRIORITY_CLASSES: dict[str, int] = {
    "system-node-critical": 2_000_001_000,
    "system-cluster-critical": 2_000_000_000,
}


def _priority_classes(objects: Iterable[JSON]) -> dict[str, JSON]:
    classes: dict[str, JSON] = {
        name: {"metadata": {"name": name}, "value": value, "preemptionPolicy": "PreemptLowerPriority"}
        for name, value in SYSTEM_PRIORITY_CLASSES.items()
    }
    for obj in objects:
        if obj.get("kind") == "PriorityClass":
            _check_priority_class(obj)
            classes[str(obj["metadata"]["name"])] = obj
    return classes


def _check_priority_class(obj: JSON) -> None:
    """Refuse a PriorityClass the API server would refuse, naming the field (value is a required int32)."""
    name = (obj.get("metadata") or {}).get("name")
    where = f"PriorityClass {name}"
    if not isinstance(name, str) or not name:
        raise InputError(f"{where}: metadata.name: Required value")
    value = obj.get("value")
    if isinstance(value, bool) or not isinstance(value, int) or not -(2**31) <= value < 2**31:
        raise InputError(f"{where}: value: must be a 32-bit integer, got {value!r}")
    if not isinstance(obj.get("globalDefault", False), bool):
        raise InputError(f"{where}: globalDefault: must be a boolean")
    policy = obj.get("preemptionPolicy")
    if policy is not None and policy not in ("Never", "PreemptLowerPriority"):
        raise InputError(
            f'{where}: preemptionPolicy: Unsupported value: {policy!r}: supported values: "Never", '
            '"PreemptLowerPriority"'
        )


class _Refused(Exception):
    """Priority admission refused a pod (the message without the object's name)."""


def _admit_priority(spec: JSON, classes: Mapping[str, JSON]) -> None:
    """What the Priority admission plugin does at pod creation: spec.priority (and preemptionPolicy) from
    spec.priorityClassName, or from the globalDefault class (the lowest-valued one), or 0.

    A pod that already carries spec.priority (a dump of a live cluster) keeps it when its class is not in
    the file; a value that contradicts a class in the file is refused with admission's message
    (_Refused, which the caller prefixes with the object it names).
    """
    name = spec.get("priorityClassName") or ""
    if not isinstance(name, str):
        raise _Refused("spec.priorityClassName: must be a string")
    given = spec.get("priority")
    if given is not None and (isinstance(given, bool) or not isinstance(given, int)):
        raise _Refused("spec.priority: must be an integer")
    if name:
        cls = classes.get(name)
        if cls is None:
            if given is not None:
                return  # a dump without its PriorityClass objects: trust the admitted value
            raise _Refused(f"no PriorityClass with name {name} was found")
    else:
        defaults = [c for c in classes.values() if c.get("globalDefault") is True]
        cls = min(defaults, key=lambda c: int(c.get("value") or 0)) if defaults else None
        if cls is not None:
            spec["priorityClassName"] = str(cls["metadata"]["name"])
    value = int(cls.get("value") or 0) if cls is not None else 0
    if given is not None and given != value:
        raise _Refused(
            f"the integer value of priority ({given}) must not be provided in pod spec; "
            f"priority admission controller computed {value} from the given PriorityClass name"
        )
    spec["priority"] = value
    policy = str(cls.get("preemptionPolicy") or "PreemptLowerPriority") if cls is not None else "PreemptLowerPriority"
    if spec.get("preemptionPolicy") not in (None, policy):
        raise _Refused(
            f"the string value of PreemptionPolicy ({spec['preemptionPolicy']}) must not be provided in "
            f"pod spec; priority admission controller computed {policy} from the given PriorityClass name"
        )
    spec["preemptionPolicy"] = policy


def admit_priorities(objects: list[JSON], source: str = "input") -> None:
    """Resolve every Pod's and DaemonSet template's priority as the API server would admit them, against
    the PriorityClasses of the whole file (they exist before the pods in a cluster) plus the system ones."""
    classes = _priority_classes(objects)
    for obj in objects:
        kind = obj.get("kind")
        try:
            _admit_object(obj, kind, classes)
        except _Refused as exc:
            name = (obj.get("metadata") or {}).get("name")
            raise InputError(f"{source}: {kind} {name}: {exc}") from None


def _admit_object(obj: JSON, kind: Any, classes: Mapping[str, JSON]) -> None:
    """Priority admission of a Pod, or of a DaemonSet's pod template (_Refused when it refuses)."""
    if kind == "Pod" and isinstance(obj.get("spec"), dict):
        _admit_priority(obj["spec"], classes)
    elif kind == "DaemonSet":
        template = ((obj.get("spec") or {}).get("template") or {}).get("spec")
        if isinstance(template, dict):
            try:
                _admit_priority(template, classes)
            except _Refused as exc:
                raise _Refused(f"spec.template: {exc}") from None


@dataclass(frozen=True, slots=True)
class AllocatedDevice:
    """One device a pod's claim got (DynamicResources wrote it into the claim's status.allocation)."""

    claim: str  # namespace/name
    request: str
    driver: str
    pool: str
    device: str

    def to_json(self) -> JSON:
        return {
            "claim": self.claim,
            "request": self.request,
            "driver": self.driver,
            "pool": self.pool,
            "device": self.device,
        }

    def text(self) -> str:
        return f"{self.claim.split('/', 1)[-1]}/{self.request}={self.driver}/{self.pool}/{self.device}"


@dataclass(slots=True)
class Outcome:
    namespace: str
    name: str
    node: str | None
    message: str | None
    preempted_by: str | None = None  # "namespace/name" of the pod whose preemption evicted this one
    devices: list[AllocatedDevice] = field(default_factory=list)  # of its ResourceClaims, once it is bound

    def to_json(self) -> JSON:
        return {
            "namespace": self.namespace,
            "name": self.name,
            "node": self.node,
            "message": self.message,
            "preemptedBy": self.preempted_by,
            "devices": [d.to_json() for d in self.devices],
        }


def pod_devices(cluster: MemoryCluster, pod_obj: Mapping[str, Any]) -> list[AllocatedDevice]:
    """The devices allocated to the claims a pod uses (its spec.resourceClaims and the claim made for its
    extended resources), as the claims' status.allocation records them."""
    try:
        pod = parse_pod(pod_obj)
    except ParseError:
        return []
    names: list[str] = []
    for entry in pod.resource_claims:
        try:
            name, _ = claim_name(pod, entry)
        except ClaimError:
            continue
        if name is not None:
            names.append(name)
    if pod.extended_resource_claim:
        names.append(pod.extended_resource_claim)
    out: list[AllocatedDevice] = []
    for name in names:
        claim = cluster.objects.get((RESOURCE_CLAIM, pod.namespace, name))
        for result in allocation_results(allocation_of(claim)) if claim is not None else []:
            out.append(
                AllocatedDevice(
                    f"{pod.namespace}/{name}",
                    str(result.get("request") or ""),
                    str(result.get("driver") or ""),
                    str(result.get("pool") or ""),
                    str(result.get("device") or ""),
                )
            )
    return out


@dataclass(slots=True)
class Preemption:
    """One preemption that happened: who evicted which pods from which node."""

    preemptor: str
    node: str
    victims: list[str] = field(default_factory=list)

    def to_json(self) -> JSON:
        return {"preemptor": self.preemptor, "node": self.node, "victims": list(self.victims)}


@dataclass(slots=True)
class SimulationResult:
    outcomes: list[Outcome] = field(default_factory=list)
    preemptions: list[Preemption] = field(default_factory=list)
    cluster: MemoryCluster | None = None
    scheduler: Scheduler | None = None

    def to_json(self) -> JSON:
        return {
            "pods": [o.to_json() for o in self.outcomes],
            "preemptions": [p.to_json() for p in self.preemptions],
        }

    def pending(self) -> list[Outcome]:
        """The pods left Pending (not bound, not evicted by a preemption)."""
        return [o for o in self.outcomes if o.node is None and o.preempted_by is None]

    def other_schedulers(self) -> dict[str, int]:
        """Pods without a node whose schedulerName no profile serves (nothing simulated them), by name."""
        assert self.cluster is not None and self.scheduler is not None
        out: dict[str, int] = {}
        for obj in self.cluster.pods.values():
            spec = obj.get("spec") or {}
            name = str(spec.get("schedulerName") or "default-scheduler")
            if not spec.get("nodeName") and name not in self.scheduler.profiles:
                out[name] = out.get(name, 0) + 1
        return out

    def explain(self, namespace: str, name: str) -> Explanation:
        """Explain one pod against the final state of the simulation."""
        assert self.cluster is not None and self.scheduler is not None
        for obj in self.cluster.pods.values():
            meta = obj.get("metadata") or {}
            if (meta.get("namespace") or "default") == namespace and meta.get("name") == name:
                pod = parse_pod(obj)
                # Plugins of their own over the explained snapshot: what they read from the Handle is what is shown.
                fwk, snapshot = self.scheduler.explain_environment(pod.scheduler_name)
                return explain_pod(fwk, pod, snapshot)
        raise KeyError(f"pod {namespace}/{name} not found in the simulation")


def load_documents(text: str, source: str = "input", progress: Callable[[str], None] | None = None) -> Documents:
    """Parse YAML documents, a JSON document, or v1 Lists into objects, validating each as the API server
    would (the fields the scheduler reads), so nothing runs on bad input. Duplicate objects are refused."""
    try:
        docs = load_all(text, source)
    except DocumentError as exc:
        raise InputError(str(exc)) from exc
    return documents_from(docs, source, progress)


def read_cluster(path: str, progress: Callable[[str], None] | None = None) -> Documents:
    """load_documents of a file ('-': stdin), its bytes and text dropped as soon as they are parsed (a 500 MB
    JSON dump is never held as bytes, text and objects at once). OSError when it cannot be read."""
    report = progress or (lambda _: None)
    if path == "-":
        data: bytes | mmap.mmap = sys.stdin.buffer.read()
    else:
        with open(path, "rb") as fh:
            data = _contents(fh)
            if isinstance(data, mmap.mmap) and not looks_like_json(data):  # YAML: its parser needs the text
                data.close()
                fh.seek(0)
                data = fh.read()
    report(f"parsing {path} ({len(data) / 1e6:.1f} MB)")
    listed = load_json_list(data) if caching.ENABLED else None  # each distinct bound-pod spec decoded once
    spec_keys: dict[int, bytes] = {}
    classes: list[JSON] | None = None
    if listed is not None:
        doc: Any = listed.doc
        spec_keys, classes = listed.keys, listed.priority_classes
    else:
        doc = load_json_bytes(data)
    raw: bytes = b"" if doc is not None else data if isinstance(data, bytes) else data[:]
    if isinstance(data, mmap.mmap):
        with contextlib.suppress(BufferError):  # still viewed by something: unmapped when that goes
            data.close()
    del data
    try:
        if doc is not None:
            docs = [doc]
        else:
            text = decode_text(raw, path)
            del raw  # the bytes go before the text is parsed (bytes, text and objects never all at once)
            docs = load_all(text, path)
            del text
    except DocumentError as exc:
        raise InputError(str(exc)) from exc
    return documents_from(
        docs, path, progress, json_values=doc is not None, spec_keys=spec_keys, priority_classes=classes
    )


MAP_AT_LEAST: Final = 16 << 20
"""A regular file this large is mapped rather than read: no copy into a bytes object, whose page faults cost
more than the decoder's pass over the mapped pages (0.03 s against 0.3-0.5 s for a 519 MB dump)."""


def _contents(fh: BinaryIO) -> bytes | mmap.mmap:
    """The file's bytes: a read-only map of a large regular file (pages pre-faulted), else read(). As with
    any mapped read, a file cut shorter while it is decoded ends the process (SIGBUS) where read() would
    have given a truncated document; a dump is a file at rest, and stdin and pipes are read."""
    try:
        info = os.fstat(fh.fileno())
    except (OSError, ValueError):
        return fh.read()
    if not stat.S_ISREG(info.st_mode) or info.st_size < MAP_AT_LEAST:
        return fh.read()
    flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
    try:
        return mmap.mmap(fh.fileno(), 0, flags=flags, prot=mmap.PROT_READ)
    except (OSError, ValueError):  # a file system that cannot map: read it
        return fh.read()


def documents_from(
    docs: list[Any],
    source: str,
    progress: Callable[[str], None] | None = None,
    *,
    json_values: bool = False,
    spec_keys: dict[int, bytes] | None = None,
    priority_classes: list[JSON] | None = None,
) -> Documents:
    """The objects of parsed documents (v1 Lists flattened), each validated, pods parsed after admission.
    `json_values`: they come from a JSON decoder (no dates, bytes or tuples, as YAML may hold). `spec_keys`:
    id(pod) -> its spec's key where the decoder made one (load_json_list), for PodSpecMemo.
    `priority_classes`: the objects of kind PriorityClass among them, in order, when the decoder listed them
    (load_json_list: then they are not looked for again).

    The checks come in stages, and the first error of the earliest stage is the one reported: an object's
    fields (in file order), duplicates, the PriorityClasses, priority admission, parsing. When the file's
    PriorityClasses can be read ahead, one pass does every stage per object (while its dicts are in the CPU's
    cache; half the time of a pass per stage at 55,000 objects) and keeps the later stages' first errors
    until validation has passed; otherwise the stages run one after another."""
    if progress is not None:
        count = sum(len(d["items"]) if isinstance(d, dict) and isinstance(d.get("items"), list) else 1 for d in docs)
        progress(f"checking {count:,} objects as kube-apiserver would")
    objects: list[JSON] = []
    pods: list[tuple[str, JSON]] = []  # (where, pod) to parse once their priority is admitted
    # Off with the other caches (tests/test_caching_parity.py compares).
    memo = PodSpecMemo(json_values=json_values, known=spec_keys) if caching.ENABLED else None
    documents = Documents()
    intake = _Intake(source, memo, documents.parsed, _classes_ahead(docs, priority_classes))
    at_once = intake.classes is not None
    nodes = documents.nodes  # id(node object) -> parse_node's record, which validation made
    for index, doc in enumerate(docs):
        if doc is None:
            continue
        where = f"{source}: document {index + 1}"
        if not isinstance(doc, dict):
            raise InputError(f"{where}: expected an object, got {type(doc).__name__}")
        if _is_list(doc):
            items = doc.get("items") or []
            if not isinstance(items, list):
                raise InputError(f"{where}: items: expected a list")
            for j, item in enumerate(items):
                at = f"{where}: items[{j}]"
                objects.append(_validated(item, at, memo, nodes))
                if at_once:
                    intake.take(item, at)
                elif item.get("kind") == "Pod":
                    pods.append((at, item))
        else:
            objects.append(_validated(doc, where, memo, nodes))
            if at_once:
                intake.take(doc, where)
            elif doc.get("kind") == "Pod":
                pods.append((where, doc))
    if at_once:
        intake.raise_first()
        documents.namespaces = intake.namespaces
    else:
        _refuse_duplicates(objects, source)
        admit_priorities(objects, source)
        for where, obj in pods:
            error = intake.parse(obj, where)
            if error is not None:
                raise error
        documents.namespaces = _namespaces(objects)
    documents.extend(objects)
    return documents


def _is_list(doc: JSON) -> bool:
    """A v1 List (or another kind's List), whose items are the objects."""
    return doc.get("kind") == "List" or (str(doc.get("kind", "")).endswith("List") and "items" in doc)


def _classes_ahead(docs: list[Any], listed: list[JSON] | None = None) -> dict[str, JSON] | None:
    """_priority_classes of the file's objects read before they are validated, or None when one of them
    would stop the load (then the stages run in turn, and each error comes where it always did). `listed`:
    the file's PriorityClass objects in order, as its decoder found them."""
    found: list[JSON] = [] if listed is None else listed
    for doc in docs if listed is None else ():
        if not isinstance(doc, dict):
            continue
        items = (doc.get("items") or []) if _is_list(doc) else [doc]
        for obj in items if isinstance(items, list) else ():
            if isinstance(obj, dict) and obj.get("kind") == "PriorityClass":
                found.append(obj)
    try:
        return _priority_classes(found)
    except Exception:  # an InputError, or a PriorityClass too malformed to read: validation will name it
        return None


class _Intake:
    """The stages after an object's own fields (duplicates, priority admission, parsing) for one load; run
    object by object (take), each stage's first error kept and raised in stage order (raise_first)."""

    __slots__ = ("_admitted", "_seen", "_source", "_templates", "classes", "errors", "memo", "namespaces", "parsed")

    def __init__(
        self, source: str, memo: PodSpecMemo | None, parsed: dict[int, PodInfo], classes: dict[str, JSON] | None
    ) -> None:
        self._source = source
        self._seen: set[tuple[str, str, str]] = set()
        # A bound pod's spec that an earlier bound pod had (PodSpecMemo's key, taken before admission:
        # admission reads the spec and the file's PriorityClasses only, so equal keys stay equal specs) is
        # parsed once.
        self._templates: dict[bytes, PodInfo] = {}
        # What priority admission wrote into the spec of an earlier pod of the same key (it reads the spec and
        # the classes only): the next pod of that key gets the same fields, in the same order.
        self._admitted: dict[bytes, dict[str, Any]] = {}
        self.memo = memo
        self.parsed = parsed
        self.classes = classes
        self.errors: list[InputError | None] = [None, None, None]  # duplicates, admission, parsing
        self.namespaces: set[str] = set()  # the names of the Namespace objects taken

    def take(self, obj: JSON, where: str) -> None:
        """The later stages for one validated object (only with the file's classes read ahead)."""
        assert self.classes is not None
        errors = self.errors
        if errors[0] is None:
            key = _duplicate_key(obj)
            if key in self._seen:
                errors[0] = _duplicate_error(obj, key, self._source)
            self._seen.add(key)
        kind = obj["kind"]
        if kind != "Pod" and kind != "DaemonSet":
            if kind == NAMESPACE:
                self.namespaces.add(str((obj.get("metadata") or {}).get("name")))
            return
        if errors[1] is None:
            try:
                self._admit(obj, kind)
            except _Refused as exc:
                name = (obj.get("metadata") or {}).get("name")
                errors[1] = InputError(f"{self._source}: {kind} {name}: {exc}")
        # Parsed while nothing before it was refused (an error of an earlier stage is the answer then).
        if kind == "Pod" and errors[0] is None and errors[1] is None and errors[2] is None:
            errors[2] = self.parse(obj, where)

    def _admit(self, obj: JSON, kind: str) -> None:
        """_admit_object, remembered per spec key for the pods whose spec validation keyed."""
        assert self.classes is not None
        key = self.memo.keys.get(id(obj)) if self.memo is not None and kind == "Pod" else None
        if key is None:
            _admit_object(obj, kind, self.classes)
            return
        spec = obj["spec"]
        written = self._admitted.get(key)
        if written is not None:
            spec.update(written)
            return
        before = dict(spec)
        _admit_object(obj, kind, self.classes)  # (refused: nothing is remembered)
        # What it wrote, read off the spec (in the spec's order: new fields last, in the order written).
        self._admitted[key] = {name: value for name, value in spec.items() if before.get(name, _ABSENT) is not value}

    def raise_first(self) -> None:
        for error in self.errors:
            if error is not None:
                raise error

    def parse(self, obj: JSON, where: str) -> InputError | None:
        """Parse one admitted pod into `parsed`; its error (None: parsed)."""
        memo = self.memo
        key = memo.keys.get(id(obj)) if memo is not None else None
        bound = key is not None and bool(obj["spec"].get("nodeName"))
        try:
            template = self._templates.get(key) if key is not None and bound else None
            info = parse_pod_like(template, obj) if template is not None else parse_pod(obj)
            self.parsed[id(obj)] = info
            if key is not None and bound and template is None:
                self._templates[key] = info
        except ParseError as exc:
            return InputError(f"{_label(obj, where)}: {exc}")
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            return InputError(f"{_label(obj, where)}: malformed object: {exc}")
        return None


_ABSENT: Final = object()


def _duplicate_key(obj: JSON) -> tuple[str, str, str]:
    kind = str(obj["kind"])
    meta = obj.get("metadata") or {}
    namespaced = kind in ("Pod", "DaemonSet") or (kind in KINDS and KINDS[kind].namespaced)
    return (kind, str(meta.get("namespace") or "default") if namespaced else "", str(meta.get("name")))


def _duplicate_error(obj: JSON, key: tuple[str, str, str], source: str) -> InputError:
    ref = f"{key[1]}/{key[2]}" if key[1] else key[2]
    return InputError(f"{source}: duplicate {key[0]} {ref}: an object can appear only once")


def _refuse_duplicates(objects: list[JSON], source: str) -> None:
    """Two objects of one kind with the same namespace/name cannot both exist (AlreadyExists)."""
    seen: set[tuple[str, str, str]] = set()
    for obj in objects:
        key = _duplicate_key(obj)
        if key in seen:
            raise _duplicate_error(obj, key, source)
        seen.add(key)


class Documents(list[JSON]):
    """load_documents' objects, with each Pod's parse_pod result (keyed by id of the object) for simulate."""

    def __init__(self, objects: Iterable[JSON] = ()) -> None:
        super().__init__(objects)
        self.parsed: dict[int, PodInfo] = {}
        self.nodes: dict[int, NodeRecord] = {}  # each Node's parse_node result, keyed the same way
        self.namespaces: set[str] | None = None  # the Namespace objects' names (_namespaces), when known


def _label(obj: JSON, where: str) -> str:
    name = (obj.get("metadata") or {}).get("name") if isinstance(obj.get("metadata"), dict) else None
    return f"{where} ({obj.get('kind')} {name or '?'})"


def _validated(
    obj: Any, where: str, memo: PodSpecMemo | None = None, nodes: dict[int, NodeRecord] | None = None
) -> JSON:
    """obj when it is valid (InputError naming the field when not); a Node's record goes into `nodes`."""
    if not isinstance(obj, dict):
        raise InputError(f"{where}: expected an object")
    kind = obj.get("kind")
    if kind not in SUPPORTED_KINDS:
        raise InputError(f"{where}: kind: unsupported value {kind!r}; supported: {', '.join(SUPPORTED_KINDS)}")
    namespaced = kind in ("Pod", "DaemonSet") or (kind in KINDS and KINDS[kind].namespaced)
    errors = validate(obj, namespaced=namespaced, memo=memo)
    if errors:
        shown = "; ".join(errors[:5]) + (f" (and {len(errors) - 5} more)" if len(errors) > 5 else "")
        raise InputError(f"{_label(obj, where)}: {shown}")
    try:
        if kind == "Node":
            record = parse_node(obj)
            if nodes is not None:
                nodes[id(obj)] = record
        elif kind == "Pod":
            pass  # parsed once after priority admission (load_documents), which writes spec.priority
        elif kind == "DaemonSet":
            parse_pod(daemon_pod(obj, "validation-node"))
        else:
            _validated_object(obj, str(kind))
    except ParseError as exc:
        raise InputError(f"{_label(obj, where)}: {exc}") from exc
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise InputError(f"{_label(obj, where)}: malformed object: {exc}") from exc
    return obj


def _validated_object(obj: JSON, kind: str) -> None:
    """Other kinds: a name, and a namespace for namespaced kinds (defaulted to "default" as kubectl would)."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta.get("name"):
        raise ParseError("metadata.name: required")
    if KINDS[kind].namespaced:
        if meta.get("namespace") is None:
            meta["namespace"] = "default"
        elif not isinstance(meta.get("namespace"), str):
            raise ParseError("metadata.namespace: must be a string")
    elif meta.get("namespace"):
        raise ParseError(f"metadata.namespace: {kind} is cluster-scoped")


def daemon_pod(ds: Mapping[str, Any], node_name: str) -> JSON:
    """The pod the DaemonSet controller would create for node_name, pinned with matchFields."""
    meta = ds.get("metadata") or {}
    spec = ds.get("spec") or {}
    template = spec.get("template")
    if not isinstance(template, dict) or not isinstance(template.get("spec"), dict):
        raise ParseError("spec.template.spec: required")
    pod_spec: JSON = copy.deepcopy(template["spec"])
    tmeta = template.get("metadata") or {}
    namespace = str(meta.get("namespace") or "default")
    name = f"{meta.get('name')}-{node_name}"
    requirement = {"key": "metadata.name", "operator": "In", "values": [node_name]}
    affinity = pod_spec.setdefault("affinity", {})
    node_affinity = affinity.setdefault("nodeAffinity", {})
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    terms = (required or {}).get("nodeSelectorTerms") or []
    if not terms:
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [{"matchFields": [requirement]}]
        }
    else:
        for term in terms:
            term["matchFields"] = [dict(requirement)]
    tolerations = pod_spec.setdefault("tolerations", [])
    wanted = list(_DAEMON_TOLERATIONS)
    if pod_spec.get("hostNetwork"):
        wanted.append(_HOST_NETWORK_TOLERATION)
    for key, effect in wanted:
        if not any(t.get("key") == key and t.get("effect") == effect for t in tolerations):
            tolerations.append({"key": key, "operator": "Exists", "effect": effect})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"{namespace}/{name}",
            "labels": dict(tmeta.get("labels") or {}),
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": meta.get("name"), "controller": True}
            ],
        },
        "spec": pod_spec,
        "status": {"phase": "Pending"},
    }


def daemon_should_run(ds: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """The DaemonSet controller's NodeShouldRunDaemonPod: template nodeName, affinity/selector, taints.

    Evaluated on the template (with the controller's default tolerations), not on the pinned pod.
    """
    template_spec = ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}
    record = parse_node(node)
    wanted = template_spec.get("nodeName")
    if wanted and wanted != record.name:
        return False
    probe = parse_pod(daemon_pod(ds, record.name))
    unpinned = dict(template_spec)
    probe_template = parse_pod({"metadata": {"name": "probe"}, "spec": unpinned})
    probe.node_selector = probe_template.node_selector
    probe.affinity = probe_template.affinity
    matched, _ = RequiredNodeAffinity.of(probe).match(record.labels, record.name)
    if not matched:
        return False
    return all(
        tolerations_tolerate(probe.tolerations, taint)
        for taint in record.taints
        if taint.effect in ("NoSchedule", "NoExecute")
    )


async def simulate_async(
    objects: Iterable[JSON],
    config: SchedulerConfiguration | None = None,
    seed: int | None = 0,
    *,
    own_objects: bool = False,
) -> SimulationResult:
    """Run the scheduler over the objects in order and report each pod it had to place.

    The simulation writes into the pods it binds or preempts; unless `own_objects` (the caller hands them
    over, as the CLI does with what it just parsed) each pod is copied first, so the caller's stay as given.
    """
    # load_documents' parse of each pod, trusted only when the caller hands the objects over unchanged.
    parsed: dict[int, PodInfo] = getattr(objects, "parsed", {}) if own_objects and caching.ENABLED else {}
    parsed_nodes: dict[int, NodeRecord] = getattr(objects, "nodes", {}) if own_objects and caching.ENABLED else {}
    cluster = MemoryCluster()
    cluster.settles_synchronously = True  # PreBind never waits real time for the in-memory controllers
    clock = FakeClock()
    scheduler = build_scheduler(cluster, config, clock=clock, seed=seed)
    cluster.attach(scheduler)
    profiles = set(scheduler.profiles)
    daemonsets: list[JSON] = []
    order: list[str] = []
    seen: set[str] = set()
    names: dict[str, tuple[str, str]] = {}

    def track(pod_obj: JSON) -> None:
        spec = pod_obj.get("spec") or {}
        if spec.get("nodeName") or spec.get("schedulerName", "default-scheduler") not in profiles:
            return
        meta = pod_obj.get("metadata") or {}
        uid = MemoryCluster._uid(pod_obj)
        if uid in seen:
            return
        seen.add(uid)
        order.append(uid)
        names[uid] = (str(meta.get("namespace") or "default"), str(meta.get("name")))

    objects = list(objects) if not isinstance(objects, list) else objects
    known: set[str] | None = getattr(objects, "namespaces", None) if own_objects else None
    namespaces = set(known) if known is not None else _namespaces(objects)
    for name in SYSTEM_NAMESPACES:
        if name not in namespaces:
            cluster.apply_object(_namespace(name))
    declared = set(SYSTEM_NAMESPACES) | namespaces

    for obj in objects:
        kind = obj["kind"]
        if kind == "Pod":
            info = parsed.get(id(obj))  # load_documents' parse (trusted while admission keeps the object)
            namespace = info.namespace if info is not None else str(
                (obj.get("metadata") or {}).get("namespace") or "default"
            )
            if namespace not in declared:  # a pod's namespace exists in the cluster it was dumped from
                declared.add(namespace)
                cluster.apply_object(_namespace(namespace))
        if kind == "Node":
            cluster.apply_node(obj, parsed_nodes.get(id(obj)))
            for ds in daemonsets:
                if not daemon_should_run(ds, obj):
                    continue
                pod = admit_pod(daemon_pod(ds, obj["metadata"]["name"]))
                if MemoryCluster._uid(pod) not in cluster.pods:
                    track(pod)
                    cluster.apply_pod(pod)
        elif kind == "Pod":
            stored = admit_pod(obj, cluster.nodes)  # what the API server stores on create (matchLabelKeys merged)
            # Parsed by load_documents unless admission changed it (then it is a new object).
            if stored is not obj:
                info = None
            obj = copy.deepcopy(obj) if stored is obj and not own_objects else stored
            if info is None or not info.node_name:  # (a bound pod is never tracked)
                track(obj)
            cluster.apply_pod(obj, info)
        elif kind in KINDS:
            cluster.apply_object(obj)
        else:
            daemonsets.append(obj)
            for node_name, node_obj in list(cluster.nodes.items()):
                if not daemon_should_run(obj, node_obj):
                    continue
                pod = admit_pod(daemon_pod(obj, node_name))
                track(pod)
                cluster.apply_pod(pod)
        # Objects of one file arrive together: no Permit wait times out before the last one is in.
        if not scheduler.settled():  # (a settled scheduler's run would return at once, without yielding)
            await scheduler.run_until_idle(advance=clock.advance_to, permit_timeouts=False)
    if scheduler.next_permit_deadline() is not None:  # pods still waiting at Permit: now their time may run out
        await scheduler.run_until_idle(advance=clock.advance_to)

    result = SimulationResult(cluster=cluster, scheduler=scheduler)
    evicted_by: dict[str, str] = {}
    grouped: dict[tuple[str, str], Preemption] = {}
    for eviction in cluster.evictions:
        evicted_by[eviction.victim] = eviction.preemptor
        key = (eviction.preemptor, eviction.node)
        if key not in grouped:
            grouped[key] = Preemption(eviction.preemptor, eviction.node)
            result.preemptions.append(grouped[key])
        grouped[key].victims.append(eviction.victim)
    for uid in order:
        ns, name = names[uid]
        node = cluster.node_of(uid)
        message = None
        preempted_by = evicted_by.get(f"{ns}/{name}") if uid not in cluster.pods else None
        if node is None and preempted_by is None:
            failure = scheduler.last_failure.get(uid)
            message = failure[1] if failure else None
        devices = pod_devices(cluster, cluster.pods[uid]) if node is not None else []
        result.outcomes.append(Outcome(ns, name, node, message, preempted_by, devices))
    return result


def _namespaces(objects: list[JSON]) -> set[str]:
    return {
        str((obj.get("metadata") or {}).get("name")) for obj in objects if obj.get("kind") == NAMESPACE
    }


def _namespace(name: str) -> JSON:
    """A Namespace as kube-apiserver has it: for the system ones, and for a pod's namespace the file omits
    (a `kubectl get nodes,pods -A` dump has none); labels beyond its name are unknown, so it has none."""
    return {"apiVersion": "v1", "kind": NAMESPACE, "metadata": {"name": name}}


def simulate(
    objects: Iterable[JSON],
    config: SchedulerConfiguration | None = None,
    seed: int | None = 0,
    *,
    own_objects: bool = False,
) -> SimulationResult:
    """simulate_async on a fresh event loop."""
    return asyncio.run(simulate_async(objects, config, seed, own_objects=own_objects))


def render_table(result: SimulationResult) -> str:
    """A people-friendly table: one row per pod, pending pods with their message."""
    with_devices = any(o.devices for o in result.outcomes)
    rows = [("NAMESPACE", "NAME", "NODE", *(("DEVICES",) if with_devices else ()), "MESSAGE")]
    for o in result.outcomes:
        devices = (",".join(d.text() for d in o.devices),) if with_devices else ()
        if o.preempted_by is not None:
            rows.append((o.namespace, o.name, "<preempted>", *devices, f"evicted by {o.preempted_by}"))
        else:
            rows.append((o.namespace, o.name, o.node or "<pending>", *devices, o.message or ""))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = ["  ".join([*(f"{c:<{w}}" for c, w in zip(r, widths, strict=False)), r[-1]]).rstrip() for r in rows]
    bound = sum(1 for o in result.outcomes if o.node)
    lines.append(f"\n{bound}/{len(result.outcomes)} pods scheduled")
    if result.preemptions:
        lines.append("\nPreemptions:")
        for p in result.preemptions:
            lines.append(f"  {p.preemptor} evicted {', '.join(p.victims)} from {p.node}")
    return "\n".join(lines)
