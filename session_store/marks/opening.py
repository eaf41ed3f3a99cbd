"""The mark store a deployment's settings name."""

from __future__ import annotations

from .base import DurableMarkStore

__all__ = ["open_mark_store"]


def open_mark_store(url: str | None, namespace: str) -> DurableMarkStore:
    """The store the settings name: Redis for a `redis://` or `rediss://` URL, else the cluster's GCS."""
    if url:
        from .redis_store import RedisMarkStore

        return RedisMarkStore(url, namespace)
    from .gcs_store import GcsMarkStore

    return GcsMarkStore(namespace.encode())
