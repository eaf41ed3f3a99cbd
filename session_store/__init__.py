"""The session store: every rule of the resources-sessions contract, and the shards that hold sessions.

This is its public API; everything else is internal (`tests/unit/session_store/test_public_api.py` fails when it drifts).
Ray-free: the Ray shells live in `session_store.ray_store` (the store over the actors), `session_store.ray_actors`
(the actors) and `session_store.app_actors` (naming, options, errors and cleanup of an application's actors).
"""

from .batching import Coalescer
from .core import (
    NO_CLAIMS,
    Cached,
    Claims,
    DocumentRef,
    DocumentsView,
    EpisodeSeed,
    GradeNow,
    Limits,
    Masked,
    Pending,
    Scored,
    Seeded,
    StoredDocument,
    Verdict,
    VerifyOutcome,
    VerifyPlan,
    canonical_digest,
)
from .documents import DocumentStore, DocumentStoreService
from .errors import DocumentRefused, SessionConflict, SessionLost, StoreFull, StoreUnavailable
from .lru import BoundedLru
from .marks import MemoryMarkStore
from .reaper import Reaper
from .routing import shard_index
from .shard import ShardConfig, ShardService
from .store import LocalSessionStore, SessionStore
from .versions import code_version

__all__ = [
    "NO_CLAIMS",
    "BoundedLru",
    "Cached",
    "Claims",
    "Coalescer",
    "DocumentRef",
    "DocumentRefused",
    "DocumentStore",
    "DocumentStoreService",
    "DocumentsView",
    "EpisodeSeed",
    "Limits",
    "LocalSessionStore",
    "Masked",
    "MemoryMarkStore",
    "Pending",
    "Reaper",
    "GradeNow",
    "Scored",
    "Seeded",
    "SessionConflict",
    "SessionLost",
    "SessionStore",
    "ShardConfig",
    "ShardService",
    "StoreFull",
    "StoreUnavailable",
    "StoredDocument",
    "Verdict",
    "VerifyOutcome",
    "VerifyPlan",
    "canonical_digest",
    "code_version",
    "shard_index",
]
