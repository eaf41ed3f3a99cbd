"""The direct shard transport (session_store/direct/) over real loopback sockets, Ray-free: batches and their
session errors cross it as they would an actor call, a stranger without the token gets nothing unpickled, and
every failure (the shard's process gone, no answer in time, a shard that moved) is a 503 the next batch
recovers from by looking the shard up again."""

from __future__ import annotations

import asyncio
import socket

import pytest

from session_store import SessionConflict, ShardConfig, ShardService, StoreUnavailable
from session_store.core import EpisodeSeed
from session_store.direct import DirectServer, ShardChannel
from session_store.direct import server as server_module
from session_store.direct.frames import HEADER, TOKEN_BYTES, encode

HOST = "127.0.0.1"
SID = "resources-session-" + "a" * 32


class Shard:
    """A real shard service behind a real server; `restart` is a new process life (new port, new token)."""

    def __init__(self):
        self.service = ShardService(ShardConfig(session_ttl_seconds=60))
        self.server = DirectServer(self.service.run, HOST)
        self.resolved = 0

    async def resolve(self):
        self.resolved += 1
        return await self.server.start()

    async def restart(self) -> None:
        await self.server.close()
        self.service = ShardService(ShardConfig(session_ttl_seconds=60))
        self.server = DirectServer(self.service.run, HOST)


def held(shard: Shard) -> asyncio.Event:
    """Make the shard's batches wait until the returned event is set."""
    release, real_run = asyncio.Event(), shard.service.run

    async def waiting(ops):
        await release.wait()
        return await real_run(ops)

    shard.server._run = waiting
    return release


def channel(shard: Shard, timeout: float = 5.0) -> ShardChannel:
    return ShardChannel(shard.resolve, timeout=timeout, what="shard 0")


async def raw(endpoint):
    return await asyncio.open_connection(endpoint.host, endpoint.port)


def seed(n: int = 0) -> EpisodeSeed:
    return EpisodeSeed({"rollout_id": f"r{n}", "attempt": 0}, {"taskset": "fin", "task_id": "t"}, "d" * 64)


def test_batches_and_their_session_errors_cross_as_they_would_an_actor_call():
    async def scenario():
        shard = Shard()
        ch = channel(shard)
        first = await ch.send([("seed_episode", (SID, seed(1))), ("seed_episode", (SID, seed(2)))])
        assert first[0][0] is True
        ok, error = first[1]  # a second episode on the same ID: §C.2's conflict, raised at the caller as its type
        assert ok is False and isinstance(error, SessionConflict)
        await ch.send([("close", (SID, seed(1).episode_id))])
        assert (await ch.send([("describe", (SID,))]))[0][1]["fenced"] is True
        assert shard.resolved == 1  # one lookup, one connection, for every batch
        await shard.server.close()

    asyncio.run(scenario())


def test_concurrent_first_batches_share_one_connection():
    async def scenario():
        shard = Shard()
        ch = channel(shard)
        await asyncio.gather(*(ch.send([("describe", (f"{SID}{n}",))]) for n in range(50)))
        assert shard.resolved == 1
        await shard.server.close()

    asyncio.run(scenario())


def test_nothing_is_unpickled_for_a_peer_without_the_token():
    ran: list[str] = []

    class Payload:
        def __reduce__(self):
            return (ran.append, ("unpickled",))

    async def scenario():
        shard = Shard()
        endpoint = await shard.server.start()
        reader, writer = await raw(endpoint)
        writer.write(b"\x00" * TOKEN_BYTES + encode(1, Payload()))
        assert await asyncio.wait_for(reader.read(), 2) == b""  # dropped, with no ACK and no answer
        await shard.server.close()

    asyncio.run(scenario())
    assert ran == []


def test_a_silent_peer_is_dropped_after_the_handshake_time(monkeypatch):
    monkeypatch.setattr(server_module, "HANDSHAKE_SECONDS", 0.2)

    async def scenario():
        shard = Shard()
        reader, _ = await raw(await shard.server.start())
        assert await asyncio.wait_for(reader.read(), 2) == b""
        await shard.server.close()

    asyncio.run(scenario())


def test_silent_peers_past_the_cap_push_out_the_oldest_and_a_replica_still_gets_through(monkeypatch):
    monkeypatch.setattr(server_module, "MAX_HANDSHAKING", 4)

    async def scenario():
        shard = Shard()
        endpoint = await shard.server.start()
        silent = [await raw(endpoint) for _ in range(10)]
        await asyncio.sleep(0.1)
        assert len(shard.server._handshaking) == 4
        dropped = [await asyncio.wait_for(reader.read(), 2) == b"" for reader, _ in silent[:6]]
        assert all(dropped)  # the six oldest were pushed out; the handshake timeout (5 s) was not waited for
        outcome = await channel(shard).send([("describe", (SID,))])  # a replica's own handshake completes
        assert outcome[0][0] is True
        assert len(shard.server._handshaking) <= 4 and shard.server.connections == 1
        await shard.server.close()

    asyncio.run(scenario())


def test_connections_with_the_token_past_the_cap_are_refused_with_a_503(monkeypatch):
    monkeypatch.setattr(server_module, "MAX_CONNECTIONS", 2)

    async def scenario():
        shard = Shard()
        kept = [channel(shard), channel(shard)]
        for ch in kept:
            await ch.send([("describe", (SID,))])
        with pytest.raises(StoreUnavailable):
            await channel(shard).send([("describe", (SID,))])
        assert shard.server.connections == 2
        assert (await kept[0].send([("describe", (SID,))]))[0][0] is True  # the others are untouched
        await shard.server.close()

    asyncio.run(scenario())


def test_an_oversized_frame_drops_the_connection_and_nothing_else():
    async def scenario():
        shard = Shard()
        endpoint = await shard.server.start()
        reader, writer = await raw(endpoint)
        writer.write(endpoint.token + HEADER.pack(2**32 - 1, 1))
        assert await asyncio.wait_for(reader.read(), 2) == b"\x01"  # the ACK, then the end: no 4 GiB read was attempted
        assert (await channel(shard).send([("describe", (SID,))]))[0][0] is True
        await shard.server.close()

    asyncio.run(scenario())


def test_a_shard_process_that_dies_fails_its_batch_and_the_next_finds_the_new_one():
    async def scenario():
        shard = Shard()
        ch = channel(shard)
        await ch.send([("seed_episode", (SID, seed()))])
        old = await shard.server.start()
        held(shard)  # the shard dies with this batch in flight
        in_flight = asyncio.create_task(ch.send([("describe", (SID,))]))
        await asyncio.sleep(0.1)
        await shard.restart()
        with pytest.raises(StoreUnavailable) as failed:
            await in_flight
        assert failed.value.cause == "actor_unreachable"
        outcome = await ch.send([("describe", (SID,))])  # the new life: found by a new lookup, on a new port
        assert (await shard.server.start()).port != old.port and shard.resolved == 2
        assert outcome[0][1]["open"] is False  # and it does not know the old life's session (the core's rules)
        await shard.server.close()

    asyncio.run(scenario())


def test_no_answer_in_time_is_a_503_and_the_connection_is_not_trusted_again():
    async def scenario():
        shard = Shard()
        ch = channel(shard, timeout=0.3)
        await ch.send([("describe", (SID,))])
        real_run = shard.server._run
        release = held(shard)
        with pytest.raises(StoreUnavailable, match="within 0.3 s"):
            await ch.send([("describe", (SID,))])
        shard.server._run = real_run
        release.set()
        assert (await ch.send([("describe", (SID,))]))[0][0] is True
        assert shard.resolved == 2  # a half-open connection (its node gone) would never answer: looked up again
        await shard.server.close()

    asyncio.run(scenario())


def test_an_unreachable_shard_is_a_503_not_an_error_of_the_replica():
    async def scenario():
        with socket.socket() as s:
            s.bind((HOST, 0))
            port = s.getsockname()[1]  # closed again: nothing listens there

        async def resolve():
            from session_store.direct import Endpoint

            return Endpoint(HOST, port, b"t" * TOKEN_BYTES)

        with pytest.raises(StoreUnavailable, match="refused a connection"):
            await ShardChannel(resolve, timeout=2, what="shard 0").send([("describe", (SID,))])

    asyncio.run(scenario())


def test_a_bug_in_a_batch_is_a_503_for_that_batch_only():
    async def scenario():
        shard = Shard()
        ch = channel(shard)
        real_run = shard.service.run

        async def broken(ops):
            raise RuntimeError("boom")

        shard.server._run = broken
        with pytest.raises(StoreUnavailable, match="RuntimeError: boom") as failed:
            await ch.send([("describe", (SID,))])
        assert failed.value.cause == "internal"
        shard.server._run = real_run
        assert (await ch.send([("describe", (SID,))]))[0][0] is True and shard.resolved == 1
        await shard.server.close()

    asyncio.run(scenario())


def test_a_connection_lost_under_a_write_is_a_503_and_the_next_batch_reconnects():
    async def scenario():
        shard = Shard()
        ch = channel(shard)
        await ch.send([("describe", (SID,))])

        async def lost():  # the shard's side reset before the reader saw the end of the stream
            raise ConnectionResetError("reset by peer")

        ch._connection._writer.drain = lost
        with pytest.raises(StoreUnavailable, match="connection was lost") as failed:
            await ch.send([("describe", (SID,))])
        assert failed.value.cause == "actor_unreachable"
        assert (await ch.send([("describe", (SID,))]))[0][0] is True and shard.resolved == 2
        await shard.server.close()

    asyncio.run(scenario())


def test_a_batch_too_large_to_frame_is_refused_without_dropping_the_connection(monkeypatch):
    from session_store.direct import frames

    async def scenario():
        shard = Shard()
        ch = channel(shard)
        await ch.send([("describe", (SID,))])
        monkeypatch.setattr(frames, "MAX_FRAME", 10)
        with pytest.raises(StoreUnavailable, match="at most 10") as failed:
            await ch.send([("describe", (SID,))])
        assert failed.value.cause == "internal"
        monkeypatch.undo()
        assert (await ch.send([("describe", (SID,))]))[0][0] is True and shard.resolved == 1
        await shard.server.close()

    asyncio.run(scenario())
