"""The app's durable records (fences, expired marks, episode seeds, the kept cookie secret): the store the settings
name, how a deploy begins it, and the cookie secret kept in it. Ray-free: Redis is reached from any process, the
cluster's GCS only from inside a Ray process."""

from __future__ import annotations

import logging
import secrets

from deployments import about
from deployments.settings import Settings
from session_store.marks import DurableMarkStore, app_namespace, open_mark_store

__all__ = ["begin_mark_store", "cookie_secret", "durable_records"]

log = logging.getLogger("ray.serve")


def durable_records(settings: Settings) -> DurableMarkStore:
    """The app's durable mark store, as the settings name it."""
    return open_mark_store(settings.mark_store(), app_namespace(settings.app_name))


def _ray_running() -> bool:
    import ray

    return ray.is_initialized()


def cookie_secret(settings: Settings) -> str:
    """The configured secret; else one generated for the app and kept with its durable marks (Redis, or the
    cluster's key-value store), so a redeploy, and with Redis a new cluster, keeps the cookies valid. Then the
    new shards report the old sessions as lost (their cookies name shards that are gone), where a new secret
    would make them unknown, and scored."""
    if settings.cookie_secret is not None:
        return settings.cookie_secret.get_secret_value()
    # Decision 14: never a predictable constant. The builder runs once per deploy and every replica gets this.
    if settings.mark_store() is None and not _ray_running():
        log.warning(
            "finsec-serve: no cookie_secret configured and no cluster to keep one; generated one for "
            "this deployment only"
        )
        return secrets.token_urlsafe(32)
    kept = durable_records(settings).kept_secret(lambda: secrets.token_urlsafe(32))
    if settings.mark_store() is None:
        log.warning(
            "finsec-serve: no cookie_secret configured; using the one generated for this app on this "
            "cluster. Sessions do not survive losing its head; set cookie_secret or mark_store_url."
        )
    return kept


def begin_mark_store(settings: Settings) -> None:
    """At deploy: refuse a store that could forget fences, and begin it (its marker) or continue it. A store that
    holds the app's records without its marker lost data: the app deploys, and refuses new sessions until an
    operator acknowledges the loss."""
    if settings.mark_store() is None and not _ray_running():
        log.warning(
            "finsec-serve: no Ray cluster here to keep the marks in; the mark store was not begun, so its "
            "shards will refuse new sessions. Deploy with `finsec serve` or `serve run`."
        )
        return
    store = durable_records(settings)
    if settings.mark_store_durability_check and (problem := store.durability_problem()):
        raise ValueError(
            f"mark_store_url names a Redis that may forget fences: {problem}. (Set "
            "mark_store_durability_check to false only if it persists and never evicts otherwise.)"
        )
    where = about.mark_store(settings)
    beginning = store.begin()
    if beginning == "new":
        log.warning(
            "finsec-serve: begins a new mark store at %s: no fence, episode seed or cookie secret of app %r was there",
            where,
            settings.app_name,
        )
    elif beginning == "forgot":
        log.error(
            "finsec-serve: the mark store at %s holds records of app %r but not its marker: it lost data. "
            "New sessions are refused until an operator runs `finsec store acknowledge-loss`.",
            where,
            settings.app_name,
        )
