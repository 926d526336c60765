"""One simulated fabric: traffic, routing, faults, link state and physics, advanced step by step.

:class:`Simulation` owns simulated time. It knows nothing of wall clocks, processes or agents (the
runner paces it; :mod:`lab.runner`), so the same scenario and the same seed give the same run step
for step. External actions (a gNMI Set disabling a port, a TE drain, TE paths, a counter reset) are
methods applied between steps.

A link is operationally up when no fault holds it down and both of its ports are administratively
up; each change counts a carrier transition on both ends and stamps their last-change time. Routing
is recomputed whenever what it depends on changes: usable links (up and not drained), TE paths, or
an ECMP collision starting or ending.
"""

from __future__ import annotations

import time

import numpy as np
from numpy.typing import NDArray

from lab import counters as cf
from lab.buffers import BufferProfile, device_xoff
from lab.counters import CounterState
from lab.faults import FaultEffects, FaultSchedule
from lab.physics import Physics
from lab.routing import RouteInputs, Router
from lab.scenario.spec import Scenario
from lab.stats import StatsTicker
from lab.traffic import ROCE_PRIORITY, DemandJitter, build_entries, build_flows
from lab.wiring import IntArray, Wiring, build_wiring
from pipeline.kinds import FAULT_PFC_STORM

DEFAULT_DT = 0.01
DEFAULT_TICK = 0.1


def active_priorities(scenario: Scenario, buffers: BufferProfile) -> tuple[int, ...]:
    """The priorities that can ever carry traffic or be paused in this scenario: RoCE's, the
    lossless ones, and any a PFC storm pauses (the physics simulates these; the published
    snapshot carries only these)."""
    storm = {int(f.params["priority"]) for f in scenario.faults if f.kind == FAULT_PFC_STORM}
    return tuple(sorted({ROCE_PRIORITY} | set(buffers.lossless) | storm))


class Simulation:
    def __init__(self, scenario: Scenario, *, dt: float = DEFAULT_DT,
                 tick_s: float = DEFAULT_TICK, buffers: BufferProfile | None = None,
                 jitter: bool = True, dcqcn: bool = False, profile: bool = False) -> None:
        if tick_s < dt or abs(tick_s / dt - round(tick_s / dt)) > 1e-6:
            raise ValueError("tick_s must be a whole number of steps")
        self.scenario = scenario
        self.dt = dt
        self.tick_s = tick_s
        self.tick_steps = round(tick_s / dt)
        self.buffers = buffers or BufferProfile()
        self.wiring: Wiring = build_wiring(scenario.topology())
        w = self.wiring
        self.flows = build_flows(scenario, w)
        self.entries = build_entries(self.flows, w, scenario.seed)
        self.router = Router(w, self.flows, self.entries, scenario.routing, scenario.seed)
        storm_prios = tuple(int(f.params["priority"]) for f in scenario.faults
                            if f.kind == FAULT_PFC_STORM)
        self.physics = Physics(w, self.entries.prio, self.buffers, dt, storm_prios, dcqcn,
                               group=self.entries.flow)
        self.counters = CounterState(w)
        window = max(1, round(scenario.sample_interval_s / tick_s))
        self.stats = StatsTicker(w, self.physics, self.counters, self.buffers, window,
                                 scenario.seed)
        self.faults = FaultSchedule(scenario, w, self.buffers)
        self.jitter = DemandJitter(len(self.flows), scenario.seed) if jitter else None
        self.t = 0.0
        self.steps = 0
        self.ticks = 0
        self.routes_version = 0
        self.admin_up = np.ones(w.n_ports, dtype=bool)
        self.drained = np.zeros(w.n_links, dtype=bool)
        self.link_up = np.ones(w.n_links, dtype=bool)
        self.te_member: IntArray | None = None
        self.te_down: IntArray | None = None
        self.te_up: IntArray | None = None
        self.te_agg: IntArray | None = None
        self._effects: FaultEffects | None = None
        self._next_fault_t = 0.0
        self._routes_dirty = True
        self._finite = False
        self._device_xoff = device_xoff(w, self.buffers)
        buf, dev = self.buffers, self.counters.device
        dev[:, cf.D_HEADROOM] = buf.headroom_bytes
        dev[:, cf.D_ECN_KMIN] = buf.ecn_kmin_bytes
        dev[:, cf.D_ECN_KMAX] = buf.ecn_kmax_bytes
        dev[:, cf.D_ECN_PMAX] = buf.ecn_pmax * 100.0
        self._apply_faults()
        self._refresh_routes()
        # CPU seconds spent per stage, when profiling (lab/sim/cost.py); CPU time, never a clock
        self.profile = profile
        self.cpu = {"step": 0.0, "tick": 0.0}

    # ------------------------------------------------------------------ time

    def step(self) -> None:
        """Advance one step of ``dt``; a statistics tick runs every ``tick_s``."""
        if self.t >= self._next_fault_t or (self.steps % self.tick_steps == 0
                                            and self.faults.continuous(self.t)):
            self._apply_faults()
        if self._routes_dirty:
            self._refresh_routes()
        c0 = time.process_time() if self.profile else 0.0
        self._set_offered()
        self.physics.step()
        self.steps += 1
        self.t = self.steps * self.dt
        if self.profile:
            c1 = time.process_time()
            self.cpu["step"] += c1 - c0
        if self.steps % self.tick_steps == 0:
            self.stats.tick()
            if self.profile:
                self.cpu["tick"] += time.process_time() - c1
            self.ticks += 1
            self.counters.header[cf.H_TIME] = self.t
            self.counters.header[cf.H_TICK] = self.ticks
            self.counters.header[cf.H_ROUTES] = self.routes_version

    def run_until(self, t: float) -> None:
        while self.t + self.dt / 2 < t:
            self.step()

    # ------------------------------------------------------------------ external actions

    def set_admin(self, port: int, up: bool) -> None:
        self.admin_up[port] = up
        self.counters.port[port, cf.P_ADMIN] = cf.OPER_UP if up else cf.OPER_DOWN
        self._update_links()

    def set_drained(self, link: int, drained: bool) -> None:
        if self.drained[link] != drained:
            self.drained[link] = drained
            self._routes_dirty = True

    def set_te_paths(self, member: IntArray, down: IntArray, up: IntArray | None = None,
                     agg: IntArray | None = None) -> None:
        """TE paths per entry: the leaf's member and the spine's link down, and across zones
        the spine's aggregation member and the aggregation switch's member (-1: none)."""
        self.te_member, self.te_down = member.copy(), down.copy()
        self.te_up = None if up is None else up.copy()
        self.te_agg = None if agg is None else agg.copy()
        self._routes_dirty = True

    def reset_device(self, device: int) -> None:
        self.counters.reset_device(device, self.t)

    def set_transfer(self, nbytes: NDArray[np.float64]) -> None:
        """Give every entry a finite amount to send (collective-completion experiments)."""
        self.physics.set_transfer(nbytes)
        self._finite = True

    # ------------------------------------------------------------------ internals

    def _apply_faults(self) -> None:
        fx = self.faults.effects(self.t)
        self._next_fault_t = self.faults.next_boundary(self.t)
        if fx.same_as(self._effects):
            return
        prev = self._effects
        self._effects = fx
        scale = fx.xoff_scale[self.wiring.port_device[self.wiring.peer]]
        # the configuration the devices serve is the one the physics runs with
        xoff = self._device_xoff * fx.xoff_scale
        self.counters.device[:, cf.D_XOFF] = xoff
        self.counters.device[:, cf.D_XON] = xoff - np.minimum(self.buffers.xon_band_bytes,
                                                               0.5 * xoff)
        self.physics.set_conditions(loss=fx.loss, forced=fx.forced, forced_busy=fx.forced_busy,
                                    rx_drain=fx.rx_drain, stuck=fx.stuck, xoff_scale=scale)
        self.stats.symbols_per_pkt = fx.symbols_per_pkt
        self.stats.line_ber = fx.line_ber
        if prev is None or prev.collisions != fx.collisions or (
                prev.spine_collisions != fx.spine_collisions):
            self._routes_dirty = True
        self._update_links()

    def _update_links(self) -> None:
        w = self.wiring
        fault_down = np.zeros(w.n_links, dtype=bool)
        if self._effects is not None and self._effects.down_links:
            fault_down[list(self._effects.down_links)] = True
        up = ~fault_down & self.admin_up[w.link_a] & self.admin_up[w.link_b]
        changed = np.flatnonzero(up != self.link_up)
        if not changed.size:
            return
        self.link_up = up
        port = self.counters.port
        for link in changed.tolist():
            for p in w.link_channels(link):
                port[p, cf.P_CARRIER] += 1
                port[p, cf.P_OPER] = cf.OPER_UP if up[link] else cf.OPER_DOWN
                port[p, cf.P_LAST_CHANGE] = self.t
        chan_up = np.ones(w.n_ports, dtype=bool)
        chan_up[w.link_a] = up
        chan_up[w.link_b] = up
        self.physics.set_channel_up(chan_up)
        self._routes_dirty = True

    def _refresh_routes(self) -> None:
        inputs = RouteInputs(
            usable_link=self.link_up & ~self.drained,
            te_member=self.te_member, te_down=self.te_down, te_up=self.te_up,
            te_agg=self.te_agg,
            collisions=list(self._effects.collisions) if self._effects else [],
            spine_collisions=list(self._effects.spine_collisions) if self._effects else [],
        )
        ch, routable = self.router.routes(inputs)
        self.physics.set_routes(ch, routable)
        self.routes_version += 1
        self._routes_dirty = False

    def _set_offered(self) -> None:
        f, e = self.flows, self.entries
        active = (f.start_s <= self.t) & (self.t < f.end_s)
        rate = f.bps / 8.0 * active
        if self.jitter is not None:
            rate = rate * self.jitter.at(self.t)
        self.physics.set_offered(rate[e.flow] * e.share)

    @property
    def done(self) -> bool:
        return self.t >= self.scenario.duration_s - self.dt / 2 or (
            self._finite and bool(np.all(self.physics.remaining <= 0.5))
            and self.physics.queued_bytes() < 1.0)
