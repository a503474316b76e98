"""The API server's validation of scheduling-relevant fields, applied to offline input (scheduler/validation.py)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.testing import expr, make_node, make_pod
from scheduler.validation import validate

JSON = dict[str, Any]


def pod(**spec: Any) -> JSON:
    obj = make_pod("p").obj()
    obj["spec"].update(spec)
    return obj


def container(**fields: Any) -> list[JSON]:
    return [{"name": "c", "image": "x", **fields}]


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param(
            pod(containers=container(resources={"requests": {"cpu": "-1"}})),
            'spec.containers[0].resources.requests[cpu]: Invalid value: "-1": must be greater than or equal to 0',
            id="negative-request",
        ),
        pytest.param(
            pod(containers=container(resources={"requests": {"cpu": "2"}, "limits": {"cpu": "1"}})),
            "must be less than or equal to cpu limit of 1",
            id="request-above-limit",
        ),
        pytest.param(
            pod(containers=container(resources={"requests": {"example.com/gpu": "500m"}})),
            "must be an integer",
            id="fractional-extended-resource",
        ),
        pytest.param(
            pod(containers=container(ports=[{"containerPort": 80, "hostPort": 70000}])),
            "spec.containers[0].ports[0].hostPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
            id="host-port-range",
        ),
        pytest.param(
            pod(containers=container(ports=[{"containerPort": 80, "protocol": "HTTP"}])),
            'spec.containers[0].ports[0].protocol: Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"',
            id="protocol-enum",
        ),
        pytest.param(
            pod(containers=container(ports=[{"hostPort": 80}])),
            "spec.containers[0].ports[0].containerPort: Required value",
            id="container-port-required",
        ),
        pytest.param(
            pod(tolerations=[{"key": "k", "operator": "Exists", "value": "v"}]),
            "value must be empty when `operator` is 'Exists'",
            id="exists-with-value",
        ),
        pytest.param(
            pod(tolerations=[{"key": "k", "operator": "Matches", "value": "v"}]),
            'spec.tolerations[0].operator: Unsupported value: "Matches": supported values: "Equal", "Exists"',
            id="toleration-operator-enum",
        ),
        pytest.param(
            pod(tolerations=[{"key": "k", "effect": "NoScheduleEver"}]),
            'spec.tolerations[0].effect: Unsupported value: "NoScheduleEver"',
            id="toleration-effect-enum",
        ),
        pytest.param(
            pod(tolerations=[{"value": "v"}]),
            "operator must be Exists when `key` is empty",
            id="empty-key-needs-exists",
        ),
        pytest.param(
            make_pod("p").required_term([expr("zone", "Near", ["a"])]).obj(),
            "matchExpressions[0].operator: Invalid value: \"Near\": not a valid selector operator",
            id="node-affinity-operator",
        ),
        pytest.param(
            make_pod("p").required_term([expr("zone", "Gt", ["1", "2"])]).obj(),
            "must be specified single value when `operator` is 'Lt' or 'Gt'",
            id="gt-needs-one-value",  # not an integer: `1.5` is accepted (tests/test_simulate_semantics.py)
        ),
        pytest.param(
            make_pod("p").pod_affinity_term("podAntiAffinity", "", {"app": "web"}).obj(),
            "topologyKey: Required value",
            id="pod-affinity-topology-key",
        ),
        pytest.param(
            make_pod("p").spread_constraint(0, "zone", match_labels={"a": "b"}).obj(),
            "maxSkew: Invalid value: 0: must be greater than zero",
            id="max-skew",
        ),
        pytest.param(
            make_pod("p").spread_constraint(1, "zone", when_unsatisfiable="Sometimes").obj(),
            'whenUnsatisfiable: Unsupported value: "Sometimes"',
            id="when-unsatisfiable",
        ),
        pytest.param(  # found by test_input_properties: a list there made the duplicate check raise TypeError
            make_pod("p").spread_constraint(1, "zone", when_unsatisfiable=[]).obj(),  # type: ignore[arg-type]
            "whenUnsatisfiable: Unsupported value: []",
            id="when-unsatisfiable-list",
        ),
        pytest.param(pod(priority=2**40), "must be a 32-bit integer", id="priority-range"),
        pytest.param(  # found by test_input_properties: the in-memory cluster's condition write raised on it
            {**pod(), "status": [1, 2]}, "status: Invalid value: [1,2]: must be an object", id="pod-status-type"
        ),
        pytest.param(
            {**pod(), "status": {"conditions": {"type": "Ready"}}}, "status.conditions: Invalid value", id="conditions"
        ),
        pytest.param(pod(nodeSelector={"zone": ["a"]}), "spec.nodeSelector[zone]: Invalid value", id="selector-type"),
        pytest.param(pod(containers={"name": "c"}), "spec.containers: Invalid value", id="containers-type"),
        pytest.param(
            make_node("n").taint("k", "v", "Sometimes").obj(),
            'spec.taints[0].effect: Unsupported value: "Sometimes"',
            id="taint-effect",
        ),
        pytest.param(
            {**make_node("n").taint("k", "a").obj(), "spec": {"taints": [
                {"key": "k", "value": "a", "effect": "NoSchedule"}, {"key": "k", "value": "b", "effect": "NoSchedule"}
            ]}},
            "taints must be unique by key and effect pair",
            id="duplicate-taint",
        ),
        pytest.param(
            {**make_node("n").obj(), "status": {"allocatable": {"cpu": "-4"}}},
            "status.allocatable[cpu]: Invalid value",
            id="negative-allocatable",
        ),
        pytest.param({**make_node("n").obj(), "metadata": {"name": "Bad_Name"}}, "metadata.name", id="node-name"),
        pytest.param(  # the message kube-apiserver v1.37.2 answered with on the test control plane
            pod(containers=container(restartPolicyRules=[{"action": "RestartAllContainers"}])),
            "spec.containers[0].restartPolicy: Required value: must specify restartPolicy when restart rules are used",
            id="restart-rules-need-a-container-restart-policy",
        ),
        pytest.param(
            pod(containers=container(restartPolicy="Never", restartPolicyRules=[{"action": "RestartPod"}])),
            'spec.containers[0].restartPolicyRules[0].action: Unsupported value: "RestartPod": supported values: '
            '"Restart", "RestartAllContainers"',
            id="restart-rule-action",
        ),
        pytest.param(  # the message kube-apiserver v1.37.2 answered with (UserNamespacesHostNetworkSupport is off)
            pod(hostNetwork=True, hostUsers=False), "spec.hostNetwork: Forbidden: when `hostUsers` is false",
            id="user-namespace-on-host-network",
        ),
        pytest.param(pod(hostUsers="no"), 'spec.hostUsers: Invalid value: "no": must be a boolean', id="host-users"),
        pytest.param(
            {**make_node("n").obj(), "status": {"declaredFeatures": ["B", "A"]}},
            'status.declaredFeatures[1]: Invalid value: "A": list must be sorted alphabetically',
            id="declared-features-sorted",
        ),
        pytest.param(
            {**make_node("n").obj(), "status": {"declaredFeatures": ["A", "A"]}},
            'status.declaredFeatures[1]: Duplicate value: "A"',
            id="declared-features-unique",
        ),
        pytest.param(
            {**make_node("n").obj(), "status": {"declaredFeatures": ["lowerCase"]}},
            'status.declaredFeatures[0]: Invalid value: "lowerCase": invalid feature name "lowerCase": must start '
            "with an UpperCamelCase segment",
            id="declared-feature-name",
        ),
    ],
)
def test_what_the_api_server_rejects_is_reported(obj: JSON, expected: str) -> None:
    """Each invalid value gives an error naming the field, as kube-apiserver's validation would."""
    errors = validate(obj)
    assert any(expected in e for e in errors), errors


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param(make_pod("p").req(cpu="500m", memory="1Gi").host_port(53, protocol="UDP").obj(), id="pod"),
        pytest.param(make_pod("p").toleration("k", "v", "NoSchedule").node_affinity_in("zone", ["a"]).obj(), id="tol"),
        pytest.param(make_pod("p").pod_affinity_term("podAffinity", "zone", {"a": "b"}, weight=5).obj(), id="pa"),
        pytest.param(make_node("n").taint("k", "", "NoExecute").zone("a").obj(), id="node"),
        pytest.param(make_pod("p").restart_rule().restart_rule(action="Restart").obj(), id="restart-rules"),
        pytest.param(make_node("n").declared_features("RestartAllContainersOnContainerExits", "My/subFeature").obj(),
                     id="declared-features"),
    ],
)
def test_valid_objects_pass(obj: JSON) -> None:
    assert validate(obj) == []
