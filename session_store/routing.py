"""Session ID -> shard index. Stable across processes and restarts (Python's hash() is salted per process)."""

import hashlib


def shard_index(session_id: str, num_shards: int) -> int:
    digest = hashlib.blake2b(session_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % num_shards
