"""How fast one collector opens sessions: a fabric-wide reconnect is spread, never a storm.

Every session retries under :mod:`pipeline.retry` (exponential backoff, full jitter), so targets
that fail together do not retry together. That alone still lets a thousand sessions that dropped
at once (the collector's own network blipped, a fabric-wide restart) reconnect within the first
jittered delay. :class:`ConnectGate` is the collector-wide limit on top: at most ``rate`` connects
per second after a burst of ``burst``, handed out in order of asking (each caller is given its own
slot in time, so the connects are evenly spaced rather than released in bursts), and at most
``concurrent`` connects in progress at once (a target that takes its whole connect timeout holds
one slot, not the queue). Slot accounting is pure given its clock, so a test can check the spread
without timing anything.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


class ConnectGate:
    """A token bucket with reservations, plus a cap on connects in progress."""

    def __init__(self, rate: float, burst: int, concurrent: int,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = rate
        self.burst = max(1, burst)
        self.concurrent = max(1, concurrent)
        self._clock = clock
        self._tokens = float(self.burst)
        self._at = clock()
        self._slots: asyncio.Semaphore | None = None
        #: connects handed out so far
        self.granted = 0

    def reserve(self) -> float:
        """Take the next slot; how long (seconds) its holder must wait before connecting."""
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._at) * self.rate)
        self._at = now
        self._tokens -= 1.0
        self.granted += 1
        return 0.0 if self._tokens >= 0 else -self._tokens / self.rate

    async def acquire(self) -> None:
        """Wait for a slot in time and a free connect; pair with :meth:`release`."""
        wait = self.reserve()
        if wait > 0:
            await asyncio.sleep(wait)
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.concurrent)
        await self._slots.acquire()

    def release(self) -> None:
        if self._slots is not None:
            self._slots.release()
