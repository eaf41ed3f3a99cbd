"""`RaySessionStore`: the `SessionStore` whose shards are the named shard actors."""

from __future__ import annotations

from typing import Any

from ray.exceptions import ActorDiedError, ActorUnavailableError, RayTaskError

from .actors import SessionActorsSpec, ensure_session_actors
from .errors import StoreUnavailable
from .store import SessionStore


class RaySessionStore(SessionStore):
    def __init__(self, spec: SessionActorsSpec):
        self.spec = spec
        self.num_shards = spec.num_shards
        self._shards = ensure_session_actors(spec)

    async def _call(self, shard: int, method: str, *args: Any) -> Any:
        try:
            return await getattr(self._shards[shard], method).remote(*args)
        except RayTaskError as error:  # the shard raised: hand its own session error to the caller
            raise error.cause from None
        except (ActorUnavailableError, ActorDiedError) as error:
            raise StoreUnavailable(
                f"Session-store shard {shard} is not answering (restarting?); retry the request shortly."
            ) from error
