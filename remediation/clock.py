"""The clock remediation's timers run on: event time, with a wall-clock fallback when idle.

Event time is the watermark of what the router has seen: the newest sample timestamp on the
samples topic and the newest alert update. In a scenario compressed with ``--speed 20`` the
watermark runs twenty times faster than the wall clock, so ``group_wait: 30s`` means thirty
*simulated* seconds, as it must. In a live fabric the watermark tracks the wall clock, one sample
interval behind.

The clock also keeps the recent steps of its watermark (:meth:`EventClock.reached`), so a job
that runs late, its thread busy while the stream moved on, still acts at the event time its
deadline was passed rather than at the time it got to run.

When nothing arrives for ``idle_after`` seconds of wall time (telemetry is down, or a quiet test
bus), the clock goes on from the last watermark at wall-clock pace, so repeats and timeouts still
fire; when data returns with older timestamps the clock does not step back (it is monotonic).
With ``time: wall`` the clock is simply the wall clock.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Callable

NS = 1_000_000_000
#: watermark steps kept for :meth:`EventClock.reached` (the oldest half is dropped past this)
STEPS_KEPT = 4096


class EventClock:
    def __init__(self, mode: str = "event", idle_after_s: float = 10.0,
                 wall_ns: Callable[[], int] = time.time_ns,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.mode = mode
        self.idle_after_s = idle_after_s
        self._wall_ns = wall_ns
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._watermark_ns = 0
        self._seen_at = monotonic()
        self._last_now = 0
        self._steps: list[int] = []  # the watermark's values as it advanced, ascending
        self._trimmed = False

    def observe(self, event_ns: int) -> None:
        """Advance the watermark with an event timestamp (older ones are ignored)."""
        with self._lock:
            self._seen_at = self._monotonic()
            if event_ns > self._watermark_ns:
                self._watermark_ns = event_ns
                self._steps.append(event_ns)
                if len(self._steps) > STEPS_KEPT:
                    del self._steps[:STEPS_KEPT // 2]
                    self._trimmed = True

    def reached(self, deadline_ns: int) -> int | None:
        """The watermark's first value at or past ``deadline_ns``: the event time at which the
        stream passed it. None when it has not been passed yet, or passed before the steps kept
        (the caller then uses :meth:`now_ns`)."""
        with self._lock:
            i = bisect.bisect_left(self._steps, deadline_ns)
            if i == len(self._steps) or (i == 0 and self._trimmed):
                return None
            return self._steps[i]

    @property
    def watermark_ns(self) -> int:
        return self._watermark_ns

    @property
    def started(self) -> bool:
        """True once any event time is known (the event clock has nothing to say before)."""
        return self.mode == "wall" or self._watermark_ns > 0

    def wall_offset_ns(self) -> int:
        """The fabric clock's offset from this host's wall clock: ``wall = event + offset``
        (0 while no event time is known, or with ``time: wall``). A receiver is told times on
        its own clock through it: in a live fabric it is about the samples' delay; in a run
        compressed twenty-fold, "now" in event time is "now" for the receiver, and an event 30 s
        of event time ago was 30 s ago."""
        now = self.now_ns()
        return self._wall_ns() - now if self.mode == "event" and self._watermark_ns else 0

    def now_ns(self) -> int:
        """The clock; before any event time is known, the wall clock stands in (not latched, so
        a first event time older than the wall clock is not hidden by it)."""
        with self._lock:
            if self.mode == "wall":
                now = self._wall_ns()
            elif not self._watermark_ns:
                return self._wall_ns()
            else:
                now = self._watermark_ns
                idle = self._monotonic() - self._seen_at
                if self._watermark_ns and idle > self.idle_after_s:
                    now += int((idle - self.idle_after_s) * NS)
            self._last_now = max(self._last_now, now)
            return self._last_now
