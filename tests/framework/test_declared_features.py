"""Node declared features inference (component-helpers nodedeclaredfeatures v0.37.2, the scheduling half).

Case names in quotes are upstream's, from framework_test.go and each feature's *_test.go.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.framework.declared_features import (
    FEATURES,
    RESTART_ALL_CONTAINERS,
    SCHEDULER_VERSION,
    USER_NAMESPACES_HOST_NETWORK,
    VOLUME_BIND_MOUNT_OPTIONS,
    DeclaredFeature,
    Version,
    infer_for_pod_scheduling,
    infer_for_scheduling,
    required_features,
    unsatisfied,
)
from scheduler.framework.types import ParseError, parse_node, parse_pod
from scheduler.release import UPSTREAM_RELEASE
from scheduler.testing import make_node, make_pod

JSON = dict[str, Any]
RULE = {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [1]}}
# containerWithRestartAllContainersAction() of restart_all_containers_test.go
CONTAINER_WITH_RULE: JSON = {
    "name": "container", "image": "image", "restartPolicy": "Never", "restartPolicyRules": [RULE]
}
PLAIN: JSON = {"name": "name", "image": "image"}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param({"initContainers": [CONTAINER_WITH_RULE], "containers": [PLAIN]}, True,
                     id="init container with rules"),
        pytest.param({"initContainers": [PLAIN], "containers": [CONTAINER_WITH_RULE]}, True,
                     id="regular container with rules"),
        pytest.param({"initContainers": [PLAIN], "containers": [{"name": "name2", "image": "image"}]}, False,
                     id="no rules"),
        pytest.param(
            {"containers": [{**PLAIN, "restartPolicy": "Never",
                             "restartPolicyRules": [{**RULE, "action": "Restart"}]}]},
            False,
            id="restart-action-only",
        ),
        pytest.param({"containers": [PLAIN], "ephemeralContainers": [CONTAINER_WITH_RULE]}, False,
                     id="ephemeral-containers-are-not-looked-at"),
    ],
)
def test_restart_all_containers_infer_for_scheduling(spec: JSON, expected: bool) -> None:
    """restartallcontainers: any container or init container rule with action RestartAllContainers."""
    feature = next(f for f in FEATURES if f.name == RESTART_ALL_CONTAINERS)
    assert feature.infer_for_scheduling(spec) is expected
    assert (RESTART_ALL_CONTAINERS in infer_for_scheduling(spec)) is expected


@pytest.mark.parametrize(
    ("host_network", "host_users", "expected"),
    [
        pytest.param(True, False, True, id="HostNetwork true, HostUsers false"),
        pytest.param(True, None, False, id="HostNetwork true, HostUsers nil"),
        pytest.param(True, True, False, id="HostNetwork true, HostUsers true"),
        pytest.param(False, False, False, id="HostNetwork false, HostUsers false"),
    ],
)
def test_user_namespaces_host_network_infer_for_scheduling(
    host_network: bool, host_users: bool | None, expected: bool
) -> None:
    """usernamespaceshostnetwork: hostNetwork together with hostUsers: false."""
    spec: JSON = {"containers": [PLAIN], "hostNetwork": host_network}
    if host_users is not None:
        spec["hostUsers"] = host_users
    assert (USER_NAMESPACES_HOST_NETWORK in infer_for_scheduling(spec)) is expected


@pytest.mark.parametrize(
    ("kind", "options", "expected"),
    [
        pytest.param("containers", ["noexec"], True, id="container-mount-with-options"),
        pytest.param("initContainers", ["nosuid"], True, id="init-container-mount-with-options"),
        pytest.param("ephemeralContainers", ["nodev"], True, id="ephemeral-container-mount-with-options"),
        pytest.param("containers", [], False, id="empty-options"),
        pytest.param("containers", None, False, id="no-options"),
    ],
)
def test_volume_bind_mount_options_infer_for_scheduling(kind: str, options: list[str] | None, expected: bool) -> None:
    """volumebindmountoptions: any volume mount of any container kind with bindMountOptions."""
    mount: JSON = {"name": "v", "mountPath": "/v"}
    if options is not None:
        mount["bindMountOptions"] = options
    spec: JSON = {"containers": [PLAIN]}
    spec.setdefault(kind, []).append({"name": "x", "image": "image", "volumeMounts": [mount]})
    assert (VOLUME_BIND_MOUNT_OPTIONS in infer_for_scheduling(spec)) is expected


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("DRANodeAllocatableResources", id="dranodeallocatableresources"),
        pytest.param("DRAOptionalNodeOperations", id="draoptionalnodeoperations"),
        pytest.param("ExtendWebSocketsToKubelet", id="extendwebsocketstokubelet"),
        pytest.param("InPlacePodLevelResourcesVerticalScaling", id="inplacepodresize-pod-level"),
        pytest.param("InPlacePodVerticalScalingInitContainers", id="inplacepodresize-init-containers"),
        pytest.param("InPlacePodVerticalScalingMemoryBackedVolumes", id="inplacepodresize-memory-volumes"),
    ],
)
def test_features_that_do_not_affect_scheduling(name: str) -> None:
    """TestInferForSchedulingAndUpdate / ...InferForScheduling: these infer nothing, whatever the pod."""
    feature = next(f for f in FEATURES if f.name == name)
    busy: JSON = {
        "containers": [CONTAINER_WITH_RULE],
        "resources": {"requests": {"cpu": "1"}},
        "volumes": [{"name": "m", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}}],
        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}],
    }
    assert feature.infer_for_scheduling({}) is False
    assert feature.infer_for_scheduling(busy) is False


def test_registry_is_upstreams() -> None:
    """features.AllFeatures: nine features, sorted by name, every MaxVersion nil (TestMaxVersion)."""
    assert [f.name for f in FEATURES] == sorted(f.name for f in FEATURES)
    assert len(FEATURES) == len({f.name for f in FEATURES}) == 9
    assert all(f.max_version is None for f in FEATURES)


def test_scheduler_version_is_the_release() -> None:
    """The MaxVersion windows compare against the release pyscheduler implements."""
    assert Version.parse(UPSTREAM_RELEASE) == SCHEDULER_VERSION
    assert SCHEDULER_VERSION.components == (1, 37, 2) and SCHEDULER_VERSION.semver


def _pod_level_resources(spec: Any) -> bool:
    return spec.get("resources") is not None


def _mock(max_version: str | None = None) -> tuple[DeclaredFeature, ...]:
    return (
        DeclaredFeature(
            "PodLevelResources",
            "pod-level-resources",
            _pod_level_resources,
            Version.parse(max_version) if max_version else None,
        ),
    )


WITH_RESOURCES: JSON = {"resources": {"requests": {"cpu": "500m"}}}


@pytest.mark.parametrize(
    ("registry", "spec", "target", "expected"),
    [
        pytest.param(_mock(), WITH_RESOURCES, "1.30.0", {"PodLevelResources"},
                     id="pod with feature, inferred during scheduling"),
        pytest.param(_mock(), {}, "1.30.0", set(), id="pod without feature"),
        pytest.param(_mock("1.30.0"), WITH_RESOURCES, "1.31.0", set(),
                     id="feature universally available, not inferred during create"),
        pytest.param(_mock("1.30.0"), WITH_RESOURCES, "0.0.0-alpha.2.39+049eafd34dfbd2", {"PodLevelResources"},
                     id="pre-release target version"),
        pytest.param(_mock("1.30.0"), WITH_RESOURCES, "1.40.0", set(), id="exceeds max version"),
        pytest.param(_mock("1.30.0"), WITH_RESOURCES, "1.30.0", {"PodLevelResources"},
                     id="max-version-is-inclusive"),
    ],
)
def test_infer_for_pod_scheduling(
    registry: tuple[DeclaredFeature, ...], spec: JSON, target: str, expected: set[str]
) -> None:
    """TestInferForPodScheduling: the registry's inference within each feature's MaxVersion window."""
    assert infer_for_pod_scheduling(spec, Version.parse(target), registry) == expected


def test_infer_for_pod_scheduling_needs_a_version() -> None:
    """"target version nil": an error, not an empty set."""
    with pytest.raises(ValueError, match="target version cannot be nil"):
        infer_for_pod_scheduling(WITH_RESOURCES, None, _mock())
    with pytest.raises(ValueError, match="target version cannot be nil"):
        required_features(frozenset({"PodLevelResources"}), None, _mock())


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        pytest.param("1.39.0-alpha.2.39+049eafd34dfbd2", "1.38.0", 1,
                     id="feature past max version - pre-release version"),
        pytest.param("1.38.0", "1.38.0", 0, id="equal"),
        pytest.param("v1.37.2", "1.37.10", -1, id="numeric-not-lexical"),
        pytest.param("1.37.0-alpha.1", "1.37.0", -1, id="pre-release-before-release"),
        pytest.param("1.37.0-alpha.10", "1.37.0-alpha.9", 1, id="numeric-pre-release-identifiers"),
        pytest.param("1.37.0-beta", "1.37.0-alpha.1", 1, id="alphanumeric-pre-release-identifiers"),
        pytest.param("1.37.0-alpha", "1.37.0-alpha.1", -1, id="fewer-pre-release-identifiers-first"),
        pytest.param("1.37", "1.37.0", 0, id="generic-equals-trailing-zero"),
        pytest.param("1.37", "1.37.0-alpha.1", 0, id="generic-ignores-pre-release"),
        pytest.param("1.38", "1.37.9", 1, id="generic-components"),
        pytest.param("1.37.0+build.5", "1.37.0", 0, id="build-metadata-ignored"),
    ],
)
def test_version_compare(a: str, b: str, expected: int) -> None:
    """apimachinery util/version Parse + compare, as the windows use it."""
    assert Version.parse(a).compare(Version.parse(b)) == expected
    assert Version.parse(b).compare(Version.parse(a)) == -expected


@pytest.mark.parametrize("text", [pytest.param("x1.2", id="not-a-version"), pytest.param("1", id="one-component"),
                                  pytest.param("01.2.3", id="zero-prefixed-major")])
def test_version_parse_errors(text: str) -> None:
    """Strings apimachinery refuses are refused."""
    with pytest.raises(ValueError):
        Version.parse(text)


def test_unsatisfied_lists_the_missing_features_sorted() -> None:
    """MatchNodeFeatureSet's UnsatisfiedRequirements: required minus declared, sorted."""
    assert unsatisfied({"B", "A", "C"}, {"C", "Other"}) == ["A", "B"]
    assert unsatisfied(set(), {"A"}) == []


def test_parse_pod_and_node_record_features_once() -> None:
    """parse_pod stores the inferred set, parse_node the declared one; the usual pod and node have none."""
    pod = make_pod("p").req(cpu="1").restart_rule().info()
    assert pod.inferred_features == {RESTART_ALL_CONTAINERS}
    assert make_pod("q").req(cpu="1").info().inferred_features == frozenset()
    node = make_node("n").declared_features("B", "A").info()
    assert node.declared_features == {"A", "B"}
    assert make_node("m").info().declared_features == frozenset()


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        pytest.param({"containers": [{"name": "c", "restartPolicyRules": "RestartAllContainers"}]},
                     "spec.containers[0].restartPolicyRules", id="rules-not-a-list"),
        pytest.param({"containers": [{"name": "c", "restartPolicyRules": ["RestartAllContainers"]}]},
                     "spec.containers[0].restartPolicyRules[0]", id="rule-not-an-object"),
        pytest.param({"containers": [{"name": "c"}], "initContainers": {"name": "i"}},
                     "spec.initContainers: expected a list", id="init-containers-not-a-list"),
        pytest.param({"containers": [{"name": "c", "volumeMounts": {"name": "v"}}]},
                     "spec.containers[0].volumeMounts", id="mounts-not-a-list"),
    ],
)
def test_malformed_fields_are_parse_errors_naming_the_field(spec: JSON, field: str) -> None:
    """A pod whose restart rules or mounts have the wrong shape cannot be understood: ParseError naming it."""
    with pytest.raises(ParseError, match=field.replace("[", r"\[").replace("]", r"\]")):
        parse_pod({"metadata": {"name": "p"}, "spec": spec})


def test_malformed_declared_features_are_parse_errors() -> None:
    """status.declaredFeatures must be a list of strings."""
    with pytest.raises(ParseError, match=r"status.declaredFeatures: expected a list"):
        parse_node({"metadata": {"name": "n"}, "status": {"declaredFeatures": "A"}})
    with pytest.raises(ParseError, match=r"status.declaredFeatures\[0\]: expected a string"):
        parse_node({"metadata": {"name": "n"}, "status": {"declaredFeatures": [1]}})


_containers = st.lists(
    st.fixed_dictionaries(
        {"name": st.just("c")},
        optional={
            "restartPolicyRules": st.lists(
                st.fixed_dictionaries({"action": st.sampled_from(["Restart", "RestartAllContainers", "Other"])}),
                max_size=2,
            ),
            "volumeMounts": st.lists(
                st.fixed_dictionaries(
                    {"name": st.just("v")}, optional={"bindMountOptions": st.lists(st.just("noexec"), max_size=1)}
                ),
                max_size=2,
            ),
        },
    ),
    min_size=1,
    max_size=3,
)


@settings(max_examples=200, deadline=None)
@given(
    containers=_containers,
    init=st.one_of(st.none(), _containers),
    ephemeral=st.one_of(st.none(), _containers),
    host_network=st.sampled_from([None, True, False]),
    host_users=st.sampled_from([None, True, False]),
)
def test_screen_never_changes_the_result(
    containers: list[JSON], init: list[JSON] | None, ephemeral: list[JSON] | None,
    host_network: bool | None, host_users: bool | None,
) -> None:
    """The cheap screen parse_pod runs first gives what asking every feature gives."""
    spec: JSON = {"containers": containers}
    for key, value in (("initContainers", init), ("ephemeralContainers", ephemeral), ("hostNetwork", host_network),
                       ("hostUsers", host_users)):
        if value is not None:
            spec[key] = value
    assert infer_for_scheduling(spec) == infer_for_scheduling(spec, tuple(FEATURES))
