"""The API server's validation rules for the fields pyscheduler reads, applied to offline input (`simulate`).

A live cluster never hands the scheduler a pod with a negative request, a taint effect outside the enum or
a host port of 70000: kube-apiserver rejects them at create time. A cluster dump written by hand can hold
anything, so `simulate` applies the same rules (pkg/apis/core/validation, the parts that cover fields the
scheduler reads) before running, and refuses the file with the document and the field named, instead of
scheduling nonsense. Messages follow field.Error's shape (`path: Invalid value: ...`, `Unsupported value`,
`Required value`). Defaulting is tolerated: an omitted protocol means TCP, an omitted operator Equal.
"""

from __future__ import annotations

import io
import ipaddress
import pickle
import re
from collections.abc import Mapping
from typing import Any, Final

import msgspec

from scheduler.framework.labels import (
    SelectorError,
    compile_label_selector,
    dns1123_subdomain_errors,
    invalid,
    label_key_errors,
    label_value_errors,
    not_supported,
    quote_value,
    regex_error,
)
from scheduler.framework.quantity import parse_quantity, quantity_string

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
RESTART_RULE_ACTIONS: Final = ("Restart", "RestartAllContainers")  # RestartAllContainersOnContainerExits is on
# pkg/apis/core/validation: nodeDeclaredFeatureRegexp and validateNodeDeclaredFeatureName's message.
_DECLARED_FEATURE_RE: Final = re.compile(r"[A-Z][a-zA-Z0-9]*(/[a-zA-Z][a-zA-Z0-9]*)*")
_DECLARED_FEATURE_ERR: Final = (
    "must start with an UpperCamelCase segment, with subsequent segments separated by '/' (e.g., MyFeature or "
    "MyFeature/mySubFeature), and contain only alphanumeric characters and slashes"
)
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


def _metadata(
    errs: _Errors,
    obj: Mapping[str, Any],
    namespaced: bool,
    valid_labels: set[tuple[Any, ...]] | None = None,
    valid_namespaces: set[str] | None = None,
) -> None:
    """`valid_labels`: label maps (as item tuples) found valid earlier in this load, not checked again;
    `valid_namespaces` the same for namespace names."""
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
        if valid_namespaces is not None and ns in valid_namespaces:
            pass
        elif ns and (len(ns) > 63 or not _DNS1123_LABEL_RE.fullmatch(ns)):
            errs.append(invalid("metadata.namespace", ns, _DNS1123_LABEL_ERR))
        elif ns and valid_namespaces is not None:
            valid_namespaces.add(ns)
    labels = meta.get("labels")
    if valid_labels is None or type(labels) is not dict:
        _labels(errs, labels, "metadata.labels")
    else:
        items = tuple(labels.items())
        try:
            known = items in valid_labels
        except TypeError:  # an unhashable value: invalid, and checked below
            known, items = False, ()
        if not known:
            before = len(errs)
            _labels(errs, labels, "metadata.labels")
            if items and len(errs) == before:
                valid_labels.add(items)
    _owner_references(errs, meta.get("ownerReferences"))


_OWNER_FIELDS: Final = ("apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion")


def _owner_references(errs: _Errors, raw: Any) -> None:
    """ValidateOwnerReferences' rule the scheduler depends on (it reads the controller): at most one."""
    if raw is None or (type(raw) is list and len(raw) < 2):  # (the usual pod: one owner, nothing to check)
        return
    refs = [r for r in errs.items(raw, "metadata.ownerReferences") if type(r) is dict or isinstance(r, Mapping)]
    if sum(1 for r in refs if r.get("controller") is True) < 2:
        return
    controllers = [f"{r.get('kind')}/{r.get('name')}" for r in refs if r.get("controller") is True]
    shown = [{k: r[k] for k in _OWNER_FIELDS if k in r} for r in refs]
    for other in controllers[1:]:
        detail = (
            'Only one reference can have Controller set to true. Found "true" in references for '
            f"{controllers[0]} and {other}"
        )
        errs.append(invalid("metadata.ownerReferences", shown, detail))


# ---------------------------------------------------------------------------------------------------------
# Pods


def _quantities(errs: _Errors, raw: Any, path: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    resources = errs.mapping(raw, path)
    for name, qty in (resources or {}).items():
        try:
            value = parse_quantity(qty)
        except (ValueError, TypeError) as exc:
            errs.append(invalid(f"{path}[{name}]", qty, str(exc)))
            continue
        if value.numerator < 0:  # a Fraction: the sign is the numerator's
            errs.append(invalid(f"{path}[{name}]", canonical(qty), "must be greater than or equal to 0"))
        elif (_is_extended(str(name)) or str(name) == "pods") and value.denominator != 1:
            errs.append(invalid(f"{path}[{name}]", canonical(qty), "must be an integer"))
        out[str(name)] = value
    return out


_STANDARD_RESOURCES: Final = frozenset({
    "cpu", "memory", "storage", "ephemeral-storage", "pods", "services", "replicationcontrollers",
    "resourcequotas", "secrets", "configmaps", "persistentvolumeclaims", "services.nodeports",
    "services.loadbalancers", "requests.cpu", "requests.memory", "requests.storage", "requests.ephemeral-storage",
    "limits.cpu", "limits.memory", "limits.ephemeral-storage",
})
_CONTAINER_RESOURCES: Final = frozenset({"cpu", "memory", "ephemeral-storage"})
_POD_LEVEL_RESOURCES: Final = ("cpu", "hugepages-", "memory")  # as upstream lists them
_HUGEPAGES = "hugepages-"


def canonical(qty: Any) -> str:
    """Quantity.String() of a valid quantity, as field errors print it ("1.5" is "1500m", "1024Mi" "1Gi")."""
    return quantity_string(qty if isinstance(qty, str) else str(qty))


def _is_native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def _is_extended(name: str) -> bool:
    """helper.IsExtendedResourceName: not native, not `requests.`, and `requests.<name>` a qualified name."""
    return not _is_native(name) and not name.startswith("requests.") and not label_key_errors(f"requests.{name}")


def _overcommit_allowed(name: str) -> bool:
    return _is_native(name) and not name.startswith(_HUGEPAGES)


def _resource_name_errors(name: str, path: str) -> list[str]:
    """validateResourceName: a qualified name, and fully qualified unless it is a standard one."""
    problems = label_key_errors(name)
    if problems:
        return [invalid(path, name, p) for p in problems]
    if "/" not in name and name not in _STANDARD_RESOURCES and not name.startswith(_HUGEPAGES):
        return [invalid(path, name, "must be a standard resource type or fully qualified")]
    return []


def _container_resource_name_errors(name: str, path: str) -> list[str]:
    """ValidateContainerResourceName (its messages, both when the name is neither standard nor qualified)."""
    if name in _CONTAINER_RESOURCES:  # the common case, quickly
        return []
    out = _resource_name_errors(name, path)
    if "/" not in name:
        if name not in _CONTAINER_RESOURCES and not name.startswith(_HUGEPAGES):
            out.append(invalid(path, name, "must be a standard resource for containers"))
    elif not _is_native(name) and not _is_extended(name):
        out.append(invalid(path, name, "doesn't follow extended resource name standard"))
    return out


def _pod_resource_name_errors(name: str, path: str) -> list[str]:
    """validatePodResourceName: pod-level resources are cpu, memory and hugepages."""
    out = _resource_name_errors(name, path)
    if not out and name not in ("cpu", "memory") and not name.startswith(_HUGEPAGES):
        out.append(not_supported(path, name, _POD_LEVEL_RESOURCES))
    return out


def _resource_requirements(
    errs: _Errors, res: Mapping[str, Any], path: str, name_errors: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    """validateResourceRequirements after defaulting (a limit without a request is the request): names,
    non-negative (integer where it must be) quantities, requests within limits, and equal to them for
    resources that cannot be overcommitted (extended ones, hugepages), which also need a limit. Returns the
    parsed (requests, limits)."""
    limits_raw = errs.mapping(res.get("limits"), f"{path}.limits") or {}
    requests_raw = errs.mapping(res.get("requests"), f"{path}.requests") or {}
    requests_raw = {**limits_raw, **requests_raw}  # API defaulting: a limit without a request is the request
    limits = _quantities(errs, limits_raw, f"{path}.limits")
    requests = _quantities(errs, requests_raw, f"{path}.requests")
    for name in limits_raw:
        errs.extend(name_errors(str(name), f"{path}.limits[{name}]"))
    for name in requests_raw:
        errs.extend(name_errors(str(name), f"{path}.requests[{name}]"))
    for name, req in requests.items():
        if name in limits:
            if req != limits[name] and not _overcommit_allowed(name):
                detail = f"must be equal to {name} limit of {canonical(limits_raw[name])}"
                errs.append(invalid(f"{path}.requests", canonical(requests_raw[name]), detail))
            elif req > limits[name]:
                detail = f"must be less than or equal to {name} limit of {canonical(limits_raw[name])}"
                errs.append(invalid(f"{path}.requests", canonical(requests_raw[name]), detail))
        elif not _overcommit_allowed(name):
            errs.append(f"{path}.limits: Required value: Limit must be set for non overcommitable resources")
    names = set(requests) | set(limits)
    if any(n.startswith(_HUGEPAGES) for n in names) and not names & {"cpu", "memory"}:
        errs.append(f"{path}: Forbidden: HugePages require cpu or memory")
    return requests, limits


def _container(errs: _Errors, raw: Any, path: str) -> None:
    c = errs.mapping(raw, path)
    if c is None:
        return
    if not c.get("name"):
        errs.append(required(f"{path}.name"))
    res = errs.mapping(c.get("resources"), f"{path}.resources")
    if res is not None:
        _resource_requirements(errs, res, f"{path}.resources", _container_resource_name_errors)
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
    rules = errs.items(c.get("restartPolicyRules"), f"{path}.restartPolicyRules")
    if rules and c.get("restartPolicy") is None:
        errs.append(f"{path}.restartPolicy: Required value: must specify restartPolicy when restart rules are used")
    for j, rule in enumerate(rules):
        r = errs.mapping(rule, f"{path}.restartPolicyRules[{j}]")
        action = errs.string(r.get("action"), f"{path}.restartPolicyRules[{j}].action") if r is not None else None
        if action is not None and action not in RESTART_RULE_ACTIONS:
            errs.append(not_supported(f"{path}.restartPolicyRules[{j}].action", action, RESTART_RULE_ACTIONS))
    for j, mount in enumerate(errs.items(c.get("volumeMounts"), f"{path}.volumeMounts")):
        m = errs.mapping(mount, f"{path}.volumeMounts[{j}]")
        if m is not None:
            errs.items(m.get("bindMountOptions"), f"{path}.volumeMounts[{j}].bindMountOptions")


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


def _pod_level_resources(errs: _Errors, res: Mapping[str, Any], containers: list[Any], path: str) -> None:
    """validatePodResourceConsistency: pod-level requests within limits, not below what the containers
    request together, and no container limit above the pod's."""
    requests, limits = _resource_requirements(errs, res, path, _pod_resource_name_errors)
    raw_requests = res.get("requests") or {}
    raw_limits = res.get("limits") or {}
    totals: dict[str, Any] = {}
    for i, c in enumerate(containers):
        c_res = (c.get("resources") or {}) if isinstance(c, Mapping) else {}
        if not isinstance(c_res, Mapping):
            continue
        for name, qty in (c_res.get("requests") or {}).items() if isinstance(c_res.get("requests"), Mapping) else ():
            try:
                totals[name] = totals.get(name, 0) + parse_quantity(qty)
            except (ValueError, TypeError):
                continue
        for name, qty in (c_res.get("limits") or {}).items() if isinstance(c_res.get("limits"), Mapping) else ():
            try:
                over = name in limits and parse_quantity(qty) > limits[name]
            except (ValueError, TypeError):
                continue
            if over:
                detail = f"must be less than or equal to pod limits of {canonical(raw_limits[name])}"
                errs.append(invalid(f"{path}.containers[{i}][{name}].limits", canonical(qty), detail))
    for name, value in requests.items():
        if name in totals and value < totals[name]:
            total = _canonical_total(totals[name])
            detail = f"must be greater than or equal to aggregate container requests of {total}"
            errs.append(invalid(f"{path}.requests[{name}]", canonical(raw_requests[name]), detail))


def _canonical_total(value: Any) -> str:
    return canonical(str(value)) if value.denominator == 1 else canonical(f"{float(value):.9f}")


def _host_port_conflicts(errs: _Errors, containers: list[Any], path: str) -> None:
    """checkHostPortConflicts: a protocol/hostIP/hostPort triple declared twice across the containers."""
    seen: set[str] = set()
    for i, c in enumerate(containers):
        ports = c.get("ports") if isinstance(c, Mapping) else None
        for j, port in enumerate(ports if isinstance(ports, list) else []):
            if not isinstance(port, Mapping) or not isinstance(port.get("hostPort"), int) or not port["hostPort"]:
                continue
            triple = f"{port.get('protocol') or 'TCP'}/{port.get('hostIP') or ''}/{port['hostPort']}"
            if triple in seen:
                errs.append(f"{path}[{i}].ports[{j}].hostPort: Duplicate value: {quote_value(triple)}")
            seen.add(triple)


def _scheduling_gates(errs: _Errors, raw: Any, path: str) -> None:
    """validateSchedulingGates: qualified names, each once."""
    seen: set[str] = set()
    for i, gate in enumerate(errs.items(raw, path)):
        g = errs.mapping(gate, f"{path}[{i}]")
        if g is None:
            continue
        name = errs.string(g.get("name"), f"{path}[{i}].name")
        if name is None:
            continue
        for problem in label_key_errors(name) if name else ["name part must be non-empty"]:
            errs.append(invalid(f"{path}[{i}]", name, problem))
        if name in seen:
            errs.append(f"{path}[{i}]: Duplicate value: {quote_value(name)}")
        seen.add(name)


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
        _pod_level_resources(errs, pod_resources, containers, f"{path}.resources")
    _host_port_conflicts(errs, containers, f"{path}.containers")
    _scheduling_gates(errs, spec.get("schedulingGates"), f"{path}.schedulingGates")
    _tolerations(errs, spec.get("tolerations"), f"{path}.tolerations")
    selector = errs.mapping(spec.get("nodeSelector"), f"{path}.nodeSelector")
    if selector:
        _labels(errs, selector, f"{path}.nodeSelector")
    _affinity(errs, spec.get("affinity"), f"{path}.affinity")
    _spread(errs, spec.get("topologySpreadConstraints"), f"{path}.topologySpreadConstraints")
    for field_name in ("hostNetwork", "hostUsers"):
        if spec.get(field_name) is not None and not isinstance(spec.get(field_name), bool):
            errs.append(_type_error(f"{path}.{field_name}", spec.get(field_name), "a boolean"))
    if spec.get("hostNetwork") is True and spec.get("hostUsers") is False:
        # UserNamespacesHostNetworkSupport is alpha (off) in v1.37: a user namespace on the host network is refused.
        errs.append(f"{path}.hostNetwork: Forbidden: when `hostUsers` is false")
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
            if type(image) is dict:  # the usual valid entry, without building its paths
                names, size = image.get("names"), image.get("sizeBytes")
                if (names is None or type(names) is list) and (size is None or (type(size) is int and size >= 0)):
                    continue
            img = errs.mapping(image, f"status.images[{i}]")
            if img is not None:
                errs.items(img.get("names"), f"status.images[{i}].names")
                size = errs.integer(img.get("sizeBytes"), f"status.images[{i}].sizeBytes")
                if size is not None and size < 0:
                    errs.append(invalid(f"status.images[{i}].sizeBytes", size, "must be greater than or equal to 0"))
        _declared_features(errs, status.get("declaredFeatures"))


def _declared_features(errs: _Errors, raw: Any) -> None:
    """validateNodeDeclaredFeatures: valid names, sorted, no duplicates (NodeDeclaredFeatures matches a
    sorted list)."""
    path = "status.declaredFeatures"
    names = errs.items(raw, path)
    for i, name in enumerate(names):
        feature = errs.string(name, f"{path}[{i}]")
        if feature is None:
            continue
        if len(feature) > 253:
            errs.append(invalid(f"{path}[{i}]", feature,
                                f"invalid feature name {quote_value(feature)}: must be no more than 253 characters"))
        elif not _DECLARED_FEATURE_RE.fullmatch(feature):
            errs.append(invalid(f"{path}[{i}]", feature,
                                f"invalid feature name {quote_value(feature)}: {_DECLARED_FEATURE_ERR}"))
        following = names[i + 1] if i + 1 < len(names) else None
        if isinstance(following, str):
            if following == feature:
                errs.append(f"{path}[{i + 1}]: Duplicate value: {quote_value(following)}")
            elif feature > following:
                errs.append(invalid(f"{path}[{i + 1}]", following, "list must be sorted alphabetically"))


# ---------------------------------------------------------------------------------------------------------
# Storage objects and PodDisruptionBudgets (pkg/apis/core, storage and policy validation; the words are the
# apiserver's, checked against it in tests/e2e/test_input_validation.py)

ACCESS_MODES: Final = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
VOLUME_MODES: Final = ("Block", "Filesystem")
BINDING_MODES: Final = ("Immediate", "WaitForFirstConsumer")
PV_RECLAIM_POLICIES: Final = ("Delete", "Recycle", "Retain")
CLASS_RECLAIM_POLICIES: Final = ("Delete", "Retain")
# A PersistentVolume needs exactly one source; the ones a scheduler may meet (the API has a few more).
_PV_SOURCES: Final = frozenset({
    "awsElasticBlockStore", "azureDisk", "azureFile", "cephfs", "cinder", "csi", "fc", "flexVolume", "flocker",
    "gcePersistentDisk", "glusterfs", "hostPath", "iscsi", "local", "nfs", "photonPersistentDisk",
    "portworxVolume", "quobyte", "rbd", "scaleIO", "storageos", "vsphereVolume",
})
_PERCENT_ERR: Final = regex_error(
    "a valid percent string must be a numeric string followed by an ending '%'", "[0-9]+%", "1%", "93%"
)


def _access_and_volume_modes(errs: _Errors, spec: Mapping[str, Any], message: str | None) -> None:
    modes = errs.items(spec.get("accessModes"), "spec.accessModes")
    if not modes:
        errs.append(required("spec.accessModes") + (f": {message}" if message else ""))
    for mode in modes:
        if mode not in ACCESS_MODES:
            errs.append(not_supported("spec.accessModes", mode, ACCESS_MODES))
    mode = spec.get("volumeMode")
    if mode is not None and mode not in VOLUME_MODES:
        errs.append(not_supported("spec.volumeMode", mode, VOLUME_MODES))


def _positive_storage(errs: _Errors, raw: Any, path: str) -> None:
    if raw is None:
        errs.append(required(path))
        return
    try:
        value = parse_quantity(raw)
    except (ValueError, TypeError) as exc:
        errs.append(invalid(path, raw, str(exc)))
        return
    if value <= 0:
        errs.append(invalid(path, canonical(raw), "must be greater than zero"))


def _persistent_volume_claim(errs: _Errors, obj: Mapping[str, Any]) -> None:
    spec = errs.mapping(obj.get("spec"), "spec")
    if spec is None:
        return
    _access_and_volume_modes(errs, spec, "at least 1 access mode is required")
    resources = errs.mapping(spec.get("resources"), "spec.resources") or {}
    requests = errs.mapping(resources.get("requests"), "spec.resources.requests") or {}
    _positive_storage(errs, requests.get("storage"), "spec.resources[storage]")
    _label_selector(errs, spec.get("selector"), "spec.selector")


def _persistent_volume(errs: _Errors, obj: Mapping[str, Any]) -> None:
    spec = errs.mapping(obj.get("spec"), "spec")
    if spec is None:
        return
    _access_and_volume_modes(errs, spec, None)
    capacity = errs.mapping(spec.get("capacity"), "spec.capacity")
    if not capacity:
        errs.append(required("spec.capacity"))
    else:
        _positive_storage(errs, capacity.get("storage"), "spec.capacity[storage]")
    if not any(key in spec for key in _PV_SOURCES):
        errs.append(required("spec") + ": must specify a volume type")
    policy = spec.get("persistentVolumeReclaimPolicy")
    if policy is not None and policy not in PV_RECLAIM_POLICIES:
        errs.append(not_supported("spec.persistentVolumeReclaimPolicy", policy, PV_RECLAIM_POLICIES))
    affinity = errs.mapping(spec.get("nodeAffinity"), "spec.nodeAffinity")
    if affinity:
        req = errs.mapping(affinity.get("required"), "spec.nodeAffinity.required")
        if req is not None and "required" in affinity:
            path = "spec.nodeAffinity.required.nodeSelectorTerms"
            terms = errs.items(req.get("nodeSelectorTerms"), path)
            if not terms:
                errs.append(required(path) + ": must have at least one node selector term")
            for i, term in enumerate(terms):
                _node_selector_term(errs, term, f"{path}[{i}]")


def _storage_class(errs: _Errors, obj: Mapping[str, Any]) -> None:
    policy = obj.get("reclaimPolicy")
    if policy is not None and policy not in CLASS_RECLAIM_POLICIES:
        errs.append(not_supported("reclaimPolicy", policy, CLASS_RECLAIM_POLICIES))
    mode = obj.get("volumeBindingMode")
    if mode is not None and mode not in BINDING_MODES:
        errs.append(not_supported("volumeBindingMode", mode, BINDING_MODES))
    provisioner = errs.string(obj.get("provisioner"), "provisioner")
    if provisioner == "":
        errs.append(required("provisioner"))
    for i, term in enumerate(errs.items(obj.get("allowedTopologies"), "allowedTopologies")):
        t = errs.mapping(term, f"allowedTopologies[{i}]") or {}
        path = f"allowedTopologies[{i}].matchLabelExpressions"
        for j, expression in enumerate(errs.items(t.get("matchLabelExpressions"), path)):
            e = errs.mapping(expression, f"{path}[{j}]") or {}
            if not errs.items(e.get("values"), f"{path}[{j}].values"):
                errs.append(required(f"{path}[{j}].values"))


def _dns_subdomain(errs: _Errors, value: Any, path: str) -> None:
    text = errs.string(value, path)
    if text is not None and dns1123_subdomain_errors(text):
        errs.append(invalid(path, text, "; ".join(dns1123_subdomain_errors(text))))


def _csi_node(errs: _Errors, obj: Mapping[str, Any]) -> None:
    spec = errs.mapping(obj.get("spec"), "spec") or {}
    seen: set[str] = set()
    for i, driver in enumerate(errs.items(spec.get("drivers"), "spec.drivers")):
        d = errs.mapping(driver, f"spec.drivers[{i}]")
        if d is None:
            continue
        name = d.get("name")
        _dns_subdomain(errs, name, f"spec.drivers[{i}].name")
        if isinstance(name, str):
            if name in seen:
                errs.append(f"spec.drivers[{i}].name: Duplicate value: {quote_value(name)}")
            seen.add(name)
        if not d.get("nodeID"):
            errs.append(required(f"spec.drivers[{i}].nodeID"))
        allocatable = errs.mapping(d.get("allocatable"), f"spec.drivers[{i}].allocatable") or {}
        count = errs.integer(allocatable.get("count"), f"spec.drivers[{i}].allocatable.count")
        if count is not None and count < 0:
            errs.append(invalid(f"spec.drivers[{i}].allocatable.count", count, "must be greater than or equal to 0"))


def _csi_storage_capacity(errs: _Errors, obj: Mapping[str, Any]) -> None:
    _dns_subdomain(errs, obj.get("storageClassName"), "storageClassName")
    for field_name in ("capacity", "maximumVolumeSize"):
        raw = obj.get(field_name)
        if raw is None:
            continue
        try:
            negative = parse_quantity(raw) < 0
        except (ValueError, TypeError) as exc:
            errs.append(invalid(field_name, raw, str(exc)))
            continue
        if negative:
            errs.append(invalid(field_name, canonical(raw), "must be greater than or equal to 0"))


def _volume_attachment(errs: _Errors, obj: Mapping[str, Any]) -> None:
    spec = errs.mapping(obj.get("spec"), "spec") or {}
    source = errs.mapping(spec.get("source"), "spec.source") or {}
    if sum(1 for key in ("inlineVolumeSpec", "persistentVolumeName") if source.get(key)) != 1:
        errs.append(required("spec.source") + ": must specify exactly one of inlineVolumeSpec and persistentVolumeName")
    _dns_subdomain(errs, spec.get("nodeName"), "spec.nodeName")
    if not spec.get("attacher"):
        errs.append(required("spec.attacher"))


def _int_or_percent(errs: _Errors, value: Any, path: str) -> None:
    """ValidatePositiveIntOrPercent and IsNotMoreThan100Percent."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        errs.append(invalid(path, value, "must be an integer or percentage (e.g '5%')"))
    elif isinstance(value, int):
        if value < 0:
            errs.append(invalid(path, value, "must be greater than or equal to 0"))
    elif not re.fullmatch("[0-9]+%", value):
        errs.append(invalid(path, value, _PERCENT_ERR))
    elif int(value[:-1]) > 100:
        errs.append(invalid(path, value, "must not be greater than 100%"))


def _pod_disruption_budget(errs: _Errors, obj: Mapping[str, Any]) -> None:
    spec = errs.mapping(obj.get("spec"), "spec")
    if spec is None:
        return
    if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
        shown = {  # the internal struct, as the apiserver prints it
            "MinAvailable": spec.get("minAvailable"),
            "Selector": spec.get("selector"),
            "MaxUnavailable": spec.get("maxUnavailable"),
            "UnhealthyPodEvictionPolicy": spec.get("unhealthyPodEvictionPolicy"),
        }
        errs.append(invalid("spec", shown, "minAvailable and maxUnavailable cannot be both set"))
    for field_name in ("minAvailable", "maxUnavailable"):
        if spec.get(field_name) is not None:
            _int_or_percent(errs, spec[field_name], f"spec.{field_name}")
    _label_selector(errs, spec.get("selector"), "spec.selector")


KIND_VALIDATORS: Final[dict[str, Any]] = {
    "PersistentVolumeClaim": _persistent_volume_claim,
    "PersistentVolume": _persistent_volume,
    "StorageClass": _storage_class,
    "CSINode": _csi_node,
    "CSIStorageCapacity": _csi_storage_capacity,
    "VolumeAttachment": _volume_attachment,
    "PodDisruptionBudget": _pod_disruption_budget,
}
"""The rules for the other kinds simulate reads, by kind (a kind added to simulate's input adds its own)."""


# ---------------------------------------------------------------------------------------------------------
# Entry point


class PodSpecMemo:
    """The pod specs one load found valid, keyed by their exact content with spec.nodeName blanked: the bound
    pods of a Deployment share their spec but for nodeName, so each distinct spec is checked once.

    The key is a pickle without memo (type-exact: 1, 1.0, True, "1", b"1", a tuple and a list all differ; the
    same for equal values whatever objects they share); nodeName, the one spec field left out, is checked
    per pod. Only error-free specs are remembered, so a pod with errors is always checked whole and its
    message is what `validate` alone says. `json_values`: the objects hold only what a JSON decoder makes
    (dict, list, str, int, float, bool, None), which MessagePack keeps apart as exactly, at half the cost.
    The valid label maps are remembered the same way, as (key, value) tuples (a valid map holds strings
    only, and a string equals only a string).
    """

    __slots__ = ("_dump", "_known", "keys", "labels", "namespaces", "node_names", "valid")

    def __init__(self, *, json_values: bool = False, known: Mapping[int, bytes] | None = None) -> None:
        self.valid: set[bytes] = set()
        self.labels: set[tuple[Any, ...]] = set()  # metadata.labels found valid, as (key, value) tuples
        self.namespaces: set[str] = set()  # metadata.namespace values found valid
        self.node_names: set[str] = set()  # spec.nodeName values found valid
        self.keys: dict[int, bytes] = {}  # id(pod object) -> its spec's key, for callers that parse it next
        self._dump = msgspec.msgpack.Encoder().encode if json_values else _pickled
        # id(pod object) -> a key its decoder made (config/json_dump.py: the spec's JSON text with nodeName cut
        # out, equally exact; its prefix keeps it apart from the keys made here)
        self._known = known or {}

    def key(self, obj: Mapping[str, Any]) -> bytes | None:
        """The key of the pod's spec (None when it cannot have one), remembered under id(obj)."""
        known = self._known.get(id(obj))
        if known is not None:
            self.keys[id(obj)] = known
            return known
        spec = obj.get("spec")
        if type(spec) is not dict:
            return None
        blanked = "nodeName" in spec
        node_name = spec.get("nodeName")
        if blanked:
            spec["nodeName"] = ""
        try:
            key = self._dump(spec)
        except Exception:  # anything unencodable or recursive (YAML aliases): checked whole, every time
            return None
        finally:
            if blanked:
                spec["nodeName"] = node_name
        self.keys[id(obj)] = key
        return key


def _pickled(value: Any) -> bytes:
    """A pickle without memo: equal values pickle the same whether or not they share objects."""
    buf = io.BytesIO()
    pickler = pickle.Pickler(buf, 5)
    pickler.fast = True
    pickler.dump(value)
    return buf.getvalue()


def _node_name_valid(spec: Mapping[str, Any], known: set[str]) -> bool:
    """_pod_spec's one check of spec.nodeName passes (the field PodSpecMemo's key leaves out); `known`: the
    names found valid so far (a node's pods repeat its name), which this adds to."""
    value = spec.get("nodeName")
    if value is None or (type(value) is str and value in known):
        return True
    if isinstance(value, str) and (not value or not dns1123_subdomain_errors(value)):
        if type(value) is str:
            known.add(value)
        return True
    return False


def validate(obj: Mapping[str, Any], namespaced: bool = True, memo: PodSpecMemo | None = None) -> list[str]:
    """Field errors the API server would report for this object's scheduling-relevant fields (empty: valid).

    With a memo, a pod whose spec (nodeName aside) an earlier pod of the same load had without errors skips
    the spec's checks but nodeName's."""
    errs = _Errors()
    kind = obj.get("kind")
    if memo is not None:
        _metadata(errs, obj, namespaced, memo.labels, memo.namespaces)
    else:
        _metadata(errs, obj, namespaced)
    if kind == "Pod":
        key = memo.key(obj) if memo is not None else None
        if key is None or memo is None or key not in memo.valid or not _node_name_valid(obj["spec"], memo.node_names):
            before = len(errs)
            _pod_spec(errs, obj.get("spec"), "spec")
            if key is not None and memo is not None and len(errs) == before:
                memo.valid.add(key)
        status = errs.mapping(obj.get("status"), "status")  # the scheduler writes conditions into it
        if status:
            for i, condition in enumerate(errs.items(status.get("conditions"), "status.conditions")):
                if type(condition) is not dict:
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
    elif isinstance(kind, str) and kind in KIND_VALIDATORS:
        KIND_VALIDATORS[kind](errs, obj)
    return list(errs)
