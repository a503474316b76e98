"""The API server's validation rules for the fields pyscheduler reads, applied to offline input (`simulate`).

A live cluster never hands the scheduler a pod with a negative request, a taint effect outside the enum or
a host port of 70000: kube-apiserver rejects them at create time. A cluster dump written by hand can hold
anything, so `simulate` applies the same rules (pkg/apis/core/validation, the parts that cover fields the
scheduler reads) before running, and refuses the file with the document and the field named, instead of
scheduling nonsense. Messages follow field.Error's shape (`path: Invalid value: ...`, `Unsupported value`,
`Required value`). Defaulting is tolerated: an omitted protocol means TCP, an omitted operator Equal.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from typing import Any, Final

from scheduler.framework.labels import (
    SelectorError,
    compile_label_selector,
    dns1123_subdomain_errors,
    invalid,
    label_key_errors,
    label_value_errors,
    not_supported,
    quote_value,
)
from scheduler.framework.quantity import parse_quantity

_DNS1123_LABEL_RE: Final = re.compile("[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_LABEL_ERR: Final = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and "
    "end with an alphanumeric character"
)
PROTOCOLS: Final = ("SCTP", "TCP", "UDP")
TAINT_EFFECTS: Final = ("NoSchedule", "PreferNoSchedule", "NoExecute")
TOLERATION_OPERATORS: Final = ("Equal", "Exists")
NODE_SELECTOR_OPERATORS: Final = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
WHEN_UNSATISFIABLE: Final = ("DoNotSchedule", "ScheduleAnyway")
INCLUSION_POLICIES: Final = ("Honor", "Ignore")
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def required(path: str) -> str:
    return f"{path}: Required value"


def _type_error(path: str, value: Any, want: str) -> str:
    return invalid(path, value, f"must be {want}")


class _Errors(list[str]):
    """Collects field errors; helpers return the value when it has the right type, else None."""

    def mapping(self, value: Any, path: str) -> Mapping[str, Any] | None:
        if type(value) is dict:  # the common case, without the ABC check
            return value
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            self.append(_type_error(path, value, "an object"))
            return None
        return value

    def items(self, value: Any, path: str) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            self.append(_type_error(path, value, "a list"))
            return []
        return value

    def string(self, value: Any, path: str) -> str | None:
        if value is None:
            return ""
        if not isinstance(value, str):
            self.append(_type_error(path, value, "a string"))
            return None
        return value

    def integer(self, value: Any, path: str) -> int | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            self.append(_type_error(path, value, "an integer"))
            return None
        return value


# ---------------------------------------------------------------------------------------------------------
# Metadata


def _labels(errs: _Errors, raw: Any, path: str) -> None:
    labels = errs.mapping(raw, path)
    for key, value in (labels or {}).items():
        if not isinstance(key, str):
            errs.append(_type_error(path, key, "a map with string keys"))
            continue
        key_errs = label_key_errors(key)
        if key_errs:
            errs.append(invalid(path, key, "; ".join(key_errs)))
        if not isinstance(value, str):
            errs.append(_type_error(f"{path}[{key}]", value, "a string"))
        elif label_value_errors(value):
            errs.append(invalid(f"{path}[{key}]", value, "; ".join(label_value_errors(value))))


def _metadata(errs: _Errors, obj: Mapping[str, Any], namespaced: bool) -> None:
    meta = errs.mapping(obj.get("metadata"), "metadata")
    if meta is None:
        return
    name = errs.string(meta.get("name"), "metadata.name")
    if name == "":
        errs.append(required("metadata.name"))
    elif name is not None and dns1123_subdomain_errors(name):
        errs.append(invalid("metadata.name", name, "; ".join(dns1123_subdomain_errors(name))))
    if namespaced and meta.get("namespace") is not None:
        ns = errs.string(meta.get("namespace"), "metadata.namespace")
        if ns and (len(ns) > 63 or not _DNS1123_LABEL_RE.fullmatch(ns)):
            errs.append(invalid("metadata.namespace", ns, _DNS1123_LABEL_ERR))
    _labels(errs, meta.get("labels"), "metadata.labels")


# ---------------------------------------------------------------------------------------------------------
# Pods


def _quantities(errs: _Errors, raw: Any, path: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    resources = errs.mapping(raw, path)
    for name, qty in (resources or {}).items():
        where = f"{path}[{name}]"
        try:
            value = parse_quantity(qty)
        except (ValueError, TypeError) as exc:
            errs.append(invalid(where, qty, str(exc)))
            continue
        if value.numerator < 0:  # a Fraction: the sign is the numerator's
            errs.append(invalid(where, qty, "must be greater than or equal to 0"))
        elif "/" in str(name) and value.denominator != 1:
            errs.append(invalid(where, qty, "must be an integer"))
        out[str(name)] = value
    return out


def _container(errs: _Errors, raw: Any, path: str) -> None:
    c = errs.mapping(raw, path)
    if c is None:
        return
    if not c.get("name"):
        errs.append(required(f"{path}.name"))
    res = errs.mapping(c.get("resources"), f"{path}.resources")
    if res is not None:
        requests = _quantities(errs, res.get("requests"), f"{path}.resources.requests")
        limits = _quantities(errs, res.get("limits"), f"{path}.resources.limits")
        for name, req in requests.items():
            if name in limits and req > limits[name]:
                errs.append(
                    invalid(f"{path}.resources.requests[{name}]", res["requests"][name],
                            f"must be less than or equal to {name} limit of {res['limits'][name]}")
                )
    for j, port in enumerate(errs.items(c.get("ports"), f"{path}.ports")):
        where = f"{path}.ports[{j}]"
        p = errs.mapping(port, where)
        if p is None:
            continue
        container_port = errs.integer(p.get("containerPort"), f"{where}.containerPort")
        if p.get("containerPort") is None:
            errs.append(required(f"{where}.containerPort"))
        elif container_port is not None and not 1 <= container_port <= 65535:
            errs.append(invalid(f"{where}.containerPort", container_port, "must be between 1 and 65535, inclusive"))
        host_port = errs.integer(p.get("hostPort"), f"{where}.hostPort")
        if host_port is not None and host_port != 0 and not 1 <= host_port <= 65535:
            errs.append(invalid(f"{where}.hostPort", host_port, "must be between 1 and 65535, inclusive"))
        protocol = errs.string(p.get("protocol"), f"{where}.protocol")
        if protocol and protocol not in PROTOCOLS:
            errs.append(not_supported(f"{where}.protocol", protocol, PROTOCOLS))
        host_ip = errs.string(p.get("hostIP"), f"{where}.hostIP")
        if host_ip:
            try:
                ipaddress.ip_address(host_ip)
            except ValueError:
                errs.append(invalid(f"{where}.hostIP", host_ip, "must be a valid IP address"))


def _tolerations(errs: _Errors, raw: Any, path: str) -> None:
    for i, t in enumerate(errs.items(raw, path)):
        where = f"{path}[{i}]"
        tol = errs.mapping(t, where)
        if tol is None:
            continue
        key = errs.string(tol.get("key"), f"{where}.key")
        op = errs.string(tol.get("operator"), f"{where}.operator")
        value = errs.string(tol.get("value"), f"{where}.value")
        effect = errs.string(tol.get("effect"), f"{where}.effect")
        if key and label_key_errors(key):
            errs.append(invalid(f"{where}.key", key, "; ".join(label_key_errors(key))))
        if not key and op != "Exists":
            errs.append(invalid(f"{where}.operator", op, 'operator must be Exists when `key` is empty, which means '
                                '"match all values and all keys"'))
        if tol.get("tolerationSeconds") is not None and effect != "NoExecute":
            detail = "effect must be 'NoExecute' when `tolerationSeconds` is set"
            errs.append(invalid(f"{where}.effect", effect, detail))
        if op in ("", "Equal"):
            if value and label_value_errors(value):
                errs.append(invalid(f"{where}.operator", value, ";".join(label_value_errors(value))))
        elif op == "Exists":
            if value:
                errs.append(invalid(f"{where}.operator", value, "value must be empty when `operator` is 'Exists'"))
        elif op is not None:
            errs.append(not_supported(f"{where}.operator", op, TOLERATION_OPERATORS))
        if effect and effect not in TAINT_EFFECTS:
            errs.append(not_supported(f"{where}.effect", effect, TAINT_EFFECTS))


def _node_selector_requirement(errs: _Errors, raw: Any, path: str, fields: bool) -> None:
    req = errs.mapping(raw, path)
    if req is None:
        return
    op = req.get("operator")
    values = [v for v in errs.items(req.get("values"), f"{path}.values")]
    if not all(isinstance(v, str) for v in values):
        errs.append(_type_error(f"{path}.values", values, "a list of strings"))
        return
    key = errs.string(req.get("key"), f"{path}.key")
    if fields:
        if key != "metadata.name":
            errs.append(invalid(f"{path}.key", key, "not a valid field selector key"))
        if op not in ("In", "NotIn"):
            errs.append(invalid(f"{path}.operator", op, "not a valid selector operator"))
        elif len(values) != 1:
            errs.append(required(f"{path}.values") + ": must be only one value when `operator` is 'In' or 'NotIn' "
                        "for node field selector")
        return
    if op not in NODE_SELECTOR_OPERATORS:
        errs.append(invalid(f"{path}.operator", op, "not a valid selector operator"))
        return
    if op in ("In", "NotIn") and not values:
        errs.append(required(f"{path}.values") + ": must be specified when `operator` is 'In' or 'NotIn'")
    elif op in ("Exists", "DoesNotExist") and values:
        errs.append(f"{path}.values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
    elif op in ("Gt", "Lt") and len(values) != 1:  # an integer is not required: such a term matches nothing
        errs.append(required(f"{path}.values") + ": must be specified single value when `operator` is 'Lt' or 'Gt'")
    if key is not None and label_key_errors(key):
        errs.append(invalid(f"{path}.key", key, "; ".join(label_key_errors(key))))


def _node_selector_term(errs: _Errors, raw: Any, path: str) -> None:
    term = errs.mapping(raw, path)
    if term is None:
        return
    for j, req in enumerate(errs.items(term.get("matchExpressions"), f"{path}.matchExpressions")):
        _node_selector_requirement(errs, req, f"{path}.matchExpressions[{j}]", fields=False)
    for j, req in enumerate(errs.items(term.get("matchFields"), f"{path}.matchFields")):
        _node_selector_requirement(errs, req, f"{path}.matchFields[{j}]", fields=True)


def _weight(errs: _Errors, raw: Any, path: str) -> None:
    weight = errs.integer(raw, path)
    if raw is None:
        errs.append(required(path))
    elif weight is not None and not 1 <= weight <= 100:
        errs.append(invalid(path, weight, "must be in the range 1-100"))


def _label_selector(errs: _Errors, raw: Any, path: str) -> None:
    if raw is None:
        return
    try:
        compile_label_selector(raw)
    except SelectorError as exc:
        errs.append(f"{path}: Invalid value: {quote_value(raw)}: {exc}")


def _pod_affinity_term(errs: _Errors, raw: Any, path: str) -> None:
    term = errs.mapping(raw, path)
    if term is None:
        return
    key = errs.string(term.get("topologyKey"), f"{path}.topologyKey")
    if key == "":
        errs.append(required(f"{path}.topologyKey") + ": can not be empty")
    elif key is not None and label_key_errors(key):
        errs.append(invalid(f"{path}.topologyKey", key, "; ".join(label_key_errors(key))))
    _label_selector(errs, term.get("labelSelector"), f"{path}.labelSelector")
    _label_selector(errs, term.get("namespaceSelector"), f"{path}.namespaceSelector")
    for i, ns in enumerate(errs.items(term.get("namespaces"), f"{path}.namespaces")):
        if not isinstance(ns, str):
            errs.append(_type_error(f"{path}.namespaces[{i}]", ns, "a string"))


def _affinity(errs: _Errors, raw: Any, path: str) -> None:
    affinity = errs.mapping(raw, path)
    if affinity is None:
        return
    na = errs.mapping(affinity.get("nodeAffinity"), f"{path}.nodeAffinity")
    if na:
        req_path = f"{path}.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        req = errs.mapping(na.get("requiredDuringSchedulingIgnoredDuringExecution"), req_path)
        if req:
            terms = errs.items(req.get("nodeSelectorTerms"), f"{req_path}.nodeSelectorTerms")
            if not terms:
                errs.append(required(f"{req_path}.nodeSelectorTerms") + ": must have at least one node selector term")
            for i, term in enumerate(terms):
                _node_selector_term(errs, term, f"{req_path}.nodeSelectorTerms[{i}]")
        pref_path = f"{path}.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"
        for i, pref in enumerate(errs.items(na.get("preferredDuringSchedulingIgnoredDuringExecution"), pref_path)):
            p = errs.mapping(pref, f"{pref_path}[{i}]")
            if p is not None:
                _weight(errs, p.get("weight"), f"{pref_path}[{i}].weight")
                _node_selector_term(errs, p.get("preference"), f"{pref_path}[{i}].preference")
    for kind in ("podAffinity", "podAntiAffinity"):
        section = errs.mapping(affinity.get(kind), f"{path}.{kind}")
        if not section:
            continue
        req_path = f"{path}.{kind}.requiredDuringSchedulingIgnoredDuringExecution"
        for i, term in enumerate(errs.items(section.get("requiredDuringSchedulingIgnoredDuringExecution"), req_path)):
            _pod_affinity_term(errs, term, f"{req_path}[{i}]")
        pref_path = f"{path}.{kind}.preferredDuringSchedulingIgnoredDuringExecution"
        for i, pref in enumerate(errs.items(section.get("preferredDuringSchedulingIgnoredDuringExecution"), pref_path)):
            p = errs.mapping(pref, f"{pref_path}[{i}]")
            if p is not None:
                _weight(errs, p.get("weight"), f"{pref_path}[{i}].weight")
                _pod_affinity_term(errs, p.get("podAffinityTerm"), f"{pref_path}[{i}].podAffinityTerm")


def _spread(errs: _Errors, raw: Any, path: str) -> None:
    seen: set[tuple[Any, Any]] = set()
    for i, c in enumerate(errs.items(raw, path)):
        where = f"{path}[{i}]"
        constraint = errs.mapping(c, where)
        if constraint is None:
            continue
        skew = errs.integer(constraint.get("maxSkew"), f"{where}.maxSkew")
        if constraint.get("maxSkew") is None:
            errs.append(required(f"{where}.maxSkew"))
        elif skew is not None and skew <= 0:
            errs.append(invalid(f"{where}.maxSkew", skew, "must be greater than zero"))
        key = errs.string(constraint.get("topologyKey"), f"{where}.topologyKey")
        if not key:
            errs.append(required(f"{where}.topologyKey") + ": can not be empty")
        elif label_key_errors(key):
            errs.append(invalid(f"{where}.topologyKey", key, "; ".join(label_key_errors(key))))
        when = constraint.get("whenUnsatisfiable")
        if when not in WHEN_UNSATISFIABLE:
            errs.append(not_supported(f"{where}.whenUnsatisfiable", when, WHEN_UNSATISFIABLE))
        pair = (key, when)
        if isinstance(when, str):  # only a valid value can repeat; a map or list is reported above
            if pair in seen:
                errs.append(f"{where}: Duplicate value: {{{quote_value(key)}, {quote_value(when)}}}")
            seen.add(pair)
        min_domains = errs.integer(constraint.get("minDomains"), f"{where}.minDomains")
        if min_domains is not None:
            if min_domains <= 0:
                errs.append(invalid(f"{where}.minDomains", min_domains, "must be greater than 0"))
            elif when != "DoNotSchedule":
                errs.append(invalid(f"{where}.minDomains", min_domains,
                                    "can only use minDomains if whenUnsatisfiable=DoNotSchedule, not " + str(when)))
        for policy in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            value = constraint.get(policy)
            if value is not None and value not in INCLUSION_POLICIES:
                errs.append(not_supported(f"{where}.{policy}", value, INCLUSION_POLICIES))
        _label_selector(errs, constraint.get("labelSelector"), f"{where}.labelSelector")
        for j, key_name in enumerate(errs.items(constraint.get("matchLabelKeys"), f"{where}.matchLabelKeys")):
            if not isinstance(key_name, str) or label_key_errors(key_name):
                errs.append(invalid(f"{where}.matchLabelKeys[{j}]", key_name, "must be a valid label key"))


def _pod_spec(errs: _Errors, raw: Any, path: str) -> None:
    spec = errs.mapping(raw, path)
    if spec is None:
        return
    containers = errs.items(spec.get("containers"), f"{path}.containers")
    if spec.get("containers") is None:
        errs.append(required(f"{path}.containers"))
    for i, c in enumerate(containers):
        _container(errs, c, f"{path}.containers[{i}]")
    for i, c in enumerate(errs.items(spec.get("initContainers"), f"{path}.initContainers")):
        _container(errs, c, f"{path}.initContainers[{i}]")
    _quantities(errs, spec.get("overhead"), f"{path}.overhead")
    pod_resources = errs.mapping(spec.get("resources"), f"{path}.resources")
    if pod_resources:
        _quantities(errs, pod_resources.get("requests"), f"{path}.resources.requests")
    _tolerations(errs, spec.get("tolerations"), f"{path}.tolerations")
    selector = errs.mapping(spec.get("nodeSelector"), f"{path}.nodeSelector")
    if selector:
        _labels(errs, selector, f"{path}.nodeSelector")
    _affinity(errs, spec.get("affinity"), f"{path}.affinity")
    _spread(errs, spec.get("topologySpreadConstraints"), f"{path}.topologySpreadConstraints")
    priority = errs.integer(spec.get("priority"), f"{path}.priority")
    if priority is not None and not _INT32_MIN <= priority <= _INT32_MAX:
        errs.append(invalid(f"{path}.priority", priority, "must be a 32-bit integer"))
    for field_name in ("schedulerName", "nodeName"):
        value = errs.string(spec.get(field_name), f"{path}.{field_name}")
        if value and dns1123_subdomain_errors(value):
            errs.append(invalid(f"{path}.{field_name}", value, "; ".join(dns1123_subdomain_errors(value))))


# ---------------------------------------------------------------------------------------------------------
# Nodes


def _node(errs: _Errors, obj: Mapping[str, Any]) -> None:
    spec = errs.mapping(obj.get("spec"), "spec")
    if spec is not None:
        seen: set[tuple[str, str]] = set()
        for i, t in enumerate(errs.items(spec.get("taints"), "spec.taints")):
            where = f"spec.taints[{i}]"
            taint = errs.mapping(t, where)
            if taint is None:
                continue
            key = errs.string(taint.get("key"), f"{where}.key")
            value = errs.string(taint.get("value"), f"{where}.value")
            effect = errs.string(taint.get("effect"), f"{where}.effect")
            if key == "":
                errs.append(required(f"{where}.key"))
            elif key is not None and label_key_errors(key):
                errs.append(invalid(f"{where}.key", key, "; ".join(label_key_errors(key))))
            if value and label_value_errors(value):
                errs.append(invalid(f"{where}.value", value, ";".join(label_value_errors(value))))
            if effect == "":
                errs.append(required(f"{where}.effect"))
            elif effect is not None and effect not in TAINT_EFFECTS:
                errs.append(not_supported(f"{where}.effect", effect, TAINT_EFFECTS))
            if key is not None and effect is not None:
                if (key, effect) in seen:
                    errs.append(f"{where}: Duplicate value: taints must be unique by key and effect pair")
                seen.add((key, effect))
        if spec.get("unschedulable") is not None and not isinstance(spec.get("unschedulable"), bool):
            errs.append(_type_error("spec.unschedulable", spec.get("unschedulable"), "a boolean"))
    status = errs.mapping(obj.get("status"), "status")
    if status is not None:
        _quantities(errs, status.get("allocatable"), "status.allocatable")
        _quantities(errs, status.get("capacity"), "status.capacity")
        for i, image in enumerate(errs.items(status.get("images"), "status.images")):
            img = errs.mapping(image, f"status.images[{i}]")
            if img is not None:
                errs.items(img.get("names"), f"status.images[{i}].names")
                size = errs.integer(img.get("sizeBytes"), f"status.images[{i}].sizeBytes")
                if size is not None and size < 0:
                    errs.append(invalid(f"status.images[{i}].sizeBytes", size, "must be greater than or equal to 0"))


# ---------------------------------------------------------------------------------------------------------
# Entry point


def validate(obj: Mapping[str, Any], namespaced: bool = True) -> list[str]:
    """Field errors the API server would report for this object's scheduling-relevant fields (empty: valid)."""
    errs = _Errors()
    kind = obj.get("kind")
    _metadata(errs, obj, namespaced)
    if kind == "Pod":
        _pod_spec(errs, obj.get("spec"), "spec")
        status = errs.mapping(obj.get("status"), "status")  # the scheduler writes conditions into it
        if status:
            for i, condition in enumerate(errs.items(status.get("conditions"), "status.conditions")):
                errs.mapping(condition, f"status.conditions[{i}]")
    elif kind == "Node":
        _node(errs, obj)
    elif kind == "DaemonSet":
        spec = errs.mapping(obj.get("spec"), "spec")
        template = errs.mapping((spec or {}).get("template"), "spec.template")
        if template is not None:
            tmeta = errs.mapping(template.get("metadata"), "spec.template.metadata")
            if tmeta:
                _labels(errs, tmeta.get("labels"), "spec.template.metadata.labels")
            _pod_spec(errs, template.get("spec"), "spec.template.spec")
    return list(errs)
