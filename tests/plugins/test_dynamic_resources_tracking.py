"""DynamicResources' bookkeeping, without a scheduler: which claim a pod entry names (upstream resourceclaim
package), the claim tracker (assume cache, in-flight allocations, the allocated-devices index), slices with
DeviceTaintRules, extended resources backed by DRA (the class resolver and the device requests made per
container, upstream's createRequestsAndMappings cases) and DynamicResourcesArgs."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.backend.cache.objects import ClusterObjects
from scheduler.config.errors import ConfigError
from scheduler.dra.deviceclass import ExtendedResourceClasses, is_dra_extended_resource_name
from scheduler.framework.objects import DEVICE_CLASS, DEVICE_TAINT_RULE, RESOURCE_CLAIM, RESOURCE_SLICE
from scheduler.framework.types import ContainerExtendedRequests
from scheduler.plugins.dynamic_resources.args import Args, go_duration, parse_args
from scheduler.plugins.dynamic_resources.claims import ClaimError, claim_name, is_for_pod
from scheduler.plugins.dynamic_resources.extended import create_requests_and_mappings
from scheduler.plugins.dynamic_resources.tracker import ClaimTracker, SliceLister
from scheduler.testing import device_class, make_claim, make_pod, make_slice

JSON = dict[str, Any]
GPU = "gpu.example.com"


def _store(*objs: JSON) -> ClusterObjects:
    store = ClusterObjects()
    for obj in objs:
        store.apply(str(obj["kind"]), None, obj)
    return store


def _rv(obj: JSON, rv: int) -> JSON:
    obj["metadata"]["resourceVersion"] = str(rv)
    return obj


# --------------------------------------------------------------------------------------------- claim names


@pytest.mark.parametrize(
    ("entry", "statuses", "expected"),
    [
        pytest.param({"name": "gpu", "resourceClaimName": "shared"}, (), ("shared", False), id="direct"),
        pytest.param(
            {"name": "gpu", "resourceClaimTemplateName": "t"},
            (("gpu", "p-gpu-x7k2q"),),
            ("p-gpu-x7k2q", True),
            id="generated",
        ),
        pytest.param(
            {"name": "gpu", "resourceClaimTemplateName": "t"}, (("gpu", None),), (None, True), id="deliberately-none"
        ),
        pytest.param(
            {"name": "gpu", "resourceClaimTemplateName": "t"},
            (("other", "x"),),
            'pod "default/p": ResourceClaim not created yet',
            id="template-not-created-yet",
        ),
        pytest.param(
            {"name": "gpu"},
            (),
            'pod "default/p", spec.resourceClaim "gpu": none of the supported fields are set',
            id="neither-field",
        ),
    ],
)
def test_claim_name(entry: JSON, statuses: tuple[tuple[str, str | None], ...], expected: Any) -> None:
    """resourceclaim.Name: the claim an entry names, whether it must be the pod's, or upstream's error."""
    builder = make_pod("p")
    for name, generated in statuses:
        builder.claim_status(name, generated)
    pod = builder.obj()
    pod["spec"]["resourceClaims"] = [entry]
    from scheduler.framework.types import parse_pod

    info = parse_pod(pod)
    if isinstance(expected, str):
        with pytest.raises(ClaimError) as err:
            claim_name(info, entry)
        assert str(err.value) == expected
    else:
        assert claim_name(info, entry) == expected


def test_is_for_pod_names_the_owner_problem() -> None:
    """resourceclaim.IsForPod: another namespace, or a controller that is not the pod, with upstream's words."""
    pod_obj = make_pod("p").obj()
    from scheduler.framework.types import parse_pod

    pod = parse_pod(pod_obj)
    assert is_for_pod(pod, make_claim("c").owned_by(pod_obj).obj()) is None
    assert is_for_pod(pod, make_claim("c").obj()) == (
        "ResourceClaim default/c was not created for Pod default/p (Pod is not owner)"
    )
    assert is_for_pod(pod, make_claim("c", "other").owned_by(pod_obj).obj()) == (
        "ResourceClaim other/c is not in the same namespace as Pod default/p"
    )


# --------------------------------------------------------------------------------------------- the tracker


def test_assumed_claim_shadows_the_informer_until_it_catches_up() -> None:
    """An API write's result is seen at once; the informer's equal or newer version replaces it."""
    stored = _rv(make_claim("c").obj(), 5)
    store = _store(stored)
    tracker = ClaimTracker(store)
    written = _rv(make_claim("c").allocated("n1", ("gpu", GPU, "n1", "gpu-0")).obj(), 6)
    written["metadata"]["uid"] = stored["metadata"]["uid"]
    tracker.assume(written)
    assert (tracker.get("default", "c") or {})["metadata"]["resourceVersion"] == "6"
    assert tracker.allocated()[0] == {(GPU, "n1", "gpu-0")}
    store.apply(RESOURCE_CLAIM, "MODIFIED", written)  # the watch delivers our write
    assert tracker.assumed_count() == 1
    assert tracker.get("default", "c") is written and tracker.assumed_count() == 0
    assert tracker.allocated()[0] == {(GPU, "n1", "gpu-0")}


def test_assuming_an_older_version_is_refused_and_restore_forgets() -> None:
    store = _store(_rv(make_claim("c").obj(), 9))
    tracker = ClaimTracker(store)
    with pytest.raises(Exception, match=r'ResourceClaim "default/c" is out of sync \(stored: 9, assume: 3\)'):
        tracker.assume(_rv(make_claim("c").obj(), 3))
    newer = _rv(make_claim("c").obj(), 10)
    tracker.assume(newer)
    tracker.restore("default", "c")
    assert (tracker.get("default", "c") or {})["metadata"]["resourceVersion"] == "9"


def test_in_flight_allocations_are_shared_and_count_as_allocated() -> None:
    """Reserve's allocation counts against other pods until the last sharer lets go (or PreBind forces it)."""
    claim = _rv(make_claim("c").obj(), 1)
    tracker = ClaimTracker(_store(claim))
    pending = make_claim("c").allocated("n1", ("gpu", GPU, "n1", "gpu-1")).obj()
    uid = claim["metadata"]["uid"]
    tracker.signal_pending_allocation(uid, pending)
    tracker.signal_pending_allocation(uid, pending)
    assert tracker.pending_allocation(uid) is not None
    assert tracker.allocated()[0] == {(GPU, "n1", "gpu-1")}
    assert tracker.maybe_remove_pending_allocation(uid, False) is False  # one sharer left
    assert tracker.maybe_remove_pending_allocation(uid, True) is True
    assert tracker.allocated()[0] == set() and tracker.pending_allocation(uid) is None


def test_allocated_index_follows_the_change_log() -> None:
    """Allocating, deallocating and deleting claims moves their devices in and out; admin access holds none;
    a device two claims hold stays allocated until both let go."""
    a = _rv(make_claim("a").allocated("n1", ("r", GPU, "n1", "gpu-0")).obj(), 1)
    admin = _rv(make_claim("admin").allocated("n1", ("r", GPU, "n1", "gpu-1")).obj(), 1)
    admin["status"]["allocation"]["devices"]["results"][0]["adminAccess"] = True
    store = _store(a, admin)
    tracker = ClaimTracker(store)
    assert tracker.allocated()[0] == {(GPU, "n1", "gpu-0")}
    b = _rv(make_claim("b").allocated("n1", ("r", GPU, "n1", "gpu-0"), ("r", GPU, "n1", "gpu-2")).obj(), 2)
    store.apply(RESOURCE_CLAIM, "ADDED", b)
    assert tracker.allocated()[0] == {(GPU, "n1", "gpu-0"), (GPU, "n1", "gpu-2")}
    store.apply(RESOURCE_CLAIM, "DELETED", a)
    assert tracker.allocated()[0] == {(GPU, "n1", "gpu-0"), (GPU, "n1", "gpu-2")}  # b still holds gpu-0
    released = _rv(make_claim("b").obj(), 3)
    store.apply(RESOURCE_CLAIM, "MODIFIED", released)
    assert tracker.allocated()[0] == set()
    assert tracker.holders((GPU, "n1", "gpu-0")) == []


def test_shared_devices_and_consumed_capacity() -> None:
    """Consumable capacity: a result with a shareID is a share of its device and consumes its capacity."""
    claim = _rv(make_claim("c").allocated("n1", ("r", GPU, "n1", "gpu-0")).obj(), 1)
    result = claim["status"]["allocation"]["devices"]["results"][0]
    result["shareID"] = "7d9f2c1e-0000-4000-8000-000000000001"
    result["consumedCapacity"] = {"memory": "10Gi"}
    dedicated, shared, consumed = ClaimTracker(_store(claim)).allocated()
    assert dedicated == set()
    assert shared == {(GPU, "n1", "gpu-0", "7d9f2c1e-0000-4000-8000-000000000001")}
    assert consumed == [((GPU, "n1", "gpu-0"), {"memory": "10Gi"})]


def test_device_taint_rules_patch_the_devices_they_select() -> None:
    """A rule selecting driver/pool/device appends its taint to that device only; none selects nothing."""
    slice_ = make_slice("s", GPU, "n1").device("gpu-0").device("gpu-1").obj()
    rule = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": DEVICE_TAINT_RULE,
        "metadata": {"name": "maint"},
        "spec": {
            "deviceSelector": {"driver": GPU, "device": "gpu-1"},
            "taint": {"key": "maint", "effect": "NoSchedule"},
        },
    }
    no_selector = {
        "kind": DEVICE_TAINT_RULE,
        "metadata": {"name": "all"},
        "spec": {"taint": {"key": "x", "effect": "NoSchedule"}},
    }
    store = _store(slice_, rule, no_selector)
    [patched] = SliceLister(store).list_with_device_taint_rules()
    assert [d.get("taints") for d in patched["spec"]["devices"]] == [None, [{"key": "maint", "effect": "NoSchedule"}]]
    stored = store.get(RESOURCE_SLICE, "", "s")
    assert stored is not None and "taints" not in stored["spec"]["devices"][1]  # the stored slice is untouched


# --------------------------------------------------------------------------------------------- extended resources


def test_extended_resource_names_and_classes() -> None:
    """The implicit deviceclass.resource.kubernetes.io/<class> name, and an explicit one taken by the newest
    class (the smaller name on a tie), as upstream's cache prefers them."""
    assert is_dra_extended_resource_name("example.com/gpu")
    assert is_dra_extended_resource_name("deviceclass.resource.kubernetes.io/gpu")
    assert not is_dra_extended_resource_name("cpu") and not is_dra_extended_resource_name("kubernetes.io/x")
    old = device_class("old", extended_resource_name="example.com/gpu", created="2026-01-01T00:00:00Z")
    new = device_class("new", extended_resource_name="example.com/gpu", created="2026-02-01T00:00:00Z")
    store = _store(old, new)
    classes = ExtendedResourceClasses(store)
    assert (classes.device_class("example.com/gpu") or {})["metadata"]["name"] == "new"
    assert (classes.device_class("deviceclass.resource.kubernetes.io/old") or {})["metadata"]["name"] == "old"
    assert classes.extended_resource("old") == "example.com/gpu"
    store.apply(DEVICE_CLASS, "DELETED", new)
    assert (classes.device_class("example.com/gpu") or {})["metadata"]["name"] == "old"


X = "example.com/gpu"


def _container(index: int, short: bool, **amounts: int) -> ContainerExtendedRequests:
    names = {"x": X, "x1": X + "1", "xinit": X + "init"}
    real = {names[k]: v for k, v in amounts.items()}
    return ContainerExtendedRequests(index, f"c{index}", short, tuple(sorted(real)), tuple(sorted(real.items())))


CLASSES = {X: "class", X + "1": "class1", X + "init": "classInit"}


@pytest.mark.parametrize(
    ("containers", "needed", "mapped", "want"),
    [
        pytest.param(
            [_container(0, False, x=1, x1=2)], {X: 1}, (X,), [("container-0-request-0", "class", 1)], id="one-match"
        ),
        pytest.param(
            [_container(0, False, x=1, x1=2)],
            {X: 1, X + "1": 2},
            (X,),
            [("container-0-request-0", "class", 1)],
            id="one-match-one-not",
        ),
        pytest.param(
            [_container(0, False, x=1, x1=2)],
            {X: 1, X + "1": 2},
            (X, X + "1"),
            [("container-0-request-0", "class", 1), ("container-0-request-1", "class1", 2)],
            id="two-resources",
        ),
        pytest.param(
            [_container(0, False, x=1), _container(1, False, x1=2)],
            {X: 1, X + "1": 2},
            (X, X + "1"),
            [("container-0-request-0", "class", 1), ("container-1-request-0", "class1", 2)],
            id="two-containers",
        ),
        pytest.param(
            [_container(0, True, xinit=2), _container(1, False, x=1)],
            {X: 1, X + "init": 2},
            (X, X + "init"),
            [("container-0-request-0", "classInit", 2), ("container-1-request-0", "class", 1)],
            id="one-init-one-regular",
        ),
        pytest.param(
            [_container(0, True, xinit=1), _container(1, True, xinit=2), _container(2, False, x=1)],
            {X: 1, X + "init": 2},
            (X, X + "init"),
            [("container-1-request-0", "classInit", 2), ("container-2-request-0", "class", 1)],
            id="two-inits-largest-wins",
        ),
        pytest.param(
            [
                _container(0, True, xinit=1),
                _container(1, False, xinit=1),
                _container(2, True, xinit=2),
                _container(3, False, x=1),
            ],
            {X: 1, X + "init": 2},
            (X, X + "init"),
            [
                ("container-1-request-0", "classInit", 1),
                ("container-2-request-0", "classInit", 2),
                ("container-3-request-0", "class", 1),
            ],
            id="init-reuses-a-later-sidecar",
        ),
    ],
)
def test_create_requests_and_mappings(
    containers: list[ContainerExtendedRequests],
    needed: dict[str, int],
    mapped: tuple[str, ...],
    want: list[tuple[str, str, int]],
) -> None:
    """Upstream's Test_createRequestsAndMappings_requests cases: one request per container and resource, the
    largest short-lived init container's only, sorted by name."""
    store = _store(*(device_class(CLASSES[r], extended_resource_name=r) for r in mapped))
    requests, _ = create_requests_and_mappings(containers, needed, ExtendedResourceClasses(store))
    got = [(r["name"], r["exactly"]["deviceClassName"], r["exactly"]["count"]) for r in requests]
    assert got == want
    assert all(r["exactly"]["allocationMode"] == "ExactCount" for r in requests)


def test_mappings_name_the_request_each_container_uses() -> None:
    """An init container covered by a later sidecar's request maps to that request."""
    containers = [_container(0, True, x=1), _container(1, False, x=1)]
    store = _store(device_class("class", extended_resource_name=X))
    _, mappings = create_requests_and_mappings(containers, {X: 1}, ExtendedResourceClasses(store))
    assert mappings == [
        {"containerName": "c1", "resourceName": X, "requestName": "container-1-request-0"},
        {"containerName": "c0", "resourceName": X, "requestName": "container-1-request-0"},
    ]


# --------------------------------------------------------------------------------------------- args


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param(None, Args(10.0, 600.0), id="defaults"),
        pytest.param({"filterTimeout": "0s", "bindingTimeout": "2m"}, Args(0.0, 120.0), id="filter-timeout-off"),
        pytest.param({"filterTimeout": "-1s"}, "filterTimeout: Invalid value: -1s: must be zero or positive", id="neg"),
        pytest.param(
            {"bindingTimeout": "500ms"}, "bindingTimeout: Invalid value: 500ms: must be at least 1 second", id="short"
        ),
        pytest.param({"bindTimeout": "1s"}, 'unknown field "bindTimeout"', id="unknown-field"),
        pytest.param(
            {"filterTimeout": 10}, 'filterTimeout: must be a duration string like "10s", got integer 10', id="number"
        ),
    ],
)
def test_args(raw: JSON | None, expected: Args | str) -> None:
    """DynamicResourcesArgs: upstream's defaults and validation messages, the value printed as Go prints it."""
    if isinstance(expected, Args):
        assert parse_args(raw) == expected
    else:
        with pytest.raises(ConfigError) as err:
            parse_args(raw)
        assert expected in str(err.value)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(10, "10s"), (90, "1m30s"), (1.5, "1.5s"), (0.5, "500ms"), (3600.5, "1h0m0.5s"), (0, "0s"), (-2, "-2s")],
)
def test_go_duration(seconds: float, text: str) -> None:
    """time.Duration.String."""
    assert go_duration(seconds) == text
