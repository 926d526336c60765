"""Publishing snapshots from the simulation to the agents through shared memory.

The simulation publishes each statistics tick's snapshot into a ring of slots in a
:class:`multiprocessing.shared_memory.SharedMemory` block; publication ``n`` goes to slot
``n % slots`` and the control block's publication counter then moves to ``n``. Each slot carries
a sequence number that is odd while being written (a seqlock) and the publication number it holds,
so a reader never sees a torn snapshot, the writer never waits, and a reader that fell behind can
still read every snapshot of the last ``slots`` ticks in order: samples are taken at the exact
simulated instant even when an agent gets to them late. The block works the same whether the
simulation runs in a child process or in a thread.

Layout (float64): ``[control (8)]`` then per slot ``[seq, publication, snapshot...]``.
"""

from __future__ import annotations

import time
from multiprocessing import resource_tracker, shared_memory

import numpy as np
from numpy.typing import NDArray

from pipeline.errors import LabError

_CTRL = 8
C_PUB, C_LIVE_TIME, C_APPLIED, C_STEPS, C_STATE = range(5)
STATE_BUILDING, STATE_READY, STATE_RUNNING, STATE_DONE, STATE_FAILED = range(5)
DEFAULT_SLOTS = 32
_SLOT_HEAD = 2


class SharedBlock:
    """Owner (``name`` None) or attacher of the block; ``size`` is the snapshot vector length."""

    def __init__(self, size: int, name: str | None = None, slots: int = DEFAULT_SLOTS,
                 other_process: bool = True) -> None:
        self.size = size
        self.slots = slots
        stride = size + _SLOT_HEAD
        total = _CTRL + slots * stride
        self._owner = name is None
        self.shm = (shared_memory.SharedMemory(create=True, size=total * 8) if name is None
                    else shared_memory.SharedMemory(name=name))
        if name is not None and other_process:
            # Python 3.11 registers attached blocks too, and would unlink the owner's block when
            # this process exits; only the owner may do that.
            resource_tracker.unregister(self.shm._name, "shared_memory")  # type: ignore[attr-defined]
        self.arr: NDArray[np.float64] = np.ndarray((total,), dtype=np.float64, buffer=self.shm.buf)
        if self._owner:
            self.arr[:] = 0.0
        self.ctrl = self.arr[:_CTRL]
        self._slots = [self.arr[_CTRL + i * stride:_CTRL + (i + 1) * stride]
                       for i in range(slots)]

    @property
    def name(self) -> str:
        return self.shm.name

    def latest(self) -> int:
        """The number of the last publication (0: nothing published yet)."""
        return int(self.ctrl[C_PUB])

    def publish(self, vector: NDArray[np.float64]) -> None:
        pub = self.latest() + 1
        slot = self._slots[pub % self.slots]
        seq = slot[0]
        slot[0] = seq + 1          # odd: being written
        slot[1] = pub
        slot[_SLOT_HEAD:] = vector
        slot[0] = seq + 2
        self.ctrl[C_PUB] = pub

    def read_pub(self, pub: int) -> NDArray[np.float64] | None:
        """A copy of publication ``pub``, or None if it has been overwritten."""
        slot = self._slots[pub % self.slots]
        for _ in range(1000):
            before = slot[0]
            if before % 2 == 0:
                if int(slot[1]) != pub:
                    return None
                out = slot[_SLOT_HEAD:].copy()
                if slot[0] == before:
                    return out
            time.sleep(0)
        raise LabError("the simulation's snapshot stayed busy; is the simulator stuck?")

    def read(self) -> NDArray[np.float64]:
        """A copy of the latest snapshot."""
        while True:
            got = self.read_pub(self.latest())
            if got is not None:
                return got

    def close(self) -> None:
        # drop our views first: SharedMemory refuses to close while numpy still exports its buffer
        self._slots = []
        self.ctrl = np.zeros(0)
        self.arr = np.zeros(0)
        self.shm.close()
        if self._owner:
            self.shm.unlink()
