"""Re-grade a run's episodes with the grader this code holds, without a server (`finsec reverify RUN.jsonl`).

Each scored episode's final answer is graded again as /verify's deterministic path grades it: the empty-answer
gate, then `DeterministicGrader.grade_sync` with the run's `max_answer_chars` (the one its verify rows name, or
the one given). An episode moved when its reward did; the report says, for each, the rewards, the grader versions
and the why of each grade (judge_text, failure_kind). Not re-graded, and counted as skipped:
- masked and failed episodes: their reward is no measurement;
- episodes without a final answer string: the record does not keep what was graded;
- answers refused as ungrounded (`require_grounded_answer`): grounding reads the session's texts, which a run file
  does not hold.
Rows an LLM judge graded are re-graded by the deterministic grader like the rest; their grader names say so."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from finsec.grading.answer import hard_gate
from finsec.grading.deterministic import MAX_ANSWER_CHARS, DeterministicGrader
from finsec.grading.failure_kinds import gym_failure_kind
from finsec.grading.grader import Grade
from finsec.grading.grounding import UNGROUNDED
from finsec_client.records import EpisodeRecord

__all__ = ["SKIPS", "Moved", "Report", "grader_for", "regrade", "reverify", "shown_grader", "skip_reason"]

SKIPS = ("masked", "failed", "no_answer", "ungrounded")
_REFUSED = gym_failure_kind(UNGROUNDED)


@dataclass(frozen=True)
class Moved:
    """An episode whose reward the current grader changes."""

    episode: int
    task_id: str
    old_reward: float
    new_reward: float
    old_grader: dict[str, Any] | None  # None: written before verify rows named their grader
    new_grader: dict[str, Any]
    old_failure_kind: str | None
    new_failure_kind: str | None
    old_judge_text: str | None
    new_judge_text: str | None


@dataclass
class Report:
    moved: list[Moved] = field(default_factory=list)
    regraded: int = 0
    skipped: Counter[str] = field(default_factory=Counter)

    @property
    def up(self) -> int:
        return sum(m.new_reward > m.old_reward for m in self.moved)

    @property
    def down(self) -> int:
        return len(self.moved) - self.up

    @property
    def unchanged(self) -> int:
        return self.regraded - len(self.moved)

    def summary(self) -> dict[str, Any]:
        return {
            "regraded": self.regraded,
            "moved": len(self.moved),
            "up": self.up,
            "down": self.down,
            "unchanged": self.unchanged,
            "skipped": {kind: self.skipped[kind] for kind in SKIPS},
        }

    def to_json(self) -> dict[str, Any]:
        return {"moved": [asdict(m) for m in self.moved], "summary": self.summary()}

    def render(self) -> str:
        lines = []
        for m in self.moved:
            lines.append(
                f"episode {m.episode}  task {m.task_id}  {m.old_reward:g} -> {m.new_reward:g}  "
                f"{shown_grader(m.old_grader, m.new_grader)} -> {shown_grader(m.new_grader, m.old_grader)}"
            )
            lines.append(f"  now: {_why(m.new_failure_kind, m.new_judge_text)}")
            lines.append(f"  was: {_why(m.old_failure_kind, m.old_judge_text)}")
        skipped = ", ".join(f"{self.skipped[kind]} {kind.replace('_', ' ')}" for kind in SKIPS if self.skipped[kind])
        lines.append(
            f"{self.regraded} episodes re-graded: {len(self.moved)} moved ({self.up} up, {self.down} down), "
            f"{self.unchanged} unchanged; {sum(self.skipped.values())} skipped" + (f" ({skipped})" if skipped else "")
        )
        return "\n".join(lines)


def shown_grader(identity: dict[str, Any] | None, other: dict[str, Any] | None = None) -> str:
    """Name and version, and the settings both name in which it differs from `other`."""
    if not identity:
        return "unrecorded"
    others = other or {}
    differ = [
        f"{k} {identity[k]}"
        for k in sorted(set(identity) & set(others) - {"name", "version"})
        if identity[k] != others[k]
    ]
    return f"{identity.get('name', '?')} {identity.get('version', '?')}" + (f" ({', '.join(differ)})" if differ else "")


def _why(failure_kind: str | None, judge_text: str | None, limit: int = 200) -> str:
    text = " ".join((judge_text or "").split())
    text = text if len(text) <= limit else text[: limit - 3] + "..."
    return f"[{failure_kind}] {text}" if failure_kind else (text or "(no explanation)")


def grader_for(record: EpisodeRecord, max_answer_chars: int | None = None) -> DeterministicGrader:
    """The current grader with the episode's own setting: the one given, else the one its verify row names."""
    if max_answer_chars is None:
        named = (record.grader or {}).get("max_answer_chars")
        max_answer_chars = named if isinstance(named, int) and not isinstance(named, bool) else MAX_ANSWER_CHARS
    return DeterministicGrader(max_answer_chars=max_answer_chars)


def regrade(record: EpisodeRecord, grader: DeterministicGrader) -> Grade:
    """The episode's answer graded as /verify's deterministic path grades it."""
    answer = record.final_answer or ""
    return hard_gate(answer) or grader.grade_sync(record.question, record.expected_answer, answer)


def skip_reason(record: EpisodeRecord) -> str | None:
    if record.outcome != "scored":
        return record.outcome  # "masked" or "failed"
    if not isinstance(record.final_answer, str) or record.reward is None:
        return "no_answer"
    if record.failure_kind == _REFUSED:
        return "ungrounded"
    return None


def reverify(records: list[EpisodeRecord], *, max_answer_chars: int | None = None) -> Report:
    report = Report()
    for record in sorted(records, key=lambda r: r.episode):
        reason = skip_reason(record)
        if reason is not None:
            report.skipped[reason] += 1
            continue
        assert record.reward is not None  # skip_reason skips a record without one
        grader = grader_for(record, max_answer_chars)
        grade = regrade(record, grader)
        report.regraded += 1
        if grade.reward == record.reward:
            continue
        new_grader = {
            **grader.identity(),
            "require_grounded_answer": bool((record.grader or {}).get("require_grounded_answer", False)),
        }
        report.moved.append(
            Moved(
                record.episode,
                record.task_id,
                record.reward,
                grade.reward,
                record.grader,
                new_grader,
                record.failure_kind,
                gym_failure_kind(grade.failure_kind),
                record.judge_text,
                grade.judge_text,
            )
        )
    return report
