"""`failure_kind` as NeMo Gym names it, so a trainer can group and filter verify rows without knowing this server.

NeMo Gym's shared vocabulary (`nemo_gym/failure_kinds.py`, Gym#3213; the field itself Gym#2552/#2608) names what
kind of thing went wrong, `<domain>_<condition>`; an environment's own kinds are namespaced `<server>:<kind>`.
The kinds this server produces that the vocabulary has keep their name; the rest (the deterministic grader's
reasons, such as `answer_too_long`) are namespaced `finance_sec_search:<kind>`. The human-readable why stays in
`failure_reason` or `judge_text`.
"""

from __future__ import annotations

__all__ = [
    "gym_failure_kind",
    "GYM_KINDS",
    "JUDGE_FAILED",
    "JUDGE_UNPARSEABLE",
    "SERVER",
    "SESSION_EXPIRED",
    "SESSION_LOST",
    "VERIFIER_ERROR",
]

SERVER = "finance_sec_search"

# The names of Gym's vocabulary that verify rows here use.
SESSION_LOST = "session_lost"
SESSION_EXPIRED = "session_expired"
JUDGE_FAILED = "judge_failed"
JUDGE_UNPARSEABLE = "judge_unparseable"
VERIFIER_ERROR = "verifier_error"
GYM_KINDS = frozenset({SESSION_LOST, SESSION_EXPIRED, JUDGE_FAILED, JUDGE_UNPARSEABLE, VERIFIER_ERROR})


def gym_failure_kind(kind: str | None) -> str | None:
    """The kind as Gym reads it: a registered name, or this server's namespaced one."""
    if kind is None or kind in GYM_KINDS or ":" in kind:
        return kind
    return f"{SERVER}:{kind}"
