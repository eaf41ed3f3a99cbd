"""One owner at a time over Ray's GCS (contract §C.11), whose key-value store has no compare-and-set: the epochs of
`session_store/marks/gcs_store.py`, played step by step against the session cluster's real GCS. A test holds one
life's call to the GCS at a chosen point while another life runs, then lets it go; each life is a store of its
own, as each shard actor has. Then the scenarios of the in-memory and Redis stores (tests/unit/.../
test_one_owner.py), over the GCS."""

from __future__ import annotations

import asyncio
import contextvars
import time
import uuid
from dataclasses import dataclass, field

import pytest

import session_store.marks.gcs_store as gcs_store
from session_store import ShardConfig, ShardService
from session_store.core import Mark
from session_store.gcs_kv import gcs_kv
from session_store.marks import Written, decode, encode
from session_store.marks.gcs_store import GcsMarkStore
from session_store.routing import PARTITIONS, partition
from tests.integration.test_gcs_marks import kinds
from tests.unit.session_store import test_one_owner as one_owner

WHO: contextvars.ContextVar[str | None] = contextvars.ContextVar("who", default=None)


@dataclass
class Hold:
    who: str
    method: str
    nth: int  # the life's nth such call is held
    reached: asyncio.Event = field(default_factory=asyncio.Event)
    go: asyncio.Event = field(default_factory=asyncio.Event)


class Stepped:
    """The GCS client, except that a call a `Hold` names waits, once, for the test's go."""

    def __init__(self, client):
        self._client, self.holds = client, []

    def hold(self, who: str, method: str, nth: int = 1) -> Hold:
        self.holds.append(Hold(who, f"async_internal_kv_{method}", nth))
        return self.holds[-1]

    def __getattr__(self, name: str):
        method = getattr(self._client, name)

        async def call(*args, **kwargs):
            for hold in [h for h in self.holds if (h.who, h.method) == (WHO.get(), name)]:
                hold.nth -= 1
                if hold.nth == 0:
                    self.holds.remove(hold)
                    hold.reached.set()
                    await hold.go.wait()
            return await method(*args, **kwargs)

        return call


@pytest.fixture
def stepped(serve_url, monkeypatch) -> Stepped:
    client = Stepped(gcs_kv())
    monkeypatch.setattr(gcs_store, "gcs_kv", lambda: client)
    return client


@pytest.fixture
def namespace(serve_url) -> bytes:
    name = f"test-owners-{uuid.uuid4().hex[:8]}".encode()
    GcsMarkStore(name).begin()
    return name


async def reached(hold: Hold) -> None:
    await asyncio.wait_for(hold.reached.wait(), 30)  # a store that never makes the held call fails, not hangs


async def as_(who: str, work):
    WHO.set(who)  # in this task only: a task runs in a copy of its creator's context
    return await work


def run_as(who: str, work) -> asyncio.Task:
    return asyncio.create_task(as_(who, work))


def held_open(life: str, documents: int = 0) -> Mark:
    documents_ = {f"k{n}": [f"{n}" * 64, n, f"u{n}"] for n in range(documents)}
    session = {"started_at": time.time(), "episode": {"episode_id": "e"}, "documents": documents_, "verdicts": []}
    return Mark(time.time() + 3600, None, "e", None, life, session)


CLOSED = Mark(time.time() + 3600, "closed", "e")


def test_a_write_held_back_past_a_takeover_and_a_close_is_superseded_and_lands_nowhere(stepped, namespace):
    """The old race: a's write, checked and about to land, waits while b takes the session over and closes it. It
    lands in a's epoch, which no reader reads, and a is told so; the close stands."""
    a, b = GcsMarkStore(namespace), GcsMarkStore(namespace)

    async def main():
        assert await as_("a", a.write({"s": held_open("A")}, {"s": (None, "A")})) == Written()
        hold = stepped.hold("a", "put")  # its first put
        late = run_as("a", a.write({"s": held_open("A", documents=1)}, {"s": ("A", "A")}))
        await reached(hold)
        assert (await as_("b", b.read(["s"])))["s"].open_in == "A"
        assert await as_("b", b.write({"s": held_open("B")}, {"s": ("A", "B")})) == Written()
        assert await as_("b", b.write({"s": CLOSED}, {"s": ("B", "B")})) == Written()
        hold.go.set()
        assert (await late).superseded == {"s"}
        assert (await a.read(["s"]))["s"].cause == "closed"
        assert (await as_("a", a.write({"s": held_open("A")}, {"s": ("A", "A")}))).superseded == {"s"}
        assert (await GcsMarkStore(namespace).read(["s"]))["s"].cause == "closed"  # a third life sees the close

    asyncio.run(main())


def test_a_close_that_lands_between_a_claim_and_the_takers_second_read_is_seen_and_stands(stepped, namespace):
    """b claims the next epoch; before b reads the record again, a's close lands. a is told it was superseded (the
    claim was there after its write), and b, reading again, finds the close: its takeover is refused."""
    a, b = GcsMarkStore(namespace), GcsMarkStore(namespace)

    async def main():
        assert await as_("a", a.write({"s": held_open("A")}, {"s": (None, "A")})) == Written()
        hold = stepped.hold("b", "multi_get", nth=2)  # b's read after its claim
        taking = run_as("b", b.write({"s": held_open("B")}, {"s": ("A", "B")}))
        await reached(hold)
        assert (await as_("a", a.write({"s": CLOSED}, {"s": ("A", "A")}))).superseded == {"s"}
        hold.go.set()
        assert (await taking).superseded == {"s"}
        assert (await GcsMarkStore(namespace).read(["s"]))["s"].cause == "closed"
        assert (await as_("b", b.write({"s": held_open("B")}, {"s": ("A", "B")}))).superseded == {"s"}
        # b, having read the close, writes over it: into the epoch it claimed and left empty, not a third.
        lost = Mark(time.time() + 3600, "lost", "e")
        assert await as_("b", b.write({"s": lost}, {"s": (None, "B")})) == Written()
        assert (await GcsMarkStore(namespace).read(["s"]))["s"].cause == "lost"
        assert kinds(await gcs_kv().async_internal_kv_keys(b"ep:", namespace, timeout=10)) == "cchh"

    asyncio.run(main())


def test_a_store_that_forgot_the_epoch_it_holds_writes_into_it_again_only_what_changed(serve_url, namespace):
    """The newest claim is the writer's own (no life claimed after it): a store that no longer remembers it (a
    bounded memory, a store object made anew) writes the change into that epoch, not the whole record again."""

    async def main():
        assert await GcsMarkStore(namespace).write({"s": held_open("A", 1)}, {"s": (None, "A")}) == Written()
        again = GcsMarkStore(namespace)  # the same life, its memory of epochs gone
        written = await again.write({"s": held_open("A", 2)}, {"s": ("A", "A")}, {"s": frozenset({"d:k1"})})
        assert written == Written()
        assert kinds(await gcs_kv().async_internal_kv_keys(b"ep:", namespace, timeout=10)) == "chpp"  # epoch 1 only
        assert list((await again.read(["s"]))["s"].session["documents"]) == ["k0", "k1"]

    asyncio.run(main())


def test_two_lives_seeding_one_new_id_at_once_leave_one_owner(stepped, namespace):
    """Both read nothing there and both claim the first epoch: one claim lands, the other life is superseded."""
    a, b = GcsMarkStore(namespace), GcsMarkStore(namespace)

    async def main():
        holds = [stepped.hold(who, "put") for who in ("a", "b")]  # each one's first put (its claim)
        seeds = [
            run_as(who, store.write({"s": held_open(who)}, {"s": (None, who)})) for who, store in (("a", a), ("b", b))
        ]
        for hold in holds:
            await reached(hold)
        for hold in holds:
            hold.go.set()
        results = await asyncio.gather(*seeds)
        assert sorted(bool(result.superseded) for result in results) == [False, True], results
        winner = "a" if not results[0].superseded else "b"
        assert (await GcsMarkStore(namespace).read(["s"]))["s"].open_in == winner
        loser, loser_store = ("b", b) if winner == "a" else ("a", a)
        assert (await as_(loser, loser_store.write({"s": CLOSED}, {"s": (None, loser)}))).superseded == {"s"}

    asyncio.run(main())


def test_a_record_of_the_version_before_epochs_is_taken_over_and_kept_moved(stepped, namespace):
    """A record written as versions before epochs did (one head key): a new life reads it, takes it over, and keeps
    that key a copy naming itself, so an old shard's check refuses it; an old shard that writes it anyway wins,
    and the new life's next write is superseded."""
    legacy_key = b"mark:%03x:s" % partition("s")
    client = gcs_kv()
    b = GcsMarkStore(namespace)

    async def main():
        await client.async_internal_kv_put(legacy_key, encode(held_open("old")), True, namespace, timeout=10)
        assert (await b.read(["s"]))["s"].open_in == "old"
        assert await as_("b", b.write({"s": held_open("B", documents=2)}, {"s": ("old", "B")})) == Written()
        copy = await client.async_internal_kv_get(legacy_key, namespace, timeout=10)
        assert decode(copy).open_in == "B" and gcs_store._moved_to(copy) == 1  # what an old shard reads: not its own
        assert list((await GcsMarkStore(namespace).read(["s"]))["s"].session["documents"]) == ["k0", "k1"]
        await client.async_internal_kv_put(legacy_key, encode(held_open("old")), True, namespace, timeout=10)
        assert (await as_("b", b.write({"s": CLOSED}, {"s": ("B", "B")}))).superseded == {"s"}
        assert (await GcsMarkStore(namespace).read(["s"]))["s"].open_in == "old"
        await as_("b", b.write({"s": None}, {"s": ("old", "B")}))  # taken again, and deleted for every version
        assert await client.async_internal_kv_get(legacy_key, namespace, timeout=10) is None
        assert await GcsMarkStore(namespace).read(["s"]) == {}

    asyncio.run(main())


def test_the_sweep_takes_every_key_of_a_lapsed_or_deleted_record_and_spares_a_live_one(serve_url, namespace):
    store = GcsMarkStore(namespace)
    now = time.time()

    async def main():
        await store.write({"lapsed": Mark(now - 5, "closed"), "deleted": held_open("A", documents=2)})
        await store.write({"live": held_open("A", documents=1)})
        await store.write({"deleted": None})
        assert await store.sweep(now) == 1
        keys = await gcs_kv().async_internal_kv_keys(b"ep:", namespace, timeout=10)
        assert {key.split(b":")[3] for key in keys} == {b"live"}
        assert set(await store.scan(range(PARTITIONS))) == {"live"}

    asyncio.run(main())


# ----- the scenarios of the in-memory and Redis stores, over the GCS -----


@pytest.fixture
def lives(namespace):
    def make(durable: bool):
        return lambda: ShardService(ShardConfig(one_owner.TTL, durable_sessions=durable), GcsMarkStore(namespace))

    return make


test_a_session_closed_by_a_later_life_is_never_scored_by_the_earlier_one = (
    one_owner.test_a_session_closed_by_a_later_life_is_never_scored_by_the_earlier_one
)
test_without_durable_sessions_a_later_life_fences_the_earlier_one_out = (
    one_owner.test_without_durable_sessions_a_later_life_fences_the_earlier_one_out
)
test_a_session_moves_whole_between_two_lives_that_both_serve_it = (
    one_owner.test_a_session_moves_whole_between_two_lives_that_both_serve_it
)
test_a_released_agent_run_session_is_not_brought_back_by_the_life_that_held_it = (
    one_owner.test_a_released_agent_run_session_is_not_brought_back_by_the_life_that_held_it
)
