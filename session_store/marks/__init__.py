"""Where fences, expired marks and episode seeds are kept durably, so they outlive a shard's process and the
cluster's head (contract §C.4, §C.9).

A shard writes every changed mark here before it answers the requests that changed it: each batch's changes go
together (group commit). Until it has settled (loaded every mark of the partitions it owns,
`ShardService.settle`) it reads the mark of an ID it does not know before it decides a seed, a close or a verify
for it; after that, its memory is complete and it reads nothing. A store that cannot list a shard's marks cheaply
(`lists_marks` False: Redis) is read per ID for the shard's whole life instead.

The stores:
- `MemoryMarkStore`: this process; the Ray-free tests and the single-process baseline.
- `gcs_store.GcsMarkStore`: Ray's GCS key-value store, the embedded default (no external dependency; a few thousand
  writes/s, and gone with the head unless the GCS itself is fault tolerant).
- `redis_store.RedisMarkStore`: Redis, for clusters (`mark_store_url`): native expiry, group commits in one
  command, reads per ID, and it outlives the Ray cluster.
`open_mark_store` picks one from the settings.

One owner at a time. A write may name, per ID, the owners its record may have for the write to apply (`Owners`:
a life's incarnation, or None for a record held open by no life or absent; the last is the writer's own life);
the store checks and writes in one step (the GCS store by epochs: `gcs_store.py`), and reports the IDs whose record another life holds (`Written.superseded`). The shard's core says why
(`core.py`, "One owner at a time").

A store that forgets. Redis can lose data while the app runs: a restart without persistence, an eviction, a
failover to an empty replica, a flush. An absent mark then proves nothing, and a closed ID would be seeded again.
So a store has a marker, a record with no expiry, written when a deployment begins the store (`begin`) and read
with every read of marks: a read that finds it gone raises `StoreForgot` (with the marks it did find), and the
shard stops deciding from absence until an operator acknowledges the loss (`acknowledge_loss`), which begins the
store again. `durability_problem` says why a store could forget before it does (Redis: an evicting
maxmemory-policy, no append-only file).
"""

from __future__ import annotations

from .base import (
    Beginning,
    DurableMarkStore,
    MarkStore,
    Owners,
    StoreForgot,
    StoreHealth,
    Written,
    app_namespace,
    marker,
    refused,
)
from .memory import MemoryMarkStore
from .opening import open_mark_store
from .records import decode, encode

__all__ = [
    "Beginning",
    "DurableMarkStore",
    "MarkStore",
    "MemoryMarkStore",
    "Owners",
    "StoreForgot",
    "StoreHealth",
    "Written",
    "app_namespace",
    "decode",
    "encode",
    "marker",
    "open_mark_store",
    "refused",
]
