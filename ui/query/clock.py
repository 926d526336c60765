"""The fabric's clock as the read side sees it, and whether telemetry is still arriving.

"Now" for a query is the newest sample's event time in the store, not this process's wall clock:
the platform runs on event time (a lab at ``--speed``, a replay, a back-fill), and "the last 15
minutes" must mean the last 15 minutes of the fabric. With an empty store it falls back to the wall
clock. Silence is measured in wall time: how long since the data clock last moved, as this process
observed it (at first sight, how far the newest sample lags the wall clock).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from pipeline.store.base import Store
from ui.query.views import Clock

WallClock = Callable[[], int]


@dataclass
class _Seen:
    latest_ns: int | None
    asked_wall_ns: int
    moved_wall_ns: int


class FabricClock:
    """Caches the newest event time for ``cache_s`` and tracks when it last advanced."""

    def __init__(self, store: Store, wall: WallClock = time.time_ns, cache_s: float = 0.5,
                 silent_after_s: float = 30.0) -> None:
        self._store = store
        self._wall = wall
        self._cache_ns = int(cache_s * 1e9)
        self.silent_after_s = silent_after_s
        self._lock = threading.Lock()
        self._seen: _Seen | None = None

    def _latest_sample_ns(self) -> int | None:
        d = self._store.dialect
        # the bare column (not an expression of it): the engine answers from part metadata
        cols = self._store.query(
            f"SELECT max({d.stored('ts')}) AS t, count() AS n FROM {self._store.database}.samples")
        if not len(cols["n"]) or int(cols["n"][0]) == 0:
            return None
        return int(cols["t"][0])

    def refresh(self, force: bool = False) -> _Seen:
        wall = self._wall()
        with self._lock:
            seen = self._seen
            if seen is not None and not force and wall - seen.asked_wall_ns < self._cache_ns:
                return seen
            latest = self._latest_sample_ns()
            if seen is None:
                lag = max(0, wall - latest) if latest is not None else 0
                seen = _Seen(latest, wall, wall - lag)
            elif latest != seen.latest_ns:
                seen = _Seen(latest, wall, wall)
            else:
                seen = _Seen(latest, wall, seen.moved_wall_ns)
            self._seen = seen
            return seen

    def now(self) -> Clock:
        seen = self.refresh()
        if seen.latest_ns is None:
            return Clock(now_ns=seen.asked_wall_ns, latest_sample_ns=None,
                         wall_ns=seen.asked_wall_ns, source="wall")
        return Clock(now_ns=seen.latest_ns, latest_sample_ns=seen.latest_ns,
                     wall_ns=seen.asked_wall_ns, source="data")

    def silent_s(self) -> float | None:
        """Wall seconds since the data clock last moved; None with no data at all."""
        seen = self.refresh()
        if seen.latest_ns is None:
            return None
        return max(0.0, (seen.asked_wall_ns - seen.moved_wall_ns) / 1e9)
