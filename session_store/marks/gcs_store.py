"""Durable marks in Ray's GCS key-value store: the embedded default, with no external dependency.

One owner at a time, without compare-and-set. The GCS KV can put a key only if it is absent, and nothing more
atomic, so a record is kept in *epochs*. A life that takes a record over first claims the next epoch (a key put
only if absent, naming the life), then reads the record again and checks its owner there (`refused`, as the
Redis store's script does), then writes the record whole under that epoch's keys. A life writes only into an
epoch it claimed (one that forgot which finds its own claim the newest, and writes there), and after each write
reads whether the next epoch has been claimed: if it has, the write is superseded (it sits in keys no reader
reads). So every write reported done landed before any later claim, and
the taker's read after its claim sees it. The record is the newest claimed epoch that has a head; claims are
numbered from 1 with no gap, and a reader walks them up from 1.

Keys, in the application's KV namespace; `<id>` stands for `<partition>:<id's length>:<id>`, so that a shard that
settles lists only the partitions it owns:
- `ep:<id>:<e>:c` epoch e's claim (the life's incarnation); `ep:<id>:<e>:h` its head (`records.py`), or `-` once
  the record is deleted; `ep:<id>:<e>:p<part name as JSON>` each document and verdict of its durable session.
- `mark:<partition>:<id>` and `part:<id><part name>` (epoch 0): a record as versions before epochs wrote it. A
  life that takes one over keeps its head a copy of the new head that names the epoch holding the record
  ("moved"): a shard of the version before, still serving in a redeploy's rollover, sees the new owner there and
  refuses to write over it. If such a shard writes it anyway (its check and write are two steps), the head is no
  longer "moved", and that write is the newest: the newer life's next write is superseded.

The GCS has no multi-put and no expiry: a group commit is concurrent puts, and lapsed records are deleted by
`sweep` (all their keys), which the reaper runs (never a serving shard), in small batches. A write that lands
between the sweep's last read and its delete is lost, as it always was. The GCS finds a prefix's keys by reading
every key it holds, so serving deletes a session's parts by name; listings are for the sweep, a settle, and the
rare read of a durable session's record. The write rate is limited (docs/benchmarks.md): the head's one GCS
process serves it, beside Ray's own control plane.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections import defaultdict
from dataclasses import dataclass, field

from ..core import HEAD, Mark
from ..gcs_kv import gcs_kv
from ..routing import PARTITIONS, hex_prefixes, partition
from .base import Beginning, Owners, StoreForgot, Written, marker, refused
from .records import decode, joined, parts_of

__all__ = ["GcsMarkStore"]

_MARK = b"mark:"  # epoch 0's head
_PART = b"part:"  # epoch 0's parts
_EPOCH = b"ep:"  # epochs from 1: claims, heads, parts
_GONE = b"-"  # the head of a deleted record, until the sweep takes its keys
_BATCH = 500  # keys read or decoded between yields to the event loop
_WALK = 2  # claims read at once while walking up an ID's epochs
_HELD = 65_536  # epochs a store remembers it holds (one it forgot is found again by a read)


@dataclass
class _Record:
    """What the GCS holds of one ID: epoch 0's head, the claims numbered from 1 up to the first gap, their heads."""

    legacy: bytes | None = None
    claims: dict[int, bytes] = field(default_factory=dict)
    heads: dict[int, bytes] = field(default_factory=dict)

    @property
    def top(self) -> int:
        return len(self.claims)

    def current(self, below: int | None = None) -> tuple[int, bytes | None]:
        """The epoch that holds the record (of those below `below`) and its head (None: no record)."""
        if self.legacy is not None and _moved_to(self.legacy) is None:
            return 0, self.legacy  # written by a version before epochs, after any epoch: the newest
        for epoch in range(min(self.top, (below or self.top + 1) - 1), 0, -1):
            if epoch in self.heads:
                head = self.heads[epoch]
                return epoch, None if head == _GONE else head
        return 0, self.legacy  # a "moved" copy whose epochs are gone (mid-sweep), read as it is


@dataclass
class _Held:
    """An epoch this store's writer claimed: whether the ID has an epoch-0 head to keep "moved", and the names of
    the parts written into the epoch (a whole write deletes them first; None: not known, as in an epoch rejoined)."""

    epoch: int
    life: str
    legacy: bool
    parts: set[str] | None = field(default_factory=set)


def _id(sid: str) -> bytes:
    encoded = sid.encode("utf-8", "backslashreplace")
    return b"%03x:%d:%s" % (partition(sid), len(encoded), encoded)


def _mark_key(sid: str) -> bytes:
    return b"%s%03x:%s" % (_MARK, partition(sid), sid.encode("utf-8", "backslashreplace"))


def _epoch_prefix(sid: str, epoch: int | None = None) -> bytes:
    return b"%s%s:" % (_EPOCH, _id(sid)) + (b"" if epoch is None else b"%d:" % epoch)


def _claim(sid: str, epoch: int) -> bytes:
    return _epoch_prefix(sid, epoch) + b"c"


def _head(sid: str, epoch: int) -> bytes:
    return _epoch_prefix(sid, epoch) + b"h"


def _parts_prefix(sid: str, epoch: int) -> bytes:
    return _epoch_prefix(sid, epoch) + b"p" if epoch else _PART + _id(sid)


def _parse(key: bytes, family: bytes) -> tuple[str, bytes]:
    """A key of the families keyed by `<id>` as (the ID, what follows it: `:<epoch>...` or a legacy part's name)."""
    rest = key[len(family) + 4 :]  # past the partition
    length, _, rest = rest.partition(b":")
    return rest[: int(length)].decode("utf-8", "backslashreplace"), rest[int(length) :]


def _moved_to(head: bytes) -> int | None:
    """The epoch an epoch-0 head says holds the record, or None (a head a version before epochs wrote)."""
    try:
        fields = json.loads(head)
        return fields[6] if isinstance(fields, list) and len(fields) > 6 and isinstance(fields[6], int) else None
    except (ValueError, TypeError):
        return None


def _moved(head: bytes, epoch: int) -> bytes:
    """Epoch 0's copy of `head`, saying that `epoch` holds the record (readers before epochs ignore the field)."""
    fields = json.loads(head)
    return json.dumps([*fields, *[None] * (6 - len(fields)), epoch], separators=(",", ":")).encode()


def _lapsed(head: bytes | None, now: float) -> bool:
    mark = decode(head) if head is not None else None
    return mark is None or mark.drop_at <= now


class GcsMarkStore:
    lists_marks = True

    def __init__(self, kv_namespace: bytes, timeout_seconds: float = 5.0):
        self._namespace = kv_namespace
        self._timeout = timeout_seconds
        self._life = uuid.uuid4().hex  # the writer of writes that name no owners
        self._held: dict[str, _Held] = {}  # ID -> the epoch this store's writer claimed, oldest first

    # ----- reading -----

    async def _records(self, sids: list[str]) -> tuple[dict[str, _Record], bool]:
        """Each ID's record as the GCS holds it, and whether the marker is there."""
        client = gcs_kv()
        records = {sid: _Record() for sid in sids}
        walking, start, marker_present = list(sids), 1, True
        while walking:
            keys = [_MARKER, *map(_mark_key, walking)] if start == 1 else []
            for sid in walking:
                for epoch in range(start, start + _WALK):
                    keys += [_claim(sid, epoch), _head(sid, epoch)]
            found = await client.async_internal_kv_multi_get(keys, self._namespace, timeout=self._timeout)
            if start == 1:
                marker_present = found.get(_MARKER) is not None
            still = []
            for sid in walking:
                record = records[sid]
                if start == 1:
                    record.legacy = found.get(_mark_key(sid))
                for epoch in range(start, start + _WALK):
                    if (life := found.get(_claim(sid, epoch))) is None:
                        break
                    record.claims[epoch] = life
                    if (head := found.get(_head(sid, epoch))) is not None:
                        record.heads[epoch] = head
                else:
                    still.append(sid)
            walking, start = still, start + _WALK
        return records, marker_present

    async def read(self, sids: list[str]) -> dict[str, Mark]:
        records, marker_present = await self._records(sids)
        marks = {}
        for sid, record in records.items():
            epoch, head = record.current()
            if head is None or (mark := decode(head)) is None:
                continue
            if mark.session is not None:  # a durable session: its parts too
                mark = joined(head, await self._parts(sid, epoch))
            if mark is not None:
                marks[sid] = mark
        if not marker_present:
            raise StoreForgot(marks)
        return marks

    async def _parts(self, sid: str, epoch: int) -> dict[str, bytes]:
        client = gcs_kv()
        prefix = _parts_prefix(sid, epoch)
        keys = await client.async_internal_kv_keys(prefix, self._namespace, timeout=self._timeout)
        found = await client.async_internal_kv_multi_get(keys, self._namespace, timeout=self._timeout) if keys else {}
        return {json.loads(key[len(prefix) :]): raw for key, raw in found.items() if raw is not None}

    # ----- writing -----

    async def write(
        self,
        changes: dict[str, Mark | None],
        owners: dict[str, Owners] | None = None,
        parts: dict[str, frozenset[str] | None] | None = None,
    ) -> Written:
        owners, parts = owners or {}, parts or {}
        writers = {sid: (owners.get(sid) or (None,))[-1] or self._life for sid in changes}
        held = {sid: h for sid in changes if (h := self._held.get(sid)) is not None and h.life == writers[sid]}
        rejoined, taken, superseded, failed, forgot = await self._take_over(
            [sid for sid in changes if sid not in held], changes, writers, owners
        )
        held.update(rejoined)
        # An epoch just taken is written whole; one held before, only the parts that changed.
        writing = {**held, **taken}
        results = await asyncio.gather(
            *(self._put(sid, changes[sid], h, sid in taken, parts.get(sid)) for sid, h in writing.items()),
            return_exceptions=True,
        )
        failed |= {sid for sid, result in zip(writing, results, strict=True) if isinstance(result, BaseException)}
        lost, gone, marker_gone = await self._check({sid: h for sid, h in writing.items() if sid not in failed})
        for sid in lost | gone | failed:
            self._held.pop(sid, None)
        return Written(failed | gone, superseded | lost, forgot or marker_gone)

    async def _take_over(
        self, sids: list[str], changes: dict[str, Mark | None], writers: dict[str, str], owners: dict[str, Owners]
    ) -> tuple[dict[str, _Held], dict[str, _Held], set[str], set[str], bool]:
        """Claim the next epoch of each ID, then check its owner in the record as it was before the claim. Returns
        the epochs this writer claimed before and holds still (forgotten here), the epochs taken (to be written
        whole), the IDs superseded, those that failed, and whether the marker was gone."""
        if not sids:
            return {}, {}, set(), set(), False
        client = gcs_kv()
        try:
            before, marker_present = await self._records(sids)
        except Exception:
            return {}, {}, set(), set(sids), False
        # Where the newest claim is this writer's, no life claimed after it: the epoch is its own still. With a
        # head it is written as any held epoch; without one (a takeover refused) it is taken now, unclaimed again.
        rejoined: dict[str, _Held] = {}
        epochs: dict[str, int] = {}
        for sid in sids:
            record = before[sid]
            if record.top and record.claims[record.top] == writers[sid].encode():
                if record.top in record.heads:
                    rejoined[sid] = self._hold(sid, _Held(record.top, writers[sid], record.legacy is not None, None))
                else:
                    epochs[sid] = record.top
        # Refused on what was read is refused (no claim, which would fence the holder out for nothing); a delete
        # of what is not there is done.
        unheld = [sid for sid in sids if sid not in rejoined]
        superseded = _refused({sid: before[sid] for sid in unheld}, owners, marker_present)
        done = {sid for sid in unheld if changes[sid] is None and before[sid].current()[1] is None}
        claiming = [sid for sid in unheld if sid not in superseded | done and sid not in epochs]
        epochs = {sid: e for sid, e in epochs.items() if sid not in superseded | done}
        epochs.update((sid, before[sid].top + 1) for sid in claiming)

        async def claim(sid: str) -> bool:
            life = writers[sid].encode()
            return bool(
                await client.async_internal_kv_put(
                    _claim(sid, epochs[sid]), life, False, self._namespace, timeout=self._timeout
                )
            )

        results = await asyncio.gather(*(claim(sid) for sid in claiming), return_exceptions=True)
        failed = {sid for sid, r in zip(claiming, results, strict=True) if isinstance(r, BaseException)}
        superseded |= {sid for sid, r in zip(claiming, results, strict=True) if r is False}
        claimed = [sid for sid in epochs if sid not in failed | superseded]
        if not claimed:
            return rejoined, {}, superseded, failed, not marker_present
        try:
            after, marker_present = await self._records(claimed)
        except Exception:
            return rejoined, {}, superseded, failed | set(claimed), False
        refused_after = _refused(after, owners, marker_present, epochs)
        taken: dict[str, _Held] = {}
        for sid in claimed:
            record = after[sid]
            if record.claims.get(epochs[sid]) != writers[sid].encode():  # the sweep took the claims below it
                failed.add(sid)
            elif sid in refused_after:
                superseded.add(sid)  # the claim stays, empty: readers read the epoch below it
            else:
                taken[sid] = self._hold(sid, _Held(epochs[sid], writers[sid], record.legacy is not None))
        return rejoined, taken, superseded, failed, not marker_present

    def _hold(self, sid: str, held: _Held) -> _Held:
        self._held.pop(sid, None)
        self._held[sid] = held
        if len(self._held) > _HELD:
            del self._held[next(iter(self._held))]
        return held

    async def _put(self, sid: str, mark: Mark | None, held: _Held, taken: bool, changed: frozenset[str] | None) -> None:
        """Write the change into the held epoch (whole if just taken) and epoch 0's "moved" copy of its head."""
        client = gcs_kv()
        timeout, namespace = self._timeout, self._namespace

        async def put(key: bytes, value: bytes | None) -> None:
            if value is None:
                await client.async_internal_kv_del(key, False, namespace, timeout=timeout)
            else:
                await client.async_internal_kv_put(key, value, True, namespace, timeout=timeout)

        changed = None if taken else changed
        if (mark is None or changed is None) and held.parts != set():  # deleted or written whole: parts go first
            await self._drop_parts(sid, held)
        if mark is None:
            await put(_head(sid, held.epoch), _GONE)
            if held.legacy:  # gone for every version
                await put(_mark_key(sid), None)
                await client.async_internal_kv_del(_parts_prefix(sid, 0), True, namespace, timeout=timeout)
                held.legacy = False
            return
        written = parts_of(mark, changed)
        if held.parts is not None:  # named before they are put: a put that fails midway leaves no part unnamed
            held.parts |= {name for name, value in written.items() if name != HEAD and value is not None}
        prefix = _parts_prefix(sid, held.epoch)
        await asyncio.gather(
            *(
                put(_head(sid, held.epoch) if name == HEAD else prefix + json.dumps(name).encode(), value)
                for name, value in written.items()
            )
        )
        if held.legacy and (head := written.get(HEAD)) is not None:
            # Moved when taken, then kept so unless a shard of the version before wrote it since: then its write
            # stands, and the check after this write reports this one superseded.
            legacy = await client.async_internal_kv_get(_mark_key(sid), namespace, timeout=timeout)
            if legacy is not None and (taken or _moved_to(legacy) is not None):
                await put(_mark_key(sid), _moved(head, held.epoch))
            held.legacy = legacy is not None

    async def _drop_parts(self, sid: str, held: _Held) -> None:
        """Delete the epoch's parts by name. The GCS finds a prefix's keys by reading every key it holds, so a
        delete by prefix, on every close, would cost more the more sessions are open; it is left for parts whose
        names this store does not know."""
        client = gcs_kv()
        prefix = _parts_prefix(sid, held.epoch)
        if held.parts is None:
            await client.async_internal_kv_del(prefix, True, self._namespace, timeout=self._timeout)
        else:
            await asyncio.gather(
                *(
                    client.async_internal_kv_del(
                        prefix + json.dumps(name).encode(), False, self._namespace, timeout=self._timeout
                    )
                    for name in held.parts
                )
            )
        held.parts = set()

    async def _check(self, written: dict[str, _Held]) -> tuple[set[str], set[str], bool]:
        """After the writes: the IDs a later claim (or a version before epochs) took meanwhile; those whose own
        claim is gone (the store lost it: a retry claims anew); and whether the marker is gone."""
        if not written:
            return set(), set(), False
        keys = [_MARKER]
        for sid, held in written.items():
            keys += [_claim(sid, held.epoch), _claim(sid, held.epoch + 1)]
            if held.legacy:
                keys.append(_mark_key(sid))
        try:
            found = await gcs_kv().async_internal_kv_multi_get(keys, self._namespace, timeout=self._timeout)
        except Exception:
            return set(), set(written), False
        lost, gone = set(), set()
        for sid, held in written.items():
            own = found.get(_claim(sid, held.epoch))
            legacy = found.get(_mark_key(sid)) if held.legacy else None
            if found.get(_claim(sid, held.epoch + 1)) is not None or own not in (None, held.life.encode()):
                lost.add(sid)
            elif legacy is not None and _moved_to(legacy) is None:
                lost.add(sid)  # a shard of the version before epochs wrote over the "moved" head
            elif own is None:
                gone.add(sid)
        return lost, gone, found.get(_MARKER) is None

    # ----- settling, sweeping -----

    async def _each_batch(self, partitions: range, kind: bytes = _MARK):
        """(key, raw) batches of one key family in these partitions, one prefix listing at a time."""
        client = gcs_kv()
        for prefix in hex_prefixes(partitions):
            keys = await client.async_internal_kv_keys(kind + prefix.encode(), self._namespace, timeout=30)
            for start in range(0, len(keys), _BATCH):
                found = await client.async_internal_kv_multi_get(
                    keys[start : start + _BATCH], self._namespace, timeout=30
                )
                yield list(found.items())

    async def scan(self, partitions: range) -> dict[str, Mark]:
        records: dict[str, _Record] = defaultdict(_Record)
        parts: dict[tuple[str, int], dict[str, bytes]] = defaultdict(dict)
        for family in (_MARK, _PART, _EPOCH):
            async for batch in self._each_batch(partitions, family):
                for key, raw in batch:
                    if raw is not None:
                        _file(records, parts, family, key, raw)
                await asyncio.sleep(0)  # a shard settles while it serves: let requests through between batches
        marks: dict[str, Mark] = {}
        for n, (sid, record) in enumerate(records.items(), 1):
            record.claims = _walked(record.claims)
            epoch, head = record.current()
            if head is not None and (mark := joined(head, parts.get((sid, epoch), {}))) is not None:
                marks[sid] = mark
            if n % _BATCH == 0:
                await asyncio.sleep(0)
        return marks

    async def sweep(self, now: float) -> int:
        swept = 0
        for prefix in hex_prefixes(range(PARTITIONS)):
            sids = await self._ids(prefix)
            for start in range(0, len(sids), _BATCH):
                # Read again just before deleting: a shard may have fenced the ID anew since the listing.
                records, _ = await self._records(sids[start : start + _BATCH])
                for sid, record in records.items():
                    head = record.current()[1]
                    if _lapsed(head, now):
                        await self._erase(sid, record)
                        swept += head is not None  # a lapsed mark (not a deleted record's leftovers)
        return swept

    async def _ids(self, prefix: str) -> list[str]:
        """The IDs that have keys under this partition prefix, in either layout (keys listed, values not read)."""
        client = gcs_kv()
        ids: dict[str, None] = {}
        for family in (_MARK, _EPOCH):
            keys = await client.async_internal_kv_keys(family + prefix.encode(), self._namespace, timeout=30)
            ids.update((_sid_of(key, family), None) for key in keys)
        return list(ids)

    async def _erase(self, sid: str, record: _Record) -> None:
        """Every key of the ID's record (keys left by a claim whose head never came too)."""
        client = gcs_kv()
        timeout, namespace = self._timeout, self._namespace
        await client.async_internal_kv_del(_epoch_prefix(sid), True, namespace, timeout=timeout)
        if record.legacy is not None:
            await client.async_internal_kv_del(_parts_prefix(sid, 0), True, namespace, timeout=timeout)
            await client.async_internal_kv_del(_mark_key(sid), False, namespace, timeout=timeout)

    async def purge(self) -> int:
        """Every key of the application's namespace: marks, the cookie secret, the active-actor record."""
        return await gcs_kv().async_internal_kv_del(b"", True, self._namespace, timeout=30)

    def kept_secret(self, generate) -> str:
        """The application's cookie secret, created by whoever asks first (synchronous: the builder's)."""
        from ray.experimental import internal_kv

        internal_kv._internal_kv_put(_SECRET, generate().encode(), overwrite=False, namespace=self._namespace)
        return internal_kv._internal_kv_get(_SECRET, namespace=self._namespace).decode()

    def begin(self) -> Beginning:
        from ray.experimental import internal_kv

        if internal_kv._internal_kv_exists(_MARKER, namespace=self._namespace):
            return "continued"
        if any(internal_kv._internal_kv_list(prefix, namespace=self._namespace) for prefix in (_MARK, _EPOCH, _SECRET)):
            return "forgot"
        existed = internal_kv._internal_kv_put(
            _MARKER, marker("deployment"), overwrite=False, namespace=self._namespace
        )
        return "continued" if existed else "new"

    def acknowledge_loss(self) -> None:
        from ray.experimental import internal_kv

        internal_kv._internal_kv_put(_MARKER, marker("acknowledged"), overwrite=True, namespace=self._namespace)

    async def marker_present(self) -> bool:
        return await gcs_kv().async_internal_kv_exists(_MARKER, self._namespace, timeout=self._timeout)

    def durability_problem(self) -> str | None:
        return None  # the GCS's own fault tolerance (its Redis) is the cluster's to configure


def _refused(
    records: dict[str, _Record], owners: dict[str, Owners], marker_present: bool, below: dict[str, int] | None = None
) -> set[str]:
    """The IDs whose record (below the epoch each claimed) has an owner their write does not accept."""
    current = {sid: records[sid].current((below or {}).get(sid))[1] for sid in records if sid in owners}
    return refused(current, {sid: owners[sid] for sid in current}, not marker_present)


def _sid_of(key: bytes, family: bytes) -> str:
    if family == _MARK:
        return key[len(_MARK) + 4 :].decode("utf-8", "backslashreplace")
    return _parse(key, family)[0]


def _file(
    records: dict[str, _Record], parts: dict[tuple[str, int], dict[str, bytes]], family: bytes, key: bytes, raw: bytes
) -> None:
    """File one listed key under its ID's record, or its epoch's parts."""
    if family == _MARK:
        records[_sid_of(key, family)].legacy = raw
        return
    sid, rest = _parse(key, family)
    if family == _PART:
        parts[(sid, 0)][json.loads(rest)] = raw
        return
    epoch, _, what = rest[1:].partition(b":")
    if what == b"c":
        records[sid].claims[int(epoch)] = raw
    elif what == b"h":
        records[sid].heads[int(epoch)] = raw
    else:
        parts[(sid, int(epoch))][json.loads(what[1:])] = raw


def _walked(claims: dict[int, bytes]) -> dict[int, bytes]:
    """The claims numbered from 1 up to the first gap: what a walk finds."""
    found: dict[int, bytes] = {}
    while (epoch := len(found) + 1) in claims:
        found[epoch] = claims[epoch]
    return found


_SECRET = b"cookie-secret"
_MARKER = b"store"
