"""Talking to a `pyscheduler run` process's port in the e2e tests: HTTPS by default, with a bearer token.

pyscheduler serves a self-signed certificate made at start, so these test clients skip verification (the
unit tests check the certificate itself). A 429 from the rate-limited debug calls can be retried: polling
helpers use `request(..., retry_429=True)`, which waits for Retry-After instead of reporting it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import aiohttp

REQUEST_TIMEOUT = 10.0
MAX_429_RETRIES = 10


async def request(
    method: str,
    url: str,
    *,
    token: str | None = None,
    data: str | None = None,
    retry_429: bool = False,
) -> tuple[int, str]:
    """One request to pyscheduler's port (TLS not verified); (status, body)."""
    headers: Mapping[str, str] = {"Authorization": f"Bearer {token}"} if token else {}
    for _ in range(MAX_429_RETRIES):
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT)) as session,
            session.request(method, url, data=data, headers=headers, ssl=False) as resp,
        ):
            body = await resp.text()
            if resp.status == 429 and retry_429:
                await asyncio.sleep(float(resp.headers.get("Retry-After", "1")))
                continue
            return resp.status, body
    return 429, body
