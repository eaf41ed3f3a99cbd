"""What every mark store is: the protocol, what a write leaves unwritten, the marker that tells a store that
forgot, and the owners a write accepts (the package's docstring says why each)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

from ..core import Mark
from .records import decode

__all__ = [
    "Beginning",
    "DurableMarkStore",
    "MarkStore",
    "Owners",
    "StoreForgot",
    "StoreHealth",
    "Written",
    "app_namespace",
    "marker",
    "refused",
]


Beginning = Literal["new", "continued", "forgot"]  # what `begin` found: nothing, its marker, records without it


class StoreForgot(Exception):
    """The store's marker is gone: it lost data, so an ID without a mark may have had one. `found` holds the marks
    the read did find (those are still true)."""

    def __init__(self, found: dict[str, Mark] | None = None):
        super().__init__("the mark store's marker is gone: it lost data")
        self.found = found or {}


@dataclass(frozen=True)
class StoreHealth:
    """What the reaper found of the store on its tick, handed to every shard: a gone marker, or why it may forget."""

    forgot: bool = False
    durability_problem: str | None = None


Owners = tuple[str | None, ...]  # the owners a record may have for a write over it to apply; the last, the writer


@dataclass(frozen=True)
class Written:
    """What a write left unwritten: `failed` may pass on a retry; `superseded` never will (another life holds the
    record). `forgot`: the store's marker was gone (then an absent record proves nothing: a write over it is
    taken, the writer's memory being the proof)."""

    failed: set[str] = field(default_factory=set)
    superseded: set[str] = field(default_factory=set)
    forgot: bool = False


def _owner(raw: bytes | None) -> str | None:
    mark = decode(raw) if raw is not None else None
    return mark.open_in if mark is not None else None


def refused(current: dict[str, bytes | None], owners: dict[str, Owners], forgot: bool = False) -> set[str]:
    """The IDs whose current record (raw, None when absent) has an owner their write does not accept; in a store
    that forgot, an absent record refuses nothing."""
    return {
        sid
        for sid, accepted in owners.items()
        if _owner(current.get(sid)) not in accepted and not (forgot and current.get(sid) is None)
    }


class MarkStore(Protocol):
    lists_marks: bool  # whether `scan` lists a shard's marks, so that the shard can settle

    async def read(self, sids: list[str]) -> dict[str, Mark]:
        """The durable marks of these IDs (IDs with none are absent). Raises StoreForgot when the marker is gone,
        and any other error if the store cannot be read."""

    async def write(
        self,
        changes: dict[str, Mark | None],
        owners: dict[str, Owners] | None = None,
        parts: dict[str, frozenset[str] | None] | None = None,
    ) -> Written:
        """Apply the changes (None deletes), as one group; a change with `owners` only over a record one of them
        holds (checked and written in one step); a change with `parts` (records.py) writes only those parts of
        its record, where one without writes it whole."""

    async def scan(self, partitions: range) -> dict[str, Mark]:
        """Every live mark of IDs in these partitions (a shard that settles loads its own once); only where
        `lists_marks`."""

    async def sweep(self, now: float) -> int:
        """Delete marks that lapsed before `now`, if the store does not expire them itself."""

    async def purge(self) -> int:
        """Delete every record of the application (marks, its cookie secret, the marker); returns how many."""

    def begin(self) -> Beginning:
        """At deploy: write the marker if the store holds no record of the app (a new store); leave a store that
        holds records without a marker as it is (it forgot). Synchronous: the application builder's."""

    def acknowledge_loss(self) -> None:
        """An operator's word that the store's loss is accepted: the marker is written again."""

    async def marker_present(self) -> bool:
        """Whether the marker is there (the reaper asks every tick)."""

    def durability_problem(self) -> str | None:
        """Why this store could forget marks it was given (evictions, no persistence), or None."""


class DurableMarkStore(MarkStore, Protocol):
    """A store the settings name (Redis, the cluster's GCS), which also keeps the app's cookie secret."""

    def kept_secret(self, generate: Callable[[], str]) -> str:
        """The application's cookie secret, created by whoever asks first (synchronous: the builder's)."""


def marker(note: str) -> bytes:
    """The marker's value: when the store was begun, and how (by a deployment, or an operator's acknowledgement)."""
    return json.dumps({"begun": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "by": note}).encode()


def app_namespace(app_name: str) -> str:
    """The namespace of an application's actors and durable records."""
    return "finsec-serve." + re.sub(r"[^A-Za-z0-9_.-]", "_", app_name)
