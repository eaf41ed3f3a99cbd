"""A run's JSONL: a first line with the run's options (`{"run": {...}}`), then one episode a row: what was sent
(every request with its status and latency), what the policy answered, what /verify said (reward; masked and
why), and, for an episode that did not complete, why not.

`outcome` is "scored" (verify graded it), "masked" (verify answered with mask_sample: the reward is no
measurement, `failure_kind` says why) or "failed" (no verdict: `failure.kind` is "transport" when the server
did not reply, "http" for an unexpected status on a lifecycle route, "protocol" for a reply that breaks the
contract, "model" when the LLM endpoint failed, "policy" for an error in the policy itself, "worker" when the Ray
worker that ran it died)."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any, TextIO

from finsec_client.client import Call

__all__ = ["EpisodeRecord", "Failure", "read_records", "read_run", "RecordWriter", "RUN"]


@dataclass
class Failure:
    kind: str  # "transport", "http", "protocol", "model", "policy" or "worker"
    route: str | None
    detail: str


@dataclass
class EpisodeRecord:
    episode: int
    driver: str
    policy: str
    task_index: int
    repeat: int
    taskset: str
    task_id: str
    question: str
    expected_answer: str
    worker: int | None = None
    group: int | None = None  # with `-r K`: its GRPO group (K plays of one task), and K
    group_size: int | None = None
    rollout_id: str | None = None
    resources_session_id: str | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    final_answer: str | None = None
    reward: float | None = None
    masked: bool = False
    failure_kind: str | None = None
    failure_reason: str | None = None
    judge_rating: int | None = None
    judge_text: str | None = None
    # What the verify row said graded it, for `finsec reverify`: the digests of the texts the session held, the
    # grader's identity and version, and the task's canonical answer (null in files written before rows said so)
    documents: list[str] | None = None
    grader: dict[str, Any] | None = None
    canonical_answer: Any = None
    usage: dict[str, int] | None = None
    closed: bool | None = None  # environment-server: did /close_session answer 200
    failure: Failure | None = None
    started_at: float = 0.0
    seconds: float = 0.0

    @property
    def outcome(self) -> str:
        if self.failure is not None:
            return "failed"
        return "masked" if self.masked else "scored"

    def add_calls(self, calls: list[Call]) -> None:
        self.calls = [c.to_json() for c in calls]

    def to_json(self) -> dict[str, Any]:
        row = asdict(self)
        row["outcome"] = self.outcome
        return row

    @classmethod
    def from_json(cls, row: dict[str, Any]) -> EpisodeRecord:
        row = {k: v for k, v in row.items() if k != "outcome"}
        failure = row.pop("failure", None)
        reward = row.get("reward")
        if reward is not None and not (isinstance(reward, int | float) and math.isfinite(reward)):
            raise ValueError(f"episode {row.get('episode')}: reward {reward!r} is not a finite number")
        return cls(**row, failure=Failure(**failure) if failure else None)

    def verify_row(self) -> dict[str, Any] | None:
        """The verify response, as much of it as /aggregate_metrics reads (the trajectory is left out)."""
        if self.reward is None:
            return None
        row: dict[str, Any] = {
            "reward": self.reward,
            "mask_sample": self.masked,
            "failure_kind": self.failure_kind,
            "_ng_task_index": self.task_index,
            "_ng_rollout_index": self.repeat,
        }
        if self.judge_rating is not None:
            row["judge_rating"] = self.judge_rating
        if self.usage:
            row["response"] = {"usage": self.usage}
        return row


RUN = "run"  # the key of a file's first line: the options of the run that wrote it


class RecordWriter:
    """Appends each record as it arrives, flushed, so a run cut short keeps what it did."""

    def __init__(self, stream: TextIO):
        self._stream = stream

    def write_run(self, options: dict[str, Any]) -> None:
        """The file's first line: what `finsec rollouts --resume FILE` needs to go on with the run."""
        self._line({RUN: options})

    def write(self, record: EpisodeRecord) -> None:
        self._line(record.to_json())

    def _line(self, row: dict[str, Any]) -> None:
        text = json.dumps(row, ensure_ascii=False)
        try:
            text.encode()
        except UnicodeEncodeError:  # a lone surrogate (a model's "\ud800"): UTF-8 has none, JSON's escape does
            text = json.dumps(row)
        self._stream.write(text + "\n")
        self._stream.flush()


def read_records(stream: TextIO) -> list[EpisodeRecord]:
    return [EpisodeRecord.from_json(row) for row in _rows(stream) if RUN not in row]


def read_run(stream: TextIO) -> dict[str, Any] | None:
    """The options the file's run was played with, when its first line records them."""
    first = next(_rows(stream), None)
    return first[RUN] if first is not None and RUN in first else None


def _rows(stream: TextIO):
    return (json.loads(line) for line in stream if line.strip())
