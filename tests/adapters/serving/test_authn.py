"""Delegated authentication without an API server: header parsing, certificates, the TokenReview cache."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.adapters.cluster.serving.authn import (
    AuthenticationError,
    DelegatingAuthenticator,
    TokenReviewResult,
    UserInfo,
    bearer_token,
    parse_token_review,
    user_from_certificate,
)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("header", "token"),
    [
        pytest.param("Bearer abc", "abc", id="bearer"),
        pytest.param("bearer abc", "abc", id="scheme-case-insensitive"),
        pytest.param("BEARER abc", "abc", id="scheme-upper"),
        pytest.param("  Bearer abc  ", "abc", id="surrounding-space"),
        pytest.param("Bearer abc extra", "abc", id="third-field-ignored"),
        pytest.param("Bearer  abc", None, id="empty-token-two-spaces"),
        pytest.param("Bearer", None, id="no-token"),
        pytest.param("Bearer ", None, id="blank-token"),
        pytest.param("Basic dXNlcjpwdw==", None, id="other-scheme"),
        pytest.param("", None, id="empty"),
        pytest.param(None, None, id="absent"),
        pytest.param("Bearerabc", None, id="no-separator"),
    ],
)
def test_bearer_token_parsing(header: str | None, token: str | None) -> None:
    """Parsed like upstream's bearertoken authenticator."""
    assert bearer_token(header) == token


@pytest.mark.parametrize(
    ("peercert", "user"),
    [
        pytest.param(
            {"subject": ((("commonName", "jane"),), (("organizationName", "ops"),), (("organizationName", "dev"),))},
            UserInfo("jane", groups=("ops", "dev")),
            id="cn-and-orgs",
        ),
        pytest.param({"subject": ((("commonName", "bot"),),)}, UserInfo("bot"), id="cn-only"),
        pytest.param({"subject": ((("organizationName", "ops"),),)}, None, id="no-cn"),
        pytest.param({}, None, id="not-verified"),
        pytest.param(None, None, id="no-certificate"),
    ],
)
def test_user_from_certificate(peercert: dict[str, Any] | None, user: UserInfo | None) -> None:
    assert user_from_certificate(peercert) == user


def test_parse_token_review() -> None:
    answer = {
        "status": {
            "authenticated": True,
            "user": {
                "username": "system:serviceaccount:mon:prom",
                "uid": "u-1",
                "groups": ["system:serviceaccounts", "system:authenticated"],
                "extra": {"authentication.kubernetes.io/pod-name": ["prom-0"]},
            },
        }
    }
    result = parse_token_review(answer)
    assert result.user == UserInfo(
        "system:serviceaccount:mon:prom",
        "u-1",
        ("system:serviceaccounts", "system:authenticated"),
        (("authentication.kubernetes.io/pod-name", ("prom-0",)),),
    )
    assert parse_token_review({"status": {"authenticated": False, "error": "token expired"}}) == TokenReviewResult(
        None, "token expired"
    )
    assert parse_token_review({}).user is None
    assert parse_token_review({"status": {"authenticated": True, "user": {}}}).user is None


class Reviews:
    """A TokenReviewer standing in for the API server: known tokens, a call count, optional failure."""

    def __init__(self, users: dict[str, UserInfo]) -> None:
        self.users = users
        self.calls: list[str] = []
        self.fail = False

    async def __call__(self, token: str) -> TokenReviewResult:
        self.calls.append(token)
        if self.fail:
            raise AuthenticationError("TokenReview failed: 403 forbidden")
        user = self.users.get(token)
        return TokenReviewResult(user, "" if user else "invalid bearer token")


async def test_tokens_are_reviewed_once_per_ttl_and_rejections_cached_too() -> None:
    """Authenticated and rejected answers are both remembered for the TTL (like upstream's token cache)."""
    clock = Clock()
    reviews = Reviews({"good": UserInfo("alice")})
    authn = DelegatingAuthenticator(reviews, cache_ttl=10.0, clock=clock)
    assert await authn.authenticate("Bearer good") == UserInfo("alice")
    assert await authn.authenticate("Bearer good") == UserInfo("alice")
    assert await authn.authenticate("Bearer bad") is None
    assert await authn.authenticate("Bearer bad") is None
    assert reviews.calls == ["good", "bad"]
    clock.now += 10.0
    assert await authn.authenticate("Bearer good") == UserInfo("alice")
    assert reviews.calls == ["good", "bad", "good"]


async def test_a_failed_review_raises_and_is_not_cached() -> None:
    reviews = Reviews({"good": UserInfo("alice")})
    authn = DelegatingAuthenticator(reviews, clock=Clock())
    reviews.fail = True
    with pytest.raises(AuthenticationError, match="403"):
        await authn.authenticate("Bearer good")
    reviews.fail = False
    assert await authn.authenticate("Bearer good") == UserInfo("alice")
    assert reviews.calls == ["good", "good"]


async def test_the_cache_never_holds_raw_tokens() -> None:
    authn = DelegatingAuthenticator(Reviews({"s3cr3t-token": UserInfo("alice")}), clock=Clock())
    await authn.authenticate("Bearer s3cr3t-token")
    keys = list(authn.cache._entries)
    assert len(keys) == 1 and "s3cr3t" not in keys[0] and len(keys[0]) == 64


async def test_the_token_cache_is_bounded() -> None:
    reviews = Reviews({})
    authn = DelegatingAuthenticator(reviews, max_entries=8, clock=Clock())
    for i in range(50):
        await authn.authenticate(f"Bearer t{i}")
    assert len(authn.cache) == 8


async def test_a_certificate_wins_over_a_token_and_no_credential_is_none() -> None:
    reviews = Reviews({"good": UserInfo("alice")})
    authn = DelegatingAuthenticator(reviews, clock=Clock())
    cert = {"subject": ((("commonName", "bob"),), (("organizationName", "ops"),))}
    assert await authn.authenticate("Bearer good", cert) == UserInfo("bob", groups=("ops",))
    assert await authn.authenticate(None) is None
    assert await authn.authenticate("Basic abc") is None
    assert reviews.calls == []


async def test_without_a_reviewer_tokens_are_not_accepted() -> None:
    assert await DelegatingAuthenticator(None).authenticate("Bearer anything") is None
