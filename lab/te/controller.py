"""The TE controller's state machine: drains, link state, the traffic matrix, and programming.

It runs on the agents' event loop beside the device agents and learns what a real controller
would: link operational state from the network (the published snapshot) and the collective traffic
matrix (the scenario's flows, including fault-injected senders while they run). It programs the
simulation through the same command pipe the gNMI agents use. See ``docs/te-controller.md``.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from lab import counters as cf
from lab.buffers import BufferProfile
from lab.faults import FaultSchedule
from lab.routing import RouteInputs, Router
from lab.scenario.spec import Scenario
from lab.sim.view import SimControl, SimView
from lab.te.cspf import Plan, isolates, plan_paths
from lab.traffic import EntryTable, FlowTable, build_entries, build_flows
from lab.wiring import Wiring

WATCH_PERIOD_S = 0.1


class TeError(Exception):
    """A request the controller refuses; ``status`` is the HTTP status to answer with."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        super().__init__(body.get("error", ""))
        self.status = status
        self.body = body


@dataclass
class DrainRecord:
    reason: str
    requested_by: str
    evidence: Any
    at_s: float
    at_ns: int


class TeController:
    def __init__(self, scenario: Scenario, wiring: Wiring, view: SimView,
                 control: SimControl) -> None:
        self.scenario = scenario
        self.w = wiring
        self.view = view
        self.control = control
        self.flows: FlowTable = build_flows(scenario, wiring)
        self.entries: EntryTable = build_entries(self.flows, wiring, scenario.seed)
        self.router = Router(wiring, self.flows, self.entries, scenario.routing, scenario.seed)
        self.faults = FaultSchedule(scenario, wiring, BufferProfile())
        self.drained = np.zeros(wiring.n_links, dtype=bool)
        self.drains: dict[int, DrainRecord] = {}
        self.history: deque[dict[str, Any]] = deque(maxlen=1000)
        self.paths_version = 0
        self.computed_at_s = 0.0
        self.plan: Plan | None = None
        self.load: NDArray[np.float64] = np.zeros(wiring.n_ports)
        self._lock = asyncio.Lock()
        self._signature: bytes = b""

    # ------------------------------------------------------------------ inputs

    def oper_up(self) -> NDArray[np.bool_]:
        snap = self.view.snapshot
        idx = [self.view.layout.port_index(int(p), cf.P_OPER) for p in self.w.link_a]
        return np.asarray(snap[idx] == cf.OPER_UP)

    def demand(self, t: float) -> NDArray[np.float64]:
        f, e = self.flows, self.entries
        active = (f.start_s <= t) & (t < f.end_s)
        return np.asarray((f.bps / 8.0 * active)[e.flow] * e.share)

    def _signature_now(self, t: float) -> bytes:
        f = self.flows
        active = (f.start_s <= t) & (t < f.end_s)
        return self.oper_up().tobytes() + active.tobytes() + self.drained.tobytes()

    # ------------------------------------------------------------------ computing and programming

    def compute(self, t: float) -> tuple[NDArray[np.int64], ...] | None:
        """Recompute the plan at simulated time ``t``; returns TE paths to install (te mode)."""
        usable = self.oper_up() & ~self.drained
        demand = self.demand(t)
        te = None
        if self.scenario.routing == "te":
            self.plan = plan_paths(self.w, self.entries, demand, usable)
            te = self.plan.te_paths()
        fx = self.faults.effects(t)
        inputs = RouteInputs(usable_link=usable, te_member=te[0] if te else None,
                             te_down=te[1] if te else None, collisions=list(fx.collisions),
                             te_up=te[2] if te and len(te) > 2 else None,
                             te_agg=te[3] if te and len(te) > 3 else None,
                             spine_collisions=list(fx.spine_collisions))
        ch, routable = self.router.routes(inputs)
        load = np.zeros(self.w.n_ports)
        for tier in range(ch.shape[1]):
            m = np.flatnonzero((ch[:, tier] >= 0) & routable)
            np.add.at(load, ch[m, tier], demand[m])
        self.load = load
        self.paths_version += 1
        self.computed_at_s = t
        self._signature = self._signature_now(t)
        return te

    def program_initial(self) -> None:
        """Before the run starts: plan at t=0 and install it (blocking)."""
        te = self.compute(0.0)
        if te is not None:
            self.control.wait_applied(self.control.send("te", *te))

    async def _recompute_and_program(self) -> None:
        te = self.compute(self.view.live_time())
        if te is not None:
            await self.control.wait_applied_async(self.control.send("te", *te))

    async def watch(self) -> None:
        """Recompute when link state or the traffic matrix changes."""
        while True:
            await asyncio.sleep(WATCH_PERIOD_S)
            if self._signature_now(self.view.live_time()) != self._signature:
                async with self._lock:
                    await self._recompute_and_program()

    # ------------------------------------------------------------------ requests

    def _link(self, link_id: str) -> int:
        idx = self.w.link_of.get(link_id)
        if idx is None or idx >= self.w.n_fabric_links:
            raise TeError(404, {"error": "unknown link", "link_id": link_id})
        return idx

    async def drain(self, link_id: str, reason: str, requested_by: str,
                    evidence: Any) -> dict[str, Any]:
        link = self._link(link_id)
        async with self._lock:
            t = self.view.live_time()
            changed = not self.drained[link]
            if changed:
                after = self.oper_up() & ~self.drained
                after[link] = False
                problem = isolates(self.w, after)
                if problem:
                    raise TeError(409, {"error": problem, "link_id": link_id})
                self.drained[link] = True
                self.drains[link] = DrainRecord(reason, requested_by, evidence, t, self._ns(t))
                await self.control.wait_applied_async(self.control.send("drain", link, True))
                await self._recompute_and_program()
            return self._answer("drain", link, changed, t, reason, requested_by)

    async def undrain(self, link_id: str, reason: str, requested_by: str,
                      evidence: Any) -> dict[str, Any]:
        link = self._link(link_id)
        async with self._lock:
            t = self.view.live_time()
            changed = bool(self.drained[link])
            if changed:
                self.drained[link] = False
                self.drains.pop(link, None)
                await self.control.wait_applied_async(self.control.send("drain", link, False))
                await self._recompute_and_program()
            return self._answer("undrain", link, changed, t, reason, requested_by)

    def _answer(self, action: str, link: int, changed: bool, t: float, reason: str,
                requested_by: str) -> dict[str, Any]:
        self.history.append({"action": action, "link_id": self.w.link_ids[link], "at_s": t,
                             "at_ns": self._ns(t), "requested_by": requested_by,
                             "reason": reason, "changed": changed,
                             "paths_version": self.paths_version})
        return {"link_id": self.w.link_ids[link], "drained": bool(self.drained[link]),
                "changed": changed, "at_s": t, "at_ns": self._ns(t),
                "paths_version": self.paths_version, "link": self.link_doc(link)}

    # ------------------------------------------------------------------ state

    def link_doc(self, link: int) -> dict[str, Any]:
        w = self.w
        a, b = w.link_channels(link)
        rec = self.drains.get(link)
        return {
            "id": w.link_ids[link], "a": w.port_label(a), "b": w.port_label(b),
            "gbps": float(w.bps[a] / 1e9),
            "oper": "up" if self.oper_up()[link] else "down",
            "drained": bool(self.drained[link]),
            "drain": None if rec is None else {
                "reason": rec.reason, "requested_by": rec.requested_by,
                "evidence": rec.evidence, "at_s": rec.at_s, "at_ns": rec.at_ns},
            "planned_gbps": {"a_to_b": float(self.load[a] * 8 / 1e9),
                             "b_to_a": float(self.load[b] * 8 / 1e9)},
        }

    def state(self, drained_only: bool = False) -> dict[str, Any]:
        """``GET /v1/state``: every fabric link, or (``drained_only``) the drained ones."""
        t = self.view.live_time()
        fabric = range(self.w.n_fabric_links)
        drained = [i for i in fabric if self.drained[i]]
        return {
            "routing": self.scenario.routing, "sim_time_s": t, "sim_time_ns": self._ns(t),
            "paths_version": self.paths_version, "computed_at_s": self.computed_at_s,
            "drained": [self.w.link_ids[i] for i in drained],
            "links": [self.link_doc(i) for i in (drained if drained_only else fabric)],
            "history": list(self.history),
        }

    def _ns(self, t: float) -> int:
        return self.view.epoch_ns + round(t * 1e9)
