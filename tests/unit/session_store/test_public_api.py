"""session_store's public API is what callers may import; this fails when it drifts, so a change is a decision."""

import session_store

PUBLIC = {
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
}


def test_the_public_api_is_exactly_this():
    assert set(session_store.__all__) == PUBLIC
    assert all(hasattr(session_store, name) for name in PUBLIC)


def test_the_public_api_needs_no_ray():
    import subprocess
    import sys

    code = "import sys, session_store; assert 'ray' not in sys.modules, 'session_store imported ray'"
    subprocess.run([sys.executable, "-c", code], check=True)
