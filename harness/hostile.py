"""Helpers of the hostile-input suites: forged session cookies, and the filing URLs of the embedded corpus."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import httpx
from itsdangerous import TimestampSigner

from finsec.corpus.generate import filings

IN_PROCESS_SECRET = "in-process-cookie-secret-for-the-tests"  # harness/inprocess.py's apps sign with it


def signed_cookie(claims: dict[str, Any], secret: str = IN_PROCESS_SECRET, age_seconds: float = 0.0) -> str:
    """A cookie value in Starlette's format (base64(json).timestamp.signature), signed `age_seconds` ago."""

    class Signer(TimestampSigner):
        def get_timestamp(self) -> int:
            return int(time.time() - age_seconds)

    return Signer(secret).sign(base64.b64encode(json.dumps(claims).encode())).decode()


def with_claims(cookie: str, claims: dict[str, Any]) -> str:
    """`cookie` with its payload replaced by `claims` and its old timestamp and signature kept."""
    _, timestamp, signature = cookie.rsplit(".", 2)
    return ".".join((base64.b64encode(json.dumps(claims).encode()).decode(), timestamp, signature))


def claims_of(cookie: str) -> dict[str, Any]:
    payload = cookie.rsplit(".", 2)[0]
    return json.loads(base64.b64decode(payload + "=" * (-len(payload) % 4)))


def cookie_of(client: httpx.AsyncClient, name: str) -> str:
    value = client.cookies.get(name)
    assert value, f"the client holds no {name} cookie"
    return value


def filing_url(ticker: str, form: str = "10-K") -> str:
    """The first filing of `form` by `ticker` in the embedded corpus."""
    filing = next(f for f in filings() if f.issuer.ticker == ticker and f.form == form)
    return f"https://www.sec.gov/{filing.url_path}"


def company_name(ticker: str) -> str:
    return next(f.issuer for f in filings() if f.issuer.ticker == ticker).name
