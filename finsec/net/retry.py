"""The one retry policy of the server's outbound calls (live EDGAR, sec-api.io, web search, the LLM judge), on
`stamina`: jittered exponential backoff (or the explicit waits a setting gives), a server's Retry-After
honoured up to the policy's longest wait (so a tool still answers within its attempts: a Retry-After of an
hour is not waited out), a total deadline, and every retry counted (`finsec_retries`, by target and reason). The rollout
drivers use the same library (finsec_client/client.py).

An attempt that may succeed if sent again raises `TryAgain`; anything else it raises, or returns, ends the
calls at once. When the attempts or the deadline are spent, the last `TryAgain` is raised to the caller, which
turns it into its own answer ("no data", a tool's error text, a failed judgement).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import stamina

from finsec.metrics import NO_METRICS, Metrics

__all__ = ["RetryPolicy", "T", "TryAgain", "with_retries"]

T = TypeVar("T")
log = logging.getLogger(__name__)
# stamina's default hook logs a bare "stamina.retry_scheduled" for every retry, of every caller; the retries here
# say what is retried and why (below), and the rollout client records its own per call.
stamina.instrumentation.set_on_retry_hooks([])


class TryAgain(Exception):
    """This attempt failed in a way another may not: `reason` (an HTTP status or "transport") labels the retry;
    `retry_after` is the server's hint, in seconds."""

    def __init__(self, reason: int | str, detail: str = "", retry_after: float | None = None):
        super().__init__(detail or str(reason))
        self.reason, self.detail, self.retry_after = reason, detail or str(reason), retry_after


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 3
    first_wait: float = 1.0  # doubled after each attempt, up to longest_wait, plus up to `jitter` at random
    longest_wait: float = 30.0
    jitter: float = 0.5
    deadline: float = 300.0  # for all attempts and waits together
    waits: tuple[float, ...] | None = None  # exact waits between attempts instead (a setting that names them)

    @classmethod
    def exact(cls, waits: tuple[float, ...] | list[float], deadline: float = 300.0) -> RetryPolicy:
        """One attempt more than `waits`, waiting exactly those seconds (no jitter), as a setting promises."""
        return cls(attempts=len(waits) + 1, jitter=0.0, waits=tuple(waits), deadline=deadline)


async def with_retries(
    policy: RetryPolicy, target: str, attempt: Callable[[], Awaitable[T]], metrics: Metrics = NO_METRICS
) -> T:
    """`attempt()` until it returns or raises anything but TryAgain; the last TryAgain when the policy is spent."""
    began, retries = time.monotonic(), 0

    def again(error: BaseException) -> bool | float:
        nonlocal retries
        if not isinstance(error, TryAgain) or retries + 1 >= policy.attempts:
            return False
        left = policy.deadline - (time.monotonic() - began)
        if left <= 0:
            return False  # no time for another: the last answer stands
        if error.retry_after is not None:
            wait: bool | float = min(error.retry_after, policy.longest_wait, left)
        elif policy.waits is not None:
            wait = min(policy.waits[min(retries, len(policy.waits) - 1)], left)
        else:
            wait = True  # stamina's jittered exponential backoff
        retries += 1
        metrics.retry(target, error.reason)
        after = "after a backoff" if wait is True else f"in {float(wait):.1f} s"
        log.warning(
            "%s: attempt %d of %d failed (%s); trying again %s", target, retries, policy.attempts, error.detail, after
        )
        return wait

    async for trying in stamina.retry_context(
        on=again,
        attempts=policy.attempts,
        timeout=policy.deadline,
        wait_initial=policy.first_wait,
        wait_max=policy.longest_wait,
        wait_jitter=policy.jitter,
    ):
        with trying:
            return await attempt()
    raise AssertionError("stamina ended the retries without an outcome")  # pragma: no cover
