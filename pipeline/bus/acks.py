"""What a producer's transport has acknowledged, and how long the rest has waited: the producer
state every bus reports the same way (:meth:`pipeline.bus.base.Producer.health`), so a role's
health says when its messages are stuck (a broker died and its partitions have no leader yet,
every broker is away) and how long that lasted.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any


def reason(exc: BaseException) -> str:
    """An exception as one line: its type and message."""
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class AckClock:
    """What a producer's brokers have acknowledged, and how long the unacknowledged wait.

    A stall is a time with messages sent and no ack: it starts at the later of the last ack and
    the send that found nothing pending, and ends at the next ack."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self.sent = self.acked = self.failed = 0
        self.longest_stall_s = 0.0
        self.last_error = ""
        self._last_ack = clock()
        self._waiting_since: float | None = None

    def on_send(self) -> None:
        with self._lock:
            if self.sent == self.acked + self.failed:
                self._waiting_since = self._clock()
            self.sent += 1

    def on_ack(self, _metadata: Any = None) -> None:
        with self._lock:
            now = self._clock()
            if self._waiting_since is not None:
                stall = now - max(self._last_ack, self._waiting_since)
                self.longest_stall_s = max(self.longest_stall_s, stall)
            self.acked += 1
            self._last_ack = now
            self._waiting_since = now if self.sent > self.acked + self.failed else None

    def on_error(self, exc: BaseException) -> None:
        with self._lock:
            self.failed += 1
            self.last_error = reason(exc)
            if self.sent == self.acked + self.failed:
                self._waiting_since = None

    def stalled_s(self) -> float:
        """How long the pending messages have waited for an ack now (0: none pending)."""
        with self._lock:
            if self._waiting_since is None:
                return 0.0
            return self._clock() - max(self._last_ack, self._waiting_since)

    def health(self) -> dict[str, Any]:
        """``sent``, ``acked``, ``failed``, ``pending``; ``stalled_s``: how long the pending
        have waited for an ack (0 when none); ``longest_stall_s``: the longest such wait since
        the producer started; ``last_ack_age_s``; ``last_error``: why the last failed one
        failed."""
        stalled = self.stalled_s()
        with self._lock:
            return {"sent": self.sent, "acked": self.acked, "failed": self.failed,
                    "pending": self.sent - self.acked - self.failed,
                    "stalled_s": round(stalled, 3),
                    "longest_stall_s": round(max(self.longest_stall_s, stalled), 3),
                    "last_ack_age_s": round(self._clock() - self._last_ack, 3),
                    "last_error": self.last_error}
