"""Objects kube-apiserver v1.37.2 refuses, with its words: the offline validation must say the same.

Shared by tests/test_validation_kinds.py (pyscheduler's validation gives exactly these errors) and
tests/e2e/test_input_validation.py (the real apiserver, asked with a server-side dry run, says each of them).
Recorded from `kubectl create --dry-run=server` against the test control plane.
"""

from __future__ import annotations

from typing import Any

JSON = dict[str, Any]
DNS_SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
QUALIFIED_NAME = (
    "a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. "
    "'example.com/MyName')"
)


def pod(spec: JSON, **meta: Any) -> JSON:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", **meta}, "spec": spec}


def one(**fields: Any) -> list[JSON]:
    return [{"name": "c", "image": "x", **fields}]


def _pdb(**spec: Any) -> JSON:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "b"},
        "spec": {"selector": {"matchLabels": {"a": "b"}}, **spec},
    }


# (id, object, the apiserver's field errors)
SAMPLES: list[tuple[str, JSON, list[str]]] = [
    ("pdb-min-and-max", _pdb(minAvailable=1, maxUnavailable=1), [
        'spec: Invalid value: {"MinAvailable":1,"Selector":{"matchLabels":{"a":"b"}},"MaxUnavailable":1,'
        '"UnhealthyPodEvictionPolicy":null}: minAvailable and maxUnavailable cannot be both set',
    ]),
    ("pdb-negative", _pdb(minAvailable=-1), [
        "spec.minAvailable: Invalid value: -1: must be greater than or equal to 0",
    ]),
    ("pdb-150-percent", _pdb(maxUnavailable="150%"), [
        'spec.maxUnavailable: Invalid value: "150%": must not be greater than 100%',
    ]),
    ("extended-resource-without-limit", pod({"containers": one(resources={"requests": {"example.com/gpu": "1"}})}), [
        "spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources",
    ]),
    ("extended-resource-request-not-limit", pod({"containers": one(resources={
        "requests": {"example.com/gpu": "1"}, "limits": {"example.com/gpu": "2"}})}), [
        'spec.containers[0].resources.requests: Invalid value: "1": must be equal to example.com/gpu limit of 2',
    ]),
    ("resource-name-not-qualified", pod({"containers": one(resources={"limits": {"gpu": "1"}})}), [
        'spec.containers[0].resources.limits[gpu]: Invalid value: "gpu": must be a standard resource type or fully '
        "qualified",
        'spec.containers[0].resources.limits[gpu]: Invalid value: "gpu": must be a standard resource for containers',
        # requests default to the limits before validation, so the request is refused too
        'spec.containers[0].resources.requests[gpu]: Invalid value: "gpu": must be a standard resource type or '
        "fully qualified",
        'spec.containers[0].resources.requests[gpu]: Invalid value: "gpu": must be a standard resource for '
        "containers",
    ]),
    ("extended-resource-fraction", pod({"containers": one(resources={
        "requests": {"example.com/gpu": "500m"}, "limits": {"example.com/gpu": "500m"}})}), [
        'spec.containers[0].resources.limits[example.com/gpu]: Invalid value: "500m": must be an integer',
        'spec.containers[0].resources.requests[example.com/gpu]: Invalid value: "500m": must be an integer',
    ]),
    ("request-above-limit", pod({"containers": one(resources={"requests": {"cpu": "1.5"}, "limits": {"cpu": "1"}})}), [
        'spec.containers[0].resources.requests: Invalid value: "1500m": must be less than or equal to cpu limit of 1',
    ]),
    ("hugepages-alone", pod({"containers": one(resources={
        "requests": {"hugepages-2Mi": "2Mi"}, "limits": {"hugepages-2Mi": "2Mi"}})}), [
        "spec.containers[0].resources: Forbidden: HugePages require cpu or memory",
    ]),
    ("duplicate-host-port", pod({"containers": [
        {"name": "c", "image": "x", "ports": [{"containerPort": 80, "hostPort": 80}]},
        {"name": "d", "image": "x", "ports": [{"containerPort": 81, "hostPort": 80}]},
    ]}), ['spec.containers[1].ports[0].hostPort: Duplicate value: "TCP//80"']),
    ("scheduling-gates", pod({"schedulingGates": [{"name": "a/b/c"}, {"name": "x"}, {"name": "x"}],
                              "containers": one()}), [
        f'spec.schedulingGates[0]: Invalid value: "a/b/c": {QUALIFIED_NAME}',
        'spec.schedulingGates[2]: Duplicate value: "x"',
    ]),
    ("pod-level-request-above-limit", pod({"resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}},
                                           "containers": one()}), [
        'spec.resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1',
    ]),
    ("pod-level-below-containers", pod({"resources": {"requests": {"cpu": "1"}},
                                        "containers": one(resources={"requests": {"cpu": "2"}})}), [
        'spec.resources.requests[cpu]: Invalid value: "1": must be greater than or equal to aggregate container '
        "requests of 2",
    ]),
    ("pod-level-extended-resource", pod({"resources": {"requests": {"example.com/gpu": "1"}}, "containers": one()}), [
        'spec.resources.requests[example.com/gpu]: Unsupported value: "example.com/gpu": supported values: "cpu", '
        '"hugepages-", "memory"',
        "spec.resources.limits: Required value: Limit must be set for non overcommitable resources",
    ]),
    ("two-controllers", pod({"containers": one()}, ownerReferences=[
        {"apiVersion": "v1", "kind": "A", "name": "a", "uid": "1", "controller": True},
        {"apiVersion": "v1", "kind": "B", "name": "b", "uid": "2", "controller": True},
    ]), [
        'metadata.ownerReferences: Invalid value: [{"apiVersion":"v1","kind":"A","name":"a","uid":"1",'
        '"controller":true},{"apiVersion":"v1","kind":"B","name":"b","uid":"2","controller":true}]: Only one '
        'reference can have Controller set to true. Found "true" in references for A/a and B/b',
    ]),
    ("pvc-empty", {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "c"}, "spec": {}}, [
        "spec.accessModes: Required value: at least 1 access mode is required",
        "spec.resources[storage]: Required value",
    ]),
    ("pvc-bad-values", {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "c"}, "spec": {
        "accessModes": ["ReadWriteSometimes"], "volumeMode": "Foo", "resources": {"requests": {"storage": "-1Gi"}}}}, [
        'spec.accessModes: Unsupported value: "ReadWriteSometimes": supported values: "ReadOnlyMany", '
        '"ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"',
        'spec.resources[storage]: Invalid value: "-1Gi": must be greater than zero',
        'spec.volumeMode: Unsupported value: "Foo": supported values: "Block", "Filesystem"',
    ]),
    ("pv-zero-capacity", {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "v"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/x"}, "capacity": {"storage": "0"}}}, [
        'spec.capacity[storage]: Invalid value: "0": must be greater than zero',
    ]),
    ("pv-no-source-no-terms", {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "v"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"},
        "persistentVolumeReclaimPolicy": "Keep", "nodeAffinity": {"required": {"nodeSelectorTerms": []}}}}, [
        "spec: Required value: must specify a volume type",
        'spec.persistentVolumeReclaimPolicy: Unsupported value: "Keep": supported values: "Delete", "Recycle", '
        '"Retain"',
        "spec.nodeAffinity.required.nodeSelectorTerms: Required value: must have at least one node selector term",
    ]),
    ("storage-class", {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "s"},
                       "provisioner": "", "volumeBindingMode": "Later", "reclaimPolicy": "Keep"}, [
        'reclaimPolicy: Unsupported value: "Keep": supported values: "Delete", "Retain"',
        'volumeBindingMode: Unsupported value: "Later": supported values: "Immediate", "WaitForFirstConsumer"',
        "provisioner: Required value",
    ]),
    ("csi-node", {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": "n1"},
                  "spec": {"drivers": [
        {"name": "bad_name!", "nodeID": "", "allocatable": {"count": -1}},
        {"name": "d.example.com", "nodeID": "x"}, {"name": "d.example.com", "nodeID": "z"}]}}, [
        f'spec.drivers[0].name: Invalid value: "bad_name!": {DNS_SUBDOMAIN}',
        "spec.drivers[0].nodeID: Required value",
        "spec.drivers[0].allocatable.count: Invalid value: -1: must be greater than or equal to 0",
        'spec.drivers[2].name: Duplicate value: "d.example.com"',
    ]),
    ("csi-storage-capacity", {"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
                              "metadata": {"name": "cap"}, "storageClassName": "", "capacity": "-1Gi"}, [
        f'storageClassName: Invalid value: "": {DNS_SUBDOMAIN}',
        'capacity: Invalid value: "-1Gi": must be greater than or equal to 0',
    ]),
]
