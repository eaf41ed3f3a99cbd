"""The LLM judge (contract §D.4, Decision 11): a rubric prompt, up to three attempts, the last [[N]] rates."""

from __future__ import annotations

import asyncio
import copy
import math
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import httpx

from finsec.grading.grader import Grade, GradingFailed
from finsec.grading.identity import GRADING_VERSION, digest_of
from finsec.llm.endpoint import ModelClient, ModelEndpoint, ModelHTTPError, ModelReplyError
from finsec.llm.templates import STOCK_DIR, load_prompt
from finsec.metrics import NO_METRICS, Metrics
from finsec.net.retry import RetryPolicy, TryAgain, with_retries

__all__ = [
    "judge_prompt",
    "judge_text",
    "JudgeError",
    "LlmJudge",
    "neutralized",
    "parse_rating",
    "reward_for",
    "RewardMode",
    "STOCK_TEMPLATE",
]

RewardMode = Literal["binary", "scaled"]

STOCK_TEMPLATE = STOCK_DIR / "judge.yaml"
_VERDICT = re.compile(r"\[\[(\d+)\]\]")
_SCALED = {0: 0.0, 1: 0.5, 2: 1.0}


def neutralized(answer: str) -> str:
    """`[[2]]` -> `[2]`: a candidate cannot plant a verdict for the judge to quote back as its own."""
    return _VERDICT.sub(r"[\1]", answer)


def judge_prompt(template: str, question: str, expected_answer: str, answer: str) -> str:
    """Plain replacement, not str.format, so braces in the rubric or the texts are inert."""
    return (
        template.replace("{question}", question)
        .replace("{expected_answer}", expected_answer)
        .replace("{generated_answer}", neutralized(answer))
    )


def judge_text(reply: dict[str, Any]) -> str | None:
    """The text of the last content part of the last output item, when that item is a message."""
    output = reply.get("output")
    last = output[-1] if isinstance(output, list) and output else None
    if not isinstance(last, dict) or last.get("type") != "message":
        return None
    content = last.get("content")
    part = content[-1] if isinstance(content, list) and content else None
    text = part.get("text") if isinstance(part, dict) else None
    return text if isinstance(text, str) else None


def parse_rating(text: str | None) -> int | None:
    """The last [[N]]: the rubric asks for the verdict at the end, after any quoting of the candidate."""
    verdicts = _VERDICT.findall(text or "")
    return int(verdicts[-1]) if verdicts else None


def reward_for(rating: int | None, mode: RewardMode) -> float:
    if mode == "scaled":
        return _SCALED.get(rating, 0.0) if rating is not None else 0.0
    return 1.0 if rating == 2 else 0.0


class JudgeError(Exception):
    """One attempt produced no reply to read: HTTP status, transport, timeout, or a body that is not JSON."""


class LlmJudge:
    """A Grader (grading/grader.py) backed by an OpenAI-compatible model.

    `retry_delays` are the sleeps between attempts; there is one more attempt than delays (stock: 3 attempts).
    """

    def __init__(
        self,
        endpoint: ModelEndpoint,
        *,
        prompt_template: str | None = None,
        prompt_template_fpath: str | Path = STOCK_TEMPLATE,
        responses_create_params: dict[str, Any] | None = None,
        reward_mode: RewardMode = "binary",
        call_timeout: float | None = 60.0,
        retry_delays: Sequence[float] = (1.0, 2.0),
        metrics: Metrics = NO_METRICS,
    ) -> None:
        self.template = load_prompt(prompt_template, prompt_template_fpath, "judge_prompt_template")
        self.create_params = copy.deepcopy(responses_create_params) if responses_create_params else {"input": []}
        self.reward_mode = reward_mode
        self.call_timeout = call_timeout
        self.retry_delays = tuple(retry_delays)
        # exactly these waits: the verify lease is sized on them (Settings.judge_budget_seconds)
        self.retries = RetryPolicy.exact(self.retry_delays, deadline=math.inf)
        self.metrics = metrics
        self.client = ModelClient(endpoint)
        self._identity = {
            "name": "llm_judge",
            "version": GRADING_VERSION,
            "model": self.create_params.get("model") or endpoint.model,  # the create-params' name wins (§D.4)
            "prompt": digest_of(self.template),
            "params": digest_of(self.create_params),
            "reward_mode": reward_mode,
        }

    def identity(self) -> dict[str, Any]:
        """What a verify row names as its grader (identity.py): the judge's code, model, prompt and reward mode."""
        return dict(self._identity)

    def request(self, question: str, expected_answer: str, answer: str) -> dict[str, Any]:
        body = copy.deepcopy(self.create_params)
        body["input"] = [{"role": "user", "content": judge_prompt(self.template, question, expected_answer, answer)}]
        return body

    async def grade(self, question: str, expected_answer: str, answer: str) -> Grade:
        body = self.request(question, expected_answer, answer)
        errors: list[str] = []
        replies: list[str | None] = []  # None: a reply with no message text

        async def attempt() -> Grade:
            try:
                reply = await self._call(body)
            except JudgeError as error:
                errors.append(f"attempt {len(errors) + len(replies) + 1}: {error}")
                raise TryAgain("error", str(error)) from None
            replies.append(judge_text(reply))
            # A reply cut short may end inside the rubric's own examples: its tags are not a verdict.
            rating = None if reply.get("incomplete_details") else parse_rating(replies[-1])
            if rating is None:
                raise TryAgain("unparseable")
            return Grade(reward_for(rating, self.reward_mode), judge_rating=rating, judge_text=replies[-1])

        try:
            return await with_retries(self.retries, "judge", attempt, self.metrics)
        except TryAgain:
            pass
        if not replies:  # never measured: the verify route masks the row as judge_failed
            raise GradingFailed(f"judge unreachable after {len(errors)} attempts: " + "; ".join(errors))
        # The judge answered but never gave a verdict: a real (zero) measurement, flagged (Decision 11).
        return Grade(0.0, judge_rating=None, judge_text=replies[-1], failure_kind="judge_unparseable")

    async def _call(self, body: dict[str, Any]) -> dict[str, Any]:
        began, ok = time.monotonic(), False
        try:
            reply = await asyncio.wait_for(self.client.create(body), self.call_timeout)
            ok = True
            return reply
        except TimeoutError:
            raise JudgeError(f"timed out after {self.call_timeout} s") from None
        except (ModelHTTPError, ModelReplyError) as error:
            raise JudgeError(str(error)) from None
        except httpx.HTTPError as error:
            raise JudgeError(f"{type(error).__name__}: {error}") from None
        except ValueError as error:  # the body could not be encoded (UnicodeEncodeError, NaN): a masked row, not a 500
            raise JudgeError(f"the judge request could not be sent: {type(error).__name__}: {error}") from None
        finally:
            self.metrics.model_call("judge", ok, time.monotonic() - began)

    async def aclose(self) -> None:
        await self.client.aclose()
