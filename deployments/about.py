"""What a running deployment is, for `GET /status` and `finsec status`: its version, the settings that shape it
(no secret among them), and the Ray actors it runs on."""

from __future__ import annotations

import functools
import time
from typing import Any
from urllib.parse import urlsplit

from deployments.settings import Settings
from session_store.marks import app_namespace

__all__ = ["actors", "mark_store", "shape", "version"]


@functools.cache  # the code does not change under a running process; hashing it reads every source file
def version() -> str:
    """The installed package's version, and the code's digest (what actor names and verdict keys follow)."""
    from importlib import metadata

    import deployments
    import finsec
    import session_store
    from session_store.versions import code_version

    try:
        installed = metadata.version("finsec-serve")
    except metadata.PackageNotFoundError:
        installed = "(not installed)"
    return f"{installed} (code {code_version(deployments, finsec, session_store)})"


def mark_store(settings: Settings) -> str:
    """Where the marks are kept, with no password: `gcs`, or the Redis URL's scheme, host, port and db."""
    url = settings.mark_store()
    if not url:
        return "gcs"
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or ''}{':' + str(parts.port) if parts.port else ''}{parts.path}"


def shape(settings: Settings, marks_kept_in: str | None = None) -> dict[str, Any]:
    judge = settings.judge_model
    retrieval = settings.retrieval_model
    return {
        "num_shards": settings.num_shards,
        "mark_store": marks_kept_in or mark_store(settings),
        "edgar_source": settings.edgar_source,
        "edgar_search_mode": settings.edgar_search_mode,
        "grader": f"judge {judge.model or judge.base_url}" if judge else "deterministic",
        "retrieval": f"model {retrieval.model or retrieval.base_url}" if retrieval else "bm25 passages",
        "session_ttl_seconds": settings.session_ttl_seconds,
        "fence_ttl_seconds": settings.fence_ttl_seconds,
        # how long a request may wait for a place: a client's timeout must be longer (finsec rollouts checks it)
        "admission_running": settings.admission_running,
        "admission_wait_seconds": settings.admission_wait_seconds,
    }


_ACTORS_FOR_SECONDS = 5.0  # GET /status is open to any client: at most one cluster-wide listing per 5 s
_listed: dict[str, tuple[float, list[dict[str, str]]]] = {}


def actors(settings: Settings) -> list[dict[str, str]]:
    """The app's named Ray actors (shards, document store, reaper, rate limiter), each name ending in its
    version; none outside Ray (the one-process app). Listed from the GCS at most every few seconds."""
    at, listed = _listed.get(settings.app_name, (0.0, []))
    if time.monotonic() - at < _ACTORS_FOR_SECONDS:
        return listed
    listed = _listing(settings)
    _listed[settings.app_name] = (time.monotonic(), listed)
    return listed


def _listing(settings: Settings) -> list[dict[str, str]]:
    try:
        import ray

        if not ray.is_initialized():
            return []
        namespace = app_namespace(settings.app_name)
        named = ray.util.list_named_actors(all_namespaces=True)
    except Exception as error:  # the GCS is away: say so, the rest of the status still stands
        return [{"error": f"could not list actors ({type(error).__name__})"}]
    return sorted(
        ({"name": a["name"], "namespace": a["namespace"]} for a in named if a["namespace"] == namespace),
        key=lambda a: a["name"],
    )
