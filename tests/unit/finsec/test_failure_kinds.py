"""`failure_kind` as NeMo Gym names it (failure_kinds.py): Gym's own names kept, this server's namespaced once."""

from __future__ import annotations

from finsec.grading.failure_kinds import GYM_KINDS, SERVER, gym_failure_kind


def test_failure_kinds_are_gyms_names_or_namespaced_as_this_servers():
    assert [
        gym_failure_kind(k) for k in ("session_lost", "session_expired", "judge_failed", "judge_unparseable", None)
    ] == ["session_lost", "session_expired", "judge_failed", "judge_unparseable", None]
    assert gym_failure_kind("answer_too_long") == "finance_sec_search:answer_too_long"
    assert gym_failure_kind("finance_sec_search:x") == "finance_sec_search:x"  # never namespaced twice


def test_every_gym_kind_is_kept_and_nothing_else_is() -> None:
    assert SERVER == "finance_sec_search"
    assert {"session_lost", "session_expired", "judge_failed", "judge_unparseable", "verifier_error"} == GYM_KINDS
    assert all(gym_failure_kind(kind) == kind for kind in GYM_KINDS)
    assert gym_failure_kind("ungrounded") == "finance_sec_search:ungrounded"
    assert gym_failure_kind("other:kind") == "other:kind"  # any namespace is left alone
