"""What the server itself says about a run: its session counters (GET /session_counters) and its metrics over
the run's verify rows (POST /aggregate_metrics). Either may be missing (an older server, a dead one): then None,
and the summary says why."""

from __future__ import annotations

from typing import Any

import httpx

__all__ = ["admission_wait_seconds", "aggregate_metrics", "session_counters", "TIMEOUT", "Unavailable"]

TIMEOUT = 30.0


class Unavailable(Exception):
    pass


def session_counters(url: str, timeout: float = TIMEOUT) -> dict[str, Any]:
    """{"counters": {...}, "held": {...}}."""
    try:
        response = httpx.get(url + "/session_counters", timeout=timeout)
    except httpx.HTTPError as error:
        raise Unavailable(f"GET /session_counters failed: {type(error).__name__}") from None
    if response.status_code != 200:
        raise Unavailable(f"GET /session_counters answered {response.status_code}")
    body = _json(response, "GET /session_counters")
    if not isinstance(body, dict) or not isinstance(body.get("counters"), dict):
        raise Unavailable("GET /session_counters sent no counters")
    return body


def admission_wait_seconds(url: str, timeout: float = TIMEOUT) -> float | None:
    """How long the server lets a request wait for a place before its work starts (GET /status), or None."""
    try:
        response = httpx.get(url + "/status", timeout=timeout)
        wait = response.json()["settings"]["admission_wait_seconds"]
    except (httpx.HTTPError, ValueError, KeyError, TypeError):
        return None
    return float(wait) if isinstance(wait, (int, float)) else None


def aggregate_metrics(url: str, verify_rows: list[dict[str, Any]], timeout: float = TIMEOUT) -> dict[str, Any]:
    try:
        response = httpx.post(url + "/aggregate_metrics", json={"verify_responses": verify_rows}, timeout=timeout)
    except httpx.HTTPError as error:
        raise Unavailable(f"POST /aggregate_metrics failed: {type(error).__name__}") from None
    if response.status_code != 200:
        raise Unavailable(f"POST /aggregate_metrics answered {response.status_code}")
    body = _json(response, "POST /aggregate_metrics")
    if not isinstance(body, dict):
        raise Unavailable("POST /aggregate_metrics sent no metrics object")
    return body


def _json(response: httpx.Response, what: str) -> Any:
    try:
        return response.json()
    except ValueError:
        raise Unavailable(f"{what} answered 200 with a body that is not JSON") from None
