"""Session ID -> partition -> shard. Stable across processes and restarts (Python's hash() is salted per process).

An ID's *partition* is fixed forever (the top 12 bits of its blake2b digest); a shard owns a contiguous range of
partitions, whatever the shard count. Durable marks are keyed by partition, so a shard that settles lists only
the partitions it owns (`owned_partitions`), never the whole application's marks.
"""

import hashlib

__all__ = ["hex_prefixes", "owned_partitions", "partition", "PARTITIONS", "shard_index", "shard_of_partition"]

PARTITIONS = 4096  # 3 hex digits; the most shards an application may have


def partition(session_id: str) -> int:
    digest = hashlib.blake2b(session_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> (64 - 12)


def shard_of_partition(part: int, num_shards: int) -> int:
    return part * num_shards // PARTITIONS


def shard_index(session_id: str, num_shards: int) -> int:
    return shard_of_partition(partition(session_id), num_shards)


def owned_partitions(index: int, num_shards: int) -> range:
    """The partitions p with shard_of_partition(p, num_shards) == index."""
    return range(-(-index * PARTITIONS // num_shards), -(-(index + 1) * PARTITIONS // num_shards))


def hex_prefixes(parts: range, min_digits: int = 2) -> list[str]:
    """The fewest hex prefixes (of at least `min_digits` digits, so that no one listing is a large share of
    every mark) whose 3-digit partitions are exactly `parts`."""
    found: list[str] = []

    def cover(value: int, digits: int) -> None:
        size = 16 ** (3 - digits)
        start, end = value * size, (value + 1) * size
        if end <= parts.start or start >= parts.stop:
            return
        if digits >= min_digits and parts.start <= start and end <= parts.stop:
            found.append(format(value, f"0{digits}x"))
            return
        for d in range(16):
            cover(value * 16 + d, digits + 1)

    cover(0, 0)
    return found
