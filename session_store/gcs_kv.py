"""This process's client of Ray's GCS key-value store, which the app's actor registry and the GCS mark store share."""

from __future__ import annotations

from typing import Any

__all__ = ["gcs_kv"]


def gcs_kv() -> Any:
    """The client: async calls, each with its own timeout. Ray exports it only from `ray.experimental`."""
    from ray.experimental.internal_kv import internal_kv_get_gcs_client

    return internal_kv_get_gcs_client()
