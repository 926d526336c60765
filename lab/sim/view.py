"""The agents' side of the simulation: the latest snapshot, simulated time, and control commands.

One :class:`SimView` serves every agent in the process. A poller task on the agents' event loop
copies a snapshot out of shared memory whenever the simulation publishes a new one and wakes every
waiter, so a thousand subscriptions cost one copy per tick. Time is simulated time: a snapshot's
``time_s`` is the simulated second it was taken at, and its event time is
``epoch_ns + time_s * 1e9``, where ``epoch_ns`` is the wall clock when simulated time was 0.

:class:`SimControl` sends commands down the pipe (thread-safe) and lets a caller wait until the
simulation has applied one.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from multiprocessing.connection import Connection
from typing import Any

import numpy as np
from numpy.typing import NDArray

from lab import counters as cf
from lab.counters import Layout
from lab.sim.snapshot_ring import C_APPLIED, C_LIVE_TIME, SharedBlock
from pipeline.errors import LabError


class SimView:
    def __init__(self, block: SharedBlock, layout: Layout, epoch_ns: int, speed: float,
                 tick_s: float) -> None:
        self.block = block
        self.layout = layout
        self.epoch_ns = epoch_ns
        self.speed = speed
        self.tick_s = tick_s
        self.pub = block.latest()
        self.snapshot: NDArray[np.float64] = block.read()
        self.history: deque[tuple[int, NDArray[np.float64]]] = deque(
            [(self.pub, self.snapshot)], maxlen=block.slots)
        self._cond: asyncio.Condition | None = None
        self.overrun = 0        # snapshots overwritten before the agents read them

    @property
    def time_s(self) -> float:
        return float(self.snapshot[cf.H_TIME])

    @property
    def tick(self) -> int:
        return int(self.snapshot[cf.H_TICK])

    def ts_ns(self, snap: NDArray[np.float64] | None = None) -> int:
        s = self.snapshot if snap is None else snap
        return self.epoch_ns + round(float(s[cf.H_TIME]) * 1e9)

    def live_time(self) -> float:
        """Simulated time of the last completed step (finer than the snapshot's tick)."""
        return float(self.block.ctrl[C_LIVE_TIME])

    def uptime_s(self, device: int, snap: NDArray[np.float64] | None = None) -> float:
        s = self.snapshot if snap is None else snap
        return float(s[cf.H_TIME]) - float(s[self.layout.dev_index(device, cf.D_BOOT_S)])

    def refresh(self) -> bool:
        """Read every snapshot published since the last refresh; True if there were any."""
        latest = self.block.latest()
        if latest == self.pub:
            return False
        first = max(self.pub + 1, latest - self.block.slots + 1)
        self.overrun += first - (self.pub + 1)
        for pub in range(first, latest + 1):
            snap = self.block.read_pub(pub)
            if snap is not None:
                self.history.append((pub, snap))
        self.pub = latest
        self.snapshot = self.history[-1][1]
        return True

    async def poll_forever(self) -> None:
        self._cond = asyncio.Condition()
        period = max(self.tick_s / self.speed / 2.0, 0.001)
        while True:
            if self.refresh():
                async with self._cond:
                    self._cond.notify_all()
            await asyncio.sleep(period)

    async def snapshots_after(self, pub: int) -> list[tuple[int, NDArray[np.float64]]]:
        """Every snapshot published after ``pub`` (waiting for one), oldest first."""
        if self._cond is None:
            raise LabError("the snapshot poller is not running")
        while self.pub <= pub:
            async with self._cond:
                await self._cond.wait()
        return [(p, s) for p, s in self.history if p > pub]


class SimControl:
    def __init__(self, conn: Connection, block: SharedBlock) -> None:
        self._conn = conn
        self._block = block
        self._lock = threading.Lock()
        self._seq = 0

    def send(self, kind: str, *args: Any) -> int:
        with self._lock:
            self._seq += 1
            seq = self._seq
            self._conn.send((kind, seq, *args))
        return seq

    def send_raw(self, cmd: tuple[Any, ...]) -> None:
        with self._lock:
            self._conn.send(cmd)

    def applied(self) -> int:
        return int(self._block.ctrl[C_APPLIED])

    def wait_applied(self, seq: int, timeout_s: float = 5.0) -> None:
        deadline = time.monotonic() + timeout_s
        while self.applied() < seq:
            if time.monotonic() > deadline:
                raise LabError(f"the simulation did not apply command {seq} within {timeout_s}s")
            time.sleep(0.002)

    async def wait_applied_async(self, seq: int, timeout_s: float = 5.0) -> None:
        deadline = time.monotonic() + timeout_s
        while self.applied() < seq:
            if time.monotonic() > deadline:
                raise LabError(f"the simulation did not apply command {seq} within {timeout_s}s")
            await asyncio.sleep(0.002)
