"""The live progress line on stderr: redrawn in place on a terminal, a plain line every few seconds otherwise
(CI logs), and a last line at the end."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from finsec_client.records import EpisodeRecord

__all__ = ["BAR_WIDTH", "clock", "Progress"]

BAR_WIDTH = 24


def clock(seconds: float) -> str:
    """1h02m, 3m05s, 42s."""
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{seconds:02d}s" if minutes else f"{seconds}s"


class Progress:
    def __init__(
        self, total: int, stream: TextIO | None = None, *, interval: float | None = None, clock=time.monotonic
    ):
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.interval = interval if interval is not None else (0.1 if self.tty else 5.0)
        self._clock = clock
        self._started = clock()
        self._shown = self._started
        self.done = self.scored = self.masked = self.failed = 0
        self._reward = 0.0

    def update(self, record: EpisodeRecord) -> None:
        self.done += 1
        if record.failure is not None:
            self.failed += 1
        elif record.masked:
            self.masked += 1
        else:
            self.scored += 1
            self._reward += record.reward or 0.0
        now = self._clock()
        if now - self._shown >= self.interval:
            self._shown = now
            self._show(final=False)

    def line(self) -> str:
        elapsed = max(self._clock() - self._started, 1e-9)
        filled = int(BAR_WIDTH * self.done / self.total) if self.total else BAR_WIDTH
        mean = f"{self._reward / self.scored:.3f}" if self.scored else "-"
        rate = self.done / elapsed
        eta = f"  ETA {clock(max(0, self.total - self.done) / rate)}" if rate and self.done < self.total else ""
        return (
            f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {self.done}/{self.total} episodes  "
            f"{rate:.1f}/s  mean reward {mean}  masked {self.masked}  failed {self.failed}{eta}"
        )

    def close(self) -> None:
        self._show(final=True)

    def _show(self, final: bool) -> None:
        if self.tty:
            self.stream.write("\r\033[K" + self.line() + ("\n" if final else ""))
        else:
            self.stream.write(self.line() + "\n")
        self.stream.flush()
