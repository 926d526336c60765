"""The event time an ingest consumer has reached, for the rollups: a low watermark over the
partitions it reads.

Each partition's data comes in order, but the partitions do not keep pace with one another (a
backlog after a pause, a replay, a slow broker): the newest sample of the fastest partition says
little about what the others still hold. The watermark is the oldest of the partitions' newest
event times, so a bucket the rollup job treats as complete has its samples from every
partition, and the job does not roll a bucket twice because one partition ran ahead. Two bounds
keep one partition from holding it back for ever: a partition that has sent nothing for
``idle_s`` (wall clock) no longer counts, and the watermark trails the fastest partition by at
most ``max_skew_s`` of event time (samples later than that re-roll their buckets as late ones).
"""

from __future__ import annotations

import threading
import time

import numpy as np
from numpy.typing import NDArray

NS = 1_000_000_000


class PartitionClock:
    """Per partition, the newest event time seen and when it was last heard from."""

    def __init__(self, idle_s: float = 30.0, max_skew_s: float = 300.0) -> None:
        self.idle_s = idle_s
        self.max_skew_ns = int(max_skew_s * NS)
        self._newest: dict[tuple[str, int], int] = {}
        self._heard: dict[tuple[str, int], float] = {}
        self._lock = threading.Lock()

    def saw(self, topic: str, partition: int, ts_ns: NDArray[np.int64]) -> None:
        """A message of ``ts_ns`` event times arrived from a partition."""
        key = (topic, partition)
        with self._lock:
            self._heard[key] = time.monotonic()
            if len(ts_ns):
                newest = int(ts_ns.max())
                if newest > self._newest.get(key, 0):
                    self._newest[key] = newest

    def watermark(self) -> int | None:
        """The event time every live partition has reached (None before any sample)."""
        now = time.monotonic()
        with self._lock:
            live = [ts for key, ts in self._newest.items()
                    if now - self._heard[key] <= self.idle_s]
        if not live:
            return None
        return max(min(live), max(live) - self.max_skew_ns)
