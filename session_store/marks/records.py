"""How a durable record is kept: its mark as JSON, cut into parts so that a change writes only what it changed.

A record's *head* (`HEAD`) is the mark: its fence, expired mark, episode, owner (`open_in`) and, for a durable
session, its start and episode seed. Each document (`d:<key>`) and verdict (`v:<body digest>`) of a durable session
is a part of its own (core.py names them). A store keeps a record's parts together (one Redis key, keys under one
prefix in the GCS, a dict in memory) and writes a change's parts only; a whole write replaces them all. A record an
earlier version wrote in one piece is a head that holds its documents and verdicts itself: read as before.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable

from ..core import DOCUMENT, HEAD, VERDICT, Mark, document_part, verdict_part

__all__ = ["HEAD", "decode", "encode", "joined", "parts_of"]

log = logging.getLogger(__name__)


def encode(mark: Mark) -> bytes:
    """The whole mark in one piece (its session's documents and verdicts included)."""
    fields = [mark.fence_until, mark.cause, mark.episode_id, mark.expired_until, mark.open_in]
    if mark.session is not None:  # a durable session's record (core.py); other marks keep their five fields
        fields.append(mark.session)
    return json.dumps(fields, separators=(",", ":")).encode()


def decode(raw: bytes) -> Mark | None:
    try:
        fence_until, cause, episode_id, expired_until, open_in, *session = json.loads(raw)
        return Mark(fence_until, cause, episode_id, expired_until, open_in, session[0] if session else None)
    except (ValueError, TypeError):
        log.warning("ignoring an unreadable durable mark: %r", raw[:200])
        return None


def parts_of(mark: Mark, names: Iterable[str] | None = None) -> dict[str, bytes | None]:
    """The record's parts (all, or only `names`; None for a part the record no longer has: a verdict dropped)."""
    session = mark.session or {}
    documents, verdicts = session.get("documents", {}), {v[0]: v[1:] for v in session.get("verdicts", [])}
    if names is None:
        names = [HEAD, *map(document_part, documents), *map(verdict_part, verdicts)]
    parts: dict[str, bytes | None] = {}
    positions: dict[str, int] = {}  # the keys' order, which comes back with them
    for name in names:
        if name == HEAD:
            head = {"started_at": session["started_at"], "episode": session["episode"]} if mark.session else None
            parts[name] = encode(
                Mark(mark.fence_until, mark.cause, mark.episode_id, mark.expired_until, mark.open_in, head)
            )
        elif name.startswith(DOCUMENT) and (key := name[len(DOCUMENT) :]) in documents:
            positions = positions or {key: n for n, key in enumerate(documents)}
            parts[name] = _json([*documents[key], positions[key]])
        elif name.startswith(VERDICT) and (digest := name[len(VERDICT) :]) in verdicts:
            parts[name] = _json(verdicts[digest])
        else:
            parts[name] = None
    return parts


def joined(head: bytes, parts: dict[str, bytes]) -> Mark | None:
    """The mark from its head and its other parts."""
    mark = decode(head)
    if mark is None or mark.session is None or not parts:
        return mark
    documents, verdicts = dict(mark.session.get("documents", {})), list(mark.session.get("verdicts", []))
    placed = []
    for name, raw in parts.items():
        try:
            value = json.loads(raw)
            if name.startswith(DOCUMENT):
                *ref, position = value
                placed.append((position, name[len(DOCUMENT) :], ref))
            elif name.startswith(VERDICT):
                verdicts.append([name[len(VERDICT) :], *value])
        except (ValueError, TypeError):
            log.warning("ignoring an unreadable part %r of a durable record", name[:200])
    documents.update((key, ref) for _, key, ref in sorted(placed, key=lambda p: p[0]))
    return Mark(
        mark.fence_until,
        mark.cause,
        mark.episode_id,
        mark.expired_until,
        mark.open_in,
        {**mark.session, "documents": documents, "verdicts": verdicts},
    )


def _json(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()
