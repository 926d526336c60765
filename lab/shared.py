"""Publishing snapshots from the simulation to the agents through shared memory.

The simulation writes each statistics tick's snapshot into one of two slots of a
:class:`multiprocessing.shared_memory.SharedMemory` block and then flips the *current* index; each
slot carries a sequence number that is odd while being written (a seqlock). Readers copy the
current slot and retry if the writer touched it meanwhile, so a reader never sees a torn snapshot
and the writer never waits. The same block works whether the simulation runs in a child process
or in a thread.

Block layout (float64): ``[current slot, live sim time, applied command seq, reserved...]`` then
``slot 0: [seq, snapshot...]`` and ``slot 1: [seq, snapshot...]``.
"""

from __future__ import annotations

import time
from multiprocessing import resource_tracker, shared_memory

import numpy as np
from numpy.typing import NDArray

from pipeline.errors import LabError

_CTRL = 8
C_CURRENT, C_LIVE_TIME, C_APPLIED, C_STEPS, C_STATE = range(5)
STATE_BUILDING, STATE_READY, STATE_RUNNING, STATE_DONE, STATE_FAILED = range(5)


class SharedBlock:
    """Owner or attacher of the block; ``size`` is the snapshot vector length."""

    def __init__(self, size: int, name: str | None = None) -> None:
        self.size = size
        nbytes = (_CTRL + 2 * (size + 1)) * 8
        self._owner = name is None
        self.shm = (shared_memory.SharedMemory(create=True, size=nbytes) if name is None
                    else shared_memory.SharedMemory(name=name))
        if name is not None:
            # Python 3.11 registers attached blocks too, and would unlink the owner's block when
            # this process exits; only the owner may do that.
            resource_tracker.unregister(self.shm._name, "shared_memory")  # type: ignore[attr-defined]
        self.arr: NDArray[np.float64] = np.ndarray((_CTRL + 2 * (size + 1),), dtype=np.float64,
                                                   buffer=self.shm.buf)
        if self._owner:
            self.arr[:] = 0.0
        self.ctrl = self.arr[:_CTRL]
        self._slots = [self.arr[_CTRL + i * (size + 1):_CTRL + (i + 1) * (size + 1)]
                       for i in range(2)]

    @property
    def name(self) -> str:
        return self.shm.name

    def publish(self, vector: NDArray[np.float64]) -> None:
        cur = int(self.ctrl[C_CURRENT])
        slot = self._slots[1 - cur]
        seq = slot[0]
        slot[0] = seq + 1          # odd: being written
        slot[1:] = vector
        slot[0] = seq + 2
        self.ctrl[C_CURRENT] = 1 - cur

    def version(self) -> float:
        """Changes whenever a new snapshot is published (cheap: no copy)."""
        cur = int(self.ctrl[C_CURRENT])
        return float(self._slots[cur][0]) * 2 + cur

    def read(self, timeout_s: float = 1.0) -> NDArray[np.float64]:
        deadline = time.monotonic() + timeout_s
        while True:
            slot = self._slots[int(self.ctrl[C_CURRENT])]
            before = slot[0]
            if before % 2 == 0:
                out = slot[1:].copy()
                if slot[0] == before:
                    return out
            if time.monotonic() > deadline:
                raise LabError("the simulation's snapshot stayed busy; is the simulator stuck?")

    def close(self) -> None:
        # drop our views first: SharedMemory refuses to close while numpy still exports its buffer
        self._slots = []
        self.ctrl = np.zeros(0)
        self.arr = np.zeros(0)
        self.shm.close()
        if self._owner:
            self.shm.unlink()
