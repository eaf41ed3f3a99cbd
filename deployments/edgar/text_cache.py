"""The parsed text of SEC filings, shared by every replica: one parse of a filing serves every rollout.

A filing is immutable once filed, so its text can be kept for the application's life. Each replica keeps
its own small LRU in front of this actor; the actor holds up to `max_chars` of text, evicting the least
recently used. Moving a filing's text from the actor costs about a millisecond; parsing it costs 0.1-0.3 s.
"""

from __future__ import annotations

from collections import OrderedDict

import ray
from ray.exceptions import ActorUnavailableError, RayActorError


@ray.remote(num_cpus=0, max_restarts=-1)
class TextCacheActor:
    def __init__(self, max_chars: int):
        self._texts: OrderedDict[str, str] = OrderedDict()
        self._chars = 0
        self._max_chars = max_chars
        self._hits = self._misses = 0

    async def get(self, url: str) -> str | None:
        text = self._texts.get(url)
        if text is None:
            self._misses += 1
            return None
        self._hits += 1
        self._texts.move_to_end(url)
        return text

    async def put(self, url: str, text: str) -> None:
        if url in self._texts or len(text) > self._max_chars:
            return
        self._texts[url] = text
        self._chars += len(text)
        while self._chars > self._max_chars:
            _, dropped = self._texts.popitem(last=False)
            self._chars -= len(dropped)

    async def stats(self) -> dict:
        return {"documents": len(self._texts), "chars": self._chars, "hits": self._hits, "misses": self._misses}


class SharedTextCache:
    """The replica's handle on the app's one cache actor (named and detached, created by whichever replica
    comes first)."""

    ACTOR_NAME = "filing-text-cache"

    def __init__(self, namespace: str, max_chars: int):
        self._actor = TextCacheActor.options(
            name=self.ACTOR_NAME, namespace=namespace, lifetime="detached", get_if_exists=True
        ).remote(max_chars)

    async def get(self, url: str) -> str | None:
        try:
            return await self._actor.get.remote(url)
        except (RayActorError, ActorUnavailableError):  # a cache that is restarting is a miss
            return None

    async def put(self, url: str, text: str) -> None:
        try:
            await self._actor.put.remote(url, text)
        except (RayActorError, ActorUnavailableError):
            pass
