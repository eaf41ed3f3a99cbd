"""The direct shard transport: an ingress replica's batches reach a shard over one TCP connection of its own,
not through a Ray actor call. The shard actor stays what Ray manages (its lifecycle, placement and restarts) and
what tells a replica where to connect (`endpoint()`, a Ray call made once per connection).

Why: a Ray actor call costs the caller and the shard far more CPU than the same batch over a socket does
(docs/benchmarks.md). Ray-free; `ray_actors` and `ray_store` wire it.

- `frames`: the framing and the handshake;
- `server`: the shard's side, serving `ShardService.run` on a port;
- `channel`: the replica's side, one connection per shard, reconnecting after a failure.
"""

from .channel import ShardChannel
from .frames import Endpoint
from .server import DirectServer

__all__ = ["DirectServer", "Endpoint", "ShardChannel"]
