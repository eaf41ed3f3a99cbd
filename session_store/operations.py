"""The shard operations, each declared once: the core method it runs and what it needs. The shard's dispatch
(shard.py) and the store's calls (store.py) derive from this table; a batch names operations by `name`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from .core import SessionCore

__all__ = [
    "CHECK_OPEN",
    "CLOSE",
    "DESCRIBE",
    "DOCUMENT_REFS",
    "FINISH_VERIFY",
    "INSPECT",
    "MARK_LOST",
    "NOW",
    "Operation",
    "OPERATIONS",
    "PLAN_VERIFY",
    "PUT_DOCUMENT",
    "READ_DOCUMENTS",
    "RECORD_VERDICT",
    "RETIRE",
    "RETIRE_IF_IDLE",
    "SEED_AGENT_RUN",
    "SEED_EPISODE",
    "STARTED_AT",
]


@dataclass(frozen=True)
class Operation:
    run: Callable[..., Any]  # the SessionCore method; the session ID is always its first argument
    # Its answer depends on, or it may write, a fence or expired mark of an ID that is not open (a tool on a lost
    # session fences it: the durable mark must be known first, or it would be overwritten).
    needs_marks: bool = False
    # On an ID whose absent mark proves nothing (the store forgot, or may forget): refused (503), or masked.
    unproven: Literal["refuse", "mask"] | None = None

    @property
    def name(self) -> str:
        return self.run.__name__


SEED_EPISODE = Operation(SessionCore.seed_episode, needs_marks=True, unproven="refuse")
SEED_AGENT_RUN = Operation(SessionCore.seed_agent_run, needs_marks=True, unproven="refuse")
CLOSE = Operation(SessionCore.close, needs_marks=True, unproven="refuse")
RETIRE = Operation(SessionCore.retire)
RETIRE_IF_IDLE = Operation(SessionCore.retire_if_idle, needs_marks=True)  # a durable session is restored first
MARK_LOST = Operation(SessionCore.mark_lost, needs_marks=True)
PLAN_VERIFY = Operation(SessionCore.plan_verify, needs_marks=True, unproven="mask")
RECORD_VERDICT = Operation(SessionCore.record_verdict)
FINISH_VERIFY = Operation(SessionCore.finish_verify, needs_marks=True, unproven="mask")
CHECK_OPEN = Operation(SessionCore.check_open, needs_marks=True)
STARTED_AT = Operation(SessionCore.started_at, needs_marks=True)  # a durable session is restored first
NOW = Operation(SessionCore.now)
PUT_DOCUMENT = Operation(SessionCore.put_document, needs_marks=True)
READ_DOCUMENTS = Operation(SessionCore.read_documents, needs_marks=True)
DESCRIBE = Operation(SessionCore.describe, needs_marks=True)
DOCUMENT_REFS = Operation(SessionCore.document_refs, needs_marks=True)
INSPECT = Operation(SessionCore.inspect)  # from memory alone: an inspection restores or fences nothing

OPERATIONS: dict[str, Operation] = {
    op.name: op
    for op in (
        SEED_EPISODE,
        SEED_AGENT_RUN,
        CLOSE,
        RETIRE,
        RETIRE_IF_IDLE,
        MARK_LOST,
        PLAN_VERIFY,
        RECORD_VERDICT,
        FINISH_VERIFY,
        CHECK_OPEN,
        STARTED_AT,
        NOW,
        PUT_DOCUMENT,
        READ_DOCUMENTS,
        DESCRIBE,
        DOCUMENT_REFS,
        INSPECT,
    )
}
