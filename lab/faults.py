"""Fault injection: what each scenario fault does to the simulated fabric, as a function of time.

Faults overlap freely; :meth:`FaultSchedule.effects` composes every fault active at ``t`` into one
:class:`FaultEffects`. The simulation re-evaluates it at each boundary (a fault starting or
ending, a flap edge) and at every statistics tick while a continuously changing fault
(``optics_degrade``) runs. Incast senders are traffic, not effects: :mod:`lab.traffic` gives
them a time window.

Directions on links follow the topology: ``a`` is the end whose switch name sorts first; on a
host's link, ``a`` is the leaf port and ``b`` the NIC. ``a_to_b`` corrupts frames sent by ``a``,
so ``b`` counts the FCS errors.

``link_corruption`` loses frames at its ``rate``; the bit errors behind that loss (rate / 8 F for
frames of F bytes) also hit the idle blocks a link sends when it has no frames, so the receiver's
PCS symbol errors and corrected codewords rise with line time, traffic or not.

``optics_degrade`` ramps a raw corruption rate ``r`` geometrically from ``start_rate`` to
``end_rate`` over its window, in both directions. FEC hides most of it at first: PCS symbol errors
and corrected codewords grow with ``r`` from the start, while frames lost to uncorrectable errors
(FCS errors) follow ``r * (r / end_rate)``, so they appear late: symbol errors first.

``pfc_deadlock`` freezes a cyclic buffer dependency: each link of the cycle, in the walking
direction, is paused by the PG at its far end, whose buffer is full of the bounce traffic that
cannot move; everything routed into the cycle backs up behind it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from lab.buffers import BufferProfile, pg_xoff
from lab.physics import F64
from lab.scenario.fault_checks import orient_cycle
from lab.scenario.spec import FaultSpec, Scenario
from lab.wiring import N_PRIO, Wiring
from pipeline.kinds import (
    FAULT_BUFFER_MISCONFIG,
    FAULT_ECMP_COLLISION,
    FAULT_LINK_CORRUPTION,
    FAULT_LINK_DOWN,
    FAULT_LINK_FLAP,
    FAULT_OPTICS_DEGRADE,
    FAULT_PFC_DEADLOCK,
    FAULT_PFC_STORM,
    FAULT_SLOW_RECEIVER,
)

_SYMBOLS_PER_ERROR = 16.0


@dataclass
class FaultEffects:
    down_links: frozenset[int]
    loss: F64                      # per channel: fraction of frames arriving corrupted
    symbols_per_pkt: F64           # per channel: PCS symbol errors per frame
    line_ber: F64                  # per channel: bit error rate a fault adds to the line itself
    forced: F64                    # (channel, prio): pause asserted continuously
    forced_busy: F64               # (channel, prio): pause asserted while traffic arrives
    rx_drain: F64                  # (channel, prio): NIC receive drain fraction
    stuck: F64                     # (channel, prio): bytes frozen in a deadlocked queue
    xoff_scale: F64                # per device: PG threshold multiplier
    collisions: list[tuple[int, int]] = field(default_factory=list)
    spine_collisions: list[tuple[int, int]] = field(default_factory=list)

    def same_as(self, other: FaultEffects | None) -> bool:
        if other is None:
            return False
        return (self.down_links == other.down_links and self.collisions == other.collisions
                and self.spine_collisions == other.spine_collisions
                and all(np.array_equal(getattr(self, n), getattr(other, n))
                        for n in ("loss", "symbols_per_pkt", "line_ber", "forced", "forced_busy",
                                  "rx_drain", "stuck", "xoff_scale")))


class FaultSchedule:
    def __init__(self, scenario: Scenario, wiring: Wiring, buffers: BufferProfile) -> None:
        self.scenario = scenario
        self.w = wiring
        self.buf = buffers
        self.faults = scenario.faults
        self._pg_xoff = pg_xoff(wiring, buffers)
        times: set[float] = set()
        for f in self.faults:
            end = f.end_s(scenario.duration_s)
            times.update((f.at_s, end))
            if f.kind == FAULT_LINK_FLAP:
                period, down = float(f.params["period_s"]), float(f.params["down_s"])
                k = 0
                while f.at_s + k * period < end:
                    start = f.at_s + k * period
                    times.update((start, min(start + down, end)))
                    k += 1
        self.boundaries = sorted(times)

    def next_boundary(self, t: float) -> float:
        for b in self.boundaries:
            if b > t:
                return b
        return math.inf

    def continuous(self, t: float) -> bool:
        return any(f.kind == FAULT_OPTICS_DEGRADE and f.active(t, self.scenario.duration_s)
                   for f in self.faults)

    def effects(self, t: float) -> FaultEffects:
        w = self.w
        n_ports = w.n_ports
        fx = FaultEffects(
            down_links=frozenset(), loss=np.zeros(n_ports), symbols_per_pkt=np.zeros(n_ports),
            line_ber=np.zeros(n_ports),
            forced=np.zeros((n_ports, N_PRIO)), forced_busy=np.zeros((n_ports, N_PRIO)),
            rx_drain=np.ones((n_ports, N_PRIO)), stuck=np.zeros((n_ports, N_PRIO)),
            xoff_scale=np.ones(len(w.switches) + len(w.hosts)),
        )
        down: set[int] = set()
        lossless = list(self.buf.lossless)
        for f in self.faults:
            if not f.active(t, self.scenario.duration_s):
                continue
            self._apply(f, t, fx, down, lossless)
        fx.down_links = frozenset(down)
        return fx

    def _apply(self, f: FaultSpec, t: float, fx: FaultEffects, down: set[int],
               lossless: list[int]) -> None:
        w = self.w
        p = f.params
        if f.kind == FAULT_PFC_STORM:
            c = int(w.host_leaf_port[w.hosts.index(f.target)])
            prio = int(p["priority"])
            fx.forced[c, prio] = 1.0
            fx.rx_drain[c, prio] = 0.0
        elif f.kind == FAULT_SLOW_RECEIVER:
            c = int(w.host_leaf_port[w.hosts.index(f.target)])
            frac = float(p["drain_fraction"])
            fx.rx_drain[c, :] = np.minimum(fx.rx_drain[c, :], frac)
            fx.forced_busy[c, lossless] = np.maximum(fx.forced_busy[c, lossless], 1.0 - frac)
        elif f.kind == FAULT_LINK_CORRUPTION:
            rate = float(p["rate"])
            # the bit errors behind it hit the line whether it carries frames or idles: a frame
            # of F bytes is lost with probability ~ 8 F x BER
            ber = rate / (8.0 * self.buf.roce_frame_bytes)
            for c in self._directed(f.target, str(p["direction"])):
                fx.loss[c] = 1.0 - (1.0 - fx.loss[c]) * (1.0 - rate)
                fx.line_ber[c] += ber
        elif f.kind == FAULT_OPTICS_DEGRADE:
            start, end = float(p["start_rate"]), float(p["end_rate"])
            span = f.end_s(self.scenario.duration_s) - f.at_s
            frac = min(max((t - f.at_s) / span, 0.0), 1.0) if span > 0 else 1.0
            r = start * (end / start) ** frac
            for c in self._directed(f.target, "both"):
                fx.loss[c] = 1.0 - (1.0 - fx.loss[c]) * (1.0 - r * min(1.0, r / end))
                fx.symbols_per_pkt[c] += _SYMBOLS_PER_ERROR * r
        elif f.kind == FAULT_LINK_FLAP:
            period, dn = float(p["period_s"]), float(p["down_s"])
            # floor with a little slack: at an edge the state *after* the edge applies
            k = math.floor((t - f.at_s) / period + 1e-9)
            if t - f.at_s - k * period < dn - 1e-9:
                down.add(self._link(f.target))
        elif f.kind == FAULT_LINK_DOWN:
            down.add(self._link(f.target))
        elif f.kind == FAULT_ECMP_COLLISION and f.target in w.leaf_index:
            fx.collisions.append((w.leaf_index[f.target], int(p["flows"])))
        elif f.kind == FAULT_ECMP_COLLISION:
            # a spine's flows collide on its aggregation uplinks
            fx.spine_collisions.append((w.spine_index[f.target], int(p["flows"])))
        elif f.kind == FAULT_BUFFER_MISCONFIG:
            d = w.device_index(f.target)
            fx.xoff_scale[d] = min(fx.xoff_scale[d], float(p["xoff_fraction"]))
        elif f.kind == FAULT_PFC_DEADLOCK:
            for c in self.cycle_channels(list(p["cycle"])):
                fx.forced[c, lossless] = 1.0
                fx.stuck[c, lossless] = self._pg_xoff[c] + self.buf.headroom_bytes

    def cycle_channels(self, cycle: list[str]) -> list[int]:
        """The egress channel of each cycle link, in the walking direction."""
        w = self.w
        links = [w.topology.link_by_id[lid] for lid in cycle]
        walk = orient_cycle([(ln.a.device, ln.b.device) for ln in links])
        assert walk is not None  # validated with the scenario
        out = []
        for ln, (frm, _to) in zip(links, walk, strict=True):
            end = ln.a if ln.a.device == frm else ln.b
            out.append(w.port_index(end.device, end.name))
        return out

    def _link(self, target: str) -> int:
        return self.w.link_index(target)

    def _directed(self, target: str, direction: str) -> list[int]:
        a_to_b, b_to_a = self.w.link_channels(self._link(target))
        return {"a_to_b": [a_to_b], "b_to_a": [b_to_a], "both": [a_to_b, b_to_a]}[direction]
