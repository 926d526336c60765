"""Pacing the simulation against the wall clock, in a child process (default) or a thread.

:func:`serve_simulation` is the simulator's main loop: it builds the :class:`Simulation`, publishes
a snapshot at every statistics tick through :class:`~lab.sim.snapshot_ring.SharedBlock`, applies
control
commands from a pipe between steps, and keeps simulated time at ``(wall - t0) * speed``. When the
machine cannot keep up it runs flat out and simulated time lags the target; the agents timestamp
with the simulated time actually reached, so telemetry stays self-consistent at any pace.

Running the simulator in its own process keeps its numpy work off the agents' GIL (measured in
``docs/lab.md``); thread mode exists for debugging and for single-process embedding.

Commands (tuples): ``("go", t0_monotonic)``, ``("admin", seq, port, up)``,
``("drain", seq, link, drained)``, ``("te", seq, member, down[, up, agg])``,
``("reset", seq, device)``, ``("stop",)``. ``seq`` is echoed in the control block once applied.
"""

from __future__ import annotations

import contextlib
import time
import traceback
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from lab import counters as cf
from lab.buffers import BufferProfile
from lab.counters import Layout
from lab.scenario.spec import Scenario
from lab.sim.simulation import DEFAULT_DT, DEFAULT_TICK, Simulation, active_priorities
from lab.sim.snapshot_ring import (
    C_APPLIED,
    C_LIVE_TIME,
    C_STATE,
    C_STEPS,
    STATE_DONE,
    STATE_FAILED,
    STATE_READY,
    STATE_RUNNING,
    SharedBlock,
)
from lab.wiring import Wiring
from pipeline.errors import LabError

_MAX_SLEEP_S = 0.005


def published_layout(scenario: Scenario, wiring: Wiring, buffers: BufferProfile) -> Layout:
    """The layout of the snapshots the simulator publishes and the agents read: every port and
    device, the active priorities only."""
    return Layout.of(wiring, active_priorities(scenario, buffers))


@dataclass(frozen=True)
class SimOptions:
    speed: float = 10.0
    dt: float = DEFAULT_DT
    tick_s: float = DEFAULT_TICK
    buffers: BufferProfile = field(default_factory=BufferProfile)
    dcqcn: bool = False


def serve_simulation(scenario: Scenario, options: SimOptions, shm_name: str, size: int,
                     slots: int, conn: Connection, in_thread: bool = False) -> None:
    """Entry point of the simulator process/thread; returns when told to stop."""
    block = SharedBlock(size, name=shm_name, slots=slots, other_process=not in_thread)
    try:
        sim = Simulation(scenario, dt=options.dt, tick_s=options.tick_s, buffers=options.buffers,
                         dcqcn=options.dcqcn)
        layout = published_layout(scenario, sim.wiring, options.buffers)
        if layout.size != size:
            raise LabError(f"snapshot sizes disagree ({layout.size} here, {size} in the lab)")
        _Loop(sim, options, block, conn, layout).run()
    except Exception:
        block.ctrl[C_STATE] = STATE_FAILED
        with contextlib.suppress(OSError):
            conn.send(("error", traceback.format_exc()))
    finally:
        block.close()


class _Loop:
    def __init__(self, sim: Simulation, options: SimOptions, block: SharedBlock,
                 conn: Connection, layout: Layout) -> None:
        self.sim = sim
        self.layout = layout
        self.speed = options.speed
        self.block = block
        self.conn = conn
        self.t0: float | None = None
        self.stopping = False

    def run(self) -> None:
        sim, block = self.sim, self.block
        self._publish()
        block.ctrl[C_STATE] = STATE_READY
        while not self.stopping:
            self._drain_commands(wait=0.0 if self.t0 is not None else _MAX_SLEEP_S)
            if self.t0 is None:
                continue
            if sim.done:
                block.ctrl[C_STATE] = STATE_DONE
                self._drain_commands(wait=0.05)
                continue
            target = (time.monotonic() - self.t0) * self.speed
            due = int((target - sim.t) / sim.dt + 1e-9)
            if due <= 0:
                wait = (sim.t + sim.dt - target) / self.speed
                time.sleep(min(max(wait, 0.0), _MAX_SLEEP_S))
                continue
            # a bounded batch, so commands stay responsive when the simulator lags
            for _ in range(min(due, 50)):
                sim.step()
                block.ctrl[C_LIVE_TIME] = sim.t
                block.ctrl[C_STEPS] = sim.steps
                if sim.steps % sim.tick_steps == 0:
                    self._publish()
                if sim.done:
                    break

    def _publish(self) -> None:
        self.block.publish(self.sim.counters.published(self.layout))

    def _drain_commands(self, wait: float) -> None:
        if not self.conn.poll(wait):
            return
        while True:
            try:
                cmd = self.conn.recv()
            except EOFError:
                self.stopping = True
                return
            self._apply(cmd)
            if self.stopping or not self.conn.poll():
                return

    def _apply(self, cmd: tuple[Any, ...]) -> None:
        sim = self.sim
        kind = cmd[0]
        if kind == "stop":
            self.stopping = True
            return
        if kind == "go":
            self.t0 = float(cmd[1])
            self.block.ctrl[C_STATE] = STATE_RUNNING
            return
        seq = cmd[1]
        if kind == "admin":
            sim.set_admin(int(cmd[2]), bool(cmd[3]))
        elif kind == "drain":
            sim.set_drained(int(cmd[2]), bool(cmd[3]))
        elif kind == "te":
            sim.set_te_paths(*cmd[2:])
        elif kind == "reset":
            sim.reset_device(int(cmd[2]))
        sim.counters.header[cf.H_APPLIED] = seq
        self._publish()
        self.block.ctrl[C_APPLIED] = seq
