"""The session errors the contract names; the ingress maps each to one HTTP status (design: errors are types)."""

__all__ = ["DocumentRefused", "SessionConflict", "SessionLost", "StoreFull", "StoreUnavailable"]


class SessionConflict(Exception):
    """A seed or close that contradicts the ID's recorded episode, or an ID that is fenced (contract §C.2-C.4): 409."""


class SessionLost(Exception):
    """A stateful tool named a session that is not open (contract §C.6): 404 with failure_kind session_lost."""

    def __init__(self, session_id: str, why: str = "closed, expired, lost or never seeded"):
        self.session_id = session_id
        self.why = why
        super().__init__(
            f"Resources session {session_id!r} is not open ({why}). Start a new session with /seed_session."
        )

    def __reduce__(self):  # keep both fields when Ray pickles the error across processes
        return (SessionLost, (self.session_id, self.why))


class DocumentRefused(Exception):
    """A document the session may not store (a per-session limit): its text is the tool's result."""


class StoreUnavailable(Exception):
    """The shard holding a session did not answer in time, or its answer could not be made durable; the caller
    may retry: 503 with Retry-After. `cause` names why, for the operator's 503 counts: a word from a short,
    fixed list (a metric label)."""

    default_cause = "unavailable"

    def __init__(self, message: str = "", cause: str | None = None):
        super().__init__(message, cause or self.default_cause)  # both in args: they survive pickling by Ray

    @property
    def cause(self) -> str:
        return self.args[1]

    def __str__(self) -> str:
        return self.args[0]


class StoreFull(StoreUnavailable):
    """A shard is at one of its capacity limits: 503 with Retry-After, never a silently dropped fence."""

    default_cause = "store_full"
