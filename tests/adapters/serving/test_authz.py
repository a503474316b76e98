"""Delegated authorization without an API server: always-allow paths, system:masters, the SAR cache."""

from __future__ import annotations

import pytest

from scheduler.adapters.cluster.serving.authn import UserInfo
from scheduler.adapters.cluster.serving.authz import (
    DEFAULT_ALWAYS_ALLOW_PATHS,
    AuthorizationError,
    Decision,
    DelegatingAuthorizer,
    PathMatcher,
    is_normalized,
    parse_subject_access_review,
    subject_access_review,
)

SCRAPER = UserInfo("system:serviceaccount:mon:prom", "uid-1", ("system:serviceaccounts", "system:authenticated"))


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("paths", "path", "allowed"),
    [
        pytest.param(DEFAULT_ALWAYS_ALLOW_PATHS, "/healthz", True, id="default-healthz"),
        pytest.param(DEFAULT_ALWAYS_ALLOW_PATHS, "/readyz", True, id="default-readyz"),
        pytest.param(DEFAULT_ALWAYS_ALLOW_PATHS, "/livez", True, id="default-livez"),
        pytest.param(DEFAULT_ALWAYS_ALLOW_PATHS, "/metrics", False, id="default-metrics-closed"),
        pytest.param(DEFAULT_ALWAYS_ALLOW_PATHS, "/configz", False, id="default-configz-closed"),
        pytest.param(DEFAULT_ALWAYS_ALLOW_PATHS, "/debug/cache", False, id="default-debug-closed"),
        pytest.param(DEFAULT_ALWAYS_ALLOW_PATHS, "/healthz/extra", False, id="exact-not-prefix"),
        pytest.param(DEFAULT_ALWAYS_ALLOW_PATHS, "/healthzz", False, id="exact-not-longer"),
        pytest.param(("/healthz*",), "/healthz/ping", True, id="prefix"),
        pytest.param(("/healthz*",), "/healthz/../debug/cache", False, id="dot-dot-never"),
        pytest.param(("/healthz",), "//healthz", False, id="double-slash-never"),
        pytest.param((), "/healthz", False, id="empty-list-opens-nothing"),
        pytest.param(("/*",), "/metrics", True, id="everything"),
    ],
)
def test_always_allow_paths(paths: tuple[str, ...], path: str, allowed: bool) -> None:
    assert PathMatcher(paths).matches(path) is allowed


@pytest.mark.parametrize(
    ("path", "fragment"),
    [
        pytest.param("healthz", "must start with /", id="no-slash"),
        pytest.param("/he*lthz", "only a trailing *", id="inner-star"),
        pytest.param("/a*/b*", "only a trailing *", id="two-stars"),
        pytest.param("", "must start with /", id="empty-entry"),
        pytest.param("/a b", "plain path", id="space"),
        pytest.param("/metrics?x=1", "plain path", id="query"),
    ],
)
def test_malformed_always_allow_paths(path: str, fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment.replace("*", r"\*")):
        PathMatcher([path])


@pytest.mark.parametrize(
    ("path", "normal"),
    [
        ("/", True),
        ("/metrics", True),
        ("/metrics/", True),
        ("/debug/explain/ns/pod", True),
        ("//metrics", False),
        ("/debug//cache", False),
        ("/./metrics", False),
        ("/debug/../metrics", False),
        ("metrics", False),
    ],
)
def test_is_normalized(path: str, normal: bool) -> None:
    assert is_normalized(path) is normal


def test_subject_access_review_body() -> None:
    """nonResourceAttributes{path, verb}, the user with uid, groups and extra, as upstream sends it."""
    user = UserInfo("u", "id-7", ("g1", "g2"), (("scopes", ("a", "b")),))
    assert subject_access_review(user, "/debug/flags/v", "put") == {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": "u",
            "uid": "id-7",
            "groups": ["g1", "g2"],
            "extra": {"scopes": ["a", "b"]},
            "nonResourceAttributes": {"path": "/debug/flags/v", "verb": "put"},
        },
    }
    assert "uid" not in subject_access_review(UserInfo("u"), "/metrics", "get")["spec"]


def test_parse_subject_access_review() -> None:
    assert parse_subject_access_review({"status": {"allowed": True, "reason": "RBAC: allowed by X"}}) == Decision(
        True, "RBAC: allowed by X"
    )
    assert parse_subject_access_review({"status": {"allowed": False}}) == Decision(False)
    assert parse_subject_access_review({}) == Decision(False)


class Reviews:
    """A SubjectAccessReviewer standing in for the API server: (user, path, verb) -> allowed."""

    def __init__(self, grants: set[tuple[str, str, str]]) -> None:
        self.grants = grants
        self.calls: list[tuple[str, str, str]] = []
        self.fail = False

    async def __call__(self, user: UserInfo, path: str, verb: str) -> Decision:
        self.calls.append((user.name, path, verb))
        if self.fail:
            raise AuthorizationError("SubjectAccessReview failed: 0 connection refused")
        return Decision((user.name, path, verb) in self.grants)


async def test_system_masters_and_always_allow_paths_need_no_review() -> None:
    reviews = Reviews(set())
    authz = DelegatingAuthorizer(reviews, PathMatcher(DEFAULT_ALWAYS_ALLOW_PATHS), clock=Clock())
    admin = UserInfo("admin", groups=("system:masters",))
    assert (await authz.authorize(admin, "/debug/cache", "get")).allowed
    assert (await authz.authorize(admin, "/debug/flags/v", "put")).allowed
    assert (await authz.authorize(SCRAPER, "/readyz", "get")).allowed
    assert reviews.calls == []


async def test_allowed_and_denied_answers_are_cached_with_their_own_ttls() -> None:
    clock = Clock()
    reviews = Reviews({(SCRAPER.name, "/metrics", "get")})
    authz = DelegatingAuthorizer(reviews, PathMatcher(()), allowed_ttl=10.0, denied_ttl=3.0, clock=clock)

    async def ask(path: str) -> bool:
        return (await authz.authorize(SCRAPER, path, "get")).allowed

    assert await ask("/metrics") and not await ask("/debug/cache")
    assert await ask("/metrics") and not await ask("/debug/cache")
    assert len(reviews.calls) == 2
    clock.now += 3.0  # the denial expired, the permission did not
    assert await ask("/metrics") and not await ask("/debug/cache")
    assert reviews.calls[2:] == [(SCRAPER.name, "/debug/cache", "get")]
    clock.now += 7.0
    assert await ask("/metrics")
    assert reviews.calls[3:] == [(SCRAPER.name, "/metrics", "get")]


async def test_verb_and_user_are_part_of_the_cache_key() -> None:
    reviews = Reviews({(SCRAPER.name, "/debug/flags/v", "get")})
    authz = DelegatingAuthorizer(reviews, PathMatcher(()), clock=Clock())
    assert (await authz.authorize(SCRAPER, "/debug/flags/v", "get")).allowed
    assert not (await authz.authorize(SCRAPER, "/debug/flags/v", "put")).allowed
    other = UserInfo("system:serviceaccount:mon:other")
    assert not (await authz.authorize(other, "/debug/flags/v", "get")).allowed
    assert len(reviews.calls) == 3


async def test_a_failed_review_raises_and_is_not_cached() -> None:
    reviews = Reviews({(SCRAPER.name, "/metrics", "get")})
    authz = DelegatingAuthorizer(reviews, PathMatcher(()), clock=Clock())
    reviews.fail = True
    with pytest.raises(AuthorizationError, match="connection refused"):
        await authz.authorize(SCRAPER, "/metrics", "get")
    reviews.fail = False
    assert (await authz.authorize(SCRAPER, "/metrics", "get")).allowed


async def test_the_decision_cache_is_bounded() -> None:
    authz = DelegatingAuthorizer(Reviews(set()), PathMatcher(()), max_entries=4, clock=Clock())
    for i in range(20):
        await authz.authorize(SCRAPER, f"/debug/explain/ns/p{i}", "get")
    assert len(authz.cache) == 4


async def test_without_a_reviewer_everything_not_skipped_is_forbidden() -> None:
    authz = DelegatingAuthorizer(None, PathMatcher(DEFAULT_ALWAYS_ALLOW_PATHS))
    assert not (await authz.authorize(SCRAPER, "/metrics", "get")).allowed
    assert (await authz.authorize(SCRAPER, "/livez", "get")).allowed
