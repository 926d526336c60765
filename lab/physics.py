"""The fluid model: one time step of every queue, pause and flow in the fabric, vectorised.

State is per *unit* and per *channel* (a port's egress) and priority. Routing places *entries*
(a flow's queue pairs) on paths; the entries of one flow that share a path behave identically, so
they are simulated as one unit, regrouped whenever routes change (QPs hashed onto 4 spines make
at most 4 units per flow). A step of length ``dt`` runs two passes over the six tiers (see
:mod:`lab.wiring`; a path skips the tiers it does not cross):

Forward, tier 0 to 3: each egress queue offers its backlog plus this step's arrivals; the port's
capacity is shared among priorities (DWRR, equal weights: :mod:`lab.egress`) and each priority
only gets the share of time it is not paused (``phi``); a FIFO queue serves its entries in
proportion to what they hold.
Frames corrupted on a channel vanish at the receiver. Traffic into a down port is flushed.

Backward, sink to tier 0 (PFC, :mod:`lab.pfc`): a lossless priority group that ends the step above
its XOFF threshold hands the excess it received back upstream, hop by hop to the senders (the PG a
channel feeds holds what its entries queue at the next hop on their paths, whichever tier that
is), and each channel's pause fraction for the next step follows from what its PG could accept.
So a pause climbs from a leaf through a spine to an aggregation switch and down into another zone
exactly as it spreads inside one.

With ``dcqcn`` on, senders also react to ECN marks (:mod:`lab.dcqcn`).

Only *active* priorities are simulated (those carrying traffic, the lossless ones, and any a fault
pauses), so per-channel arrays are ``ports x active`` wide, usually ``ports x 1``; ``prios`` maps
the active slots back to priorities for :mod:`lab.stats`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from lab.buffers import BufferProfile, pg_xoff
from lab.dcqcn import react
from lab.egress import serve, tail_drop
from lab.pfc import estimate_pause, hand_back, sink
from lab.wiring import N_PRIO, N_TIERS, TIER_LEAF_DOWN, IntArray, Wiring, sum_by_key

F64 = NDArray[np.float64]
_TINY = 1e-30


@dataclass
class Harvest:
    """One tick's accumulators, flat over (port, active priority); see ``Physics.prios``."""

    span: float
    tx: F64           # bytes sent per (channel, prio)
    lost: F64         # of which corrupted on the wire
    flushed: F64      # bytes discarded at a down port or by a lost route
    dropped: F64      # lossy tail drops at egress
    nic_drop: F64     # lossy drops in a NIC receive buffer
    pause_s: F64      # time (channel, prio) was paused
    frames: F64       # PFC frames the channel's peer sent to it
    qsum: F64         # integral of the egress queue, byte-seconds
    qmax: F64
    pgsum: F64        # integral of the PG the channel feeds, byte-seconds
    queue: F64        # egress queue now
    xoff: F64         # current PG thresholds
    band: F64         # their XON hysteresis


class Physics:
    def __init__(self, wiring: Wiring, prio: IntArray, buffers: BufferProfile, dt: float,
                 extra_prios: tuple[int, ...] = (), dcqcn: bool = False,
                 group: IntArray | None = None) -> None:
        self.w = wiring
        self.buf = buffers
        self.dt = dt
        n_ports = wiring.n_ports
        self.n_ports = n_ports
        active = sorted(set(prio.tolist()) | set(buffers.lossless) | set(extra_prios))
        self.prios = np.asarray(active, dtype=np.int64)
        self.n_act = len(active)
        slot = np.full(N_PRIO, -1, dtype=np.int64)
        slot[self.prios] = np.arange(self.n_act)
        self.slot = slot
        na = self.n_act
        self.cap: F64 = wiring.bps / 8.0                           # bytes/s per channel
        self._cap_flat: F64 = np.repeat(self.cap, na)
        self.refresh_s: F64 = np.array([buffers.pause_refresh_s(b) for b in wiring.bps])
        self._refresh_flat = np.repeat(self.refresh_s, na)
        self.lossless = np.zeros(N_PRIO, dtype=bool)
        self.lossless[list(buffers.lossless)] = True
        self.ecn_capable = np.zeros(N_PRIO, dtype=bool)
        self.ecn_capable[list(buffers.ecn_capable)] = True
        self.frame: F64 = np.array([buffers.frame_bytes(p) for p in range(N_PRIO)])
        self._lossless_flat = np.tile(self.lossless[self.prios], n_ports)
        self._frame_flat: F64 = np.tile(self.frame[self.prios], n_ports)
        self._lossless_f = self._lossless_flat.astype(np.float64)
        self._lossy_f = 1.0 - self._lossless_f
        # threshold of the PG each channel feeds (that PG lives on the receiving device)
        xoff = np.repeat(pg_xoff(wiring, buffers)[:, None], N_PRIO, axis=1)
        self.xoff_base: F64 = xoff
        self._xoff: F64 = self._compact(xoff)
        self._band: F64 = self._hysteresis(self._xoff)
        # link state and fault-imposed conditions (see set_conditions)
        self.channel_up = np.ones(n_ports, dtype=bool)
        self._up_flat = np.ones(n_ports * na)
        self.loss: F64 = np.zeros(n_ports)
        self._forced: F64 = np.zeros(n_ports * na)
        self._forced_busy: F64 = np.zeros(n_ports * na)
        self._rx_drain: F64 = np.ones(n_ports * na)
        self._stuck: F64 = np.zeros(n_ports * na)
        self._forced_any: F64 = np.zeros(n_ports * na)
        self._any_loss = False
        self._all_up = True
        self._finite = False
        # dynamic per (channel, active prio) state
        self.phi: F64 = np.zeros(n_ports * na)      # pause imposed on the channel next step
        self.pg: F64 = np.zeros(n_ports * na)       # PG bytes held downstream of the channel
        self.nicbuf: F64 = np.zeros(n_ports * na)   # receive buffers, keyed by the leaf channel
        self.queue: F64 = np.zeros(n_ports * na)    # egress queue bytes
        self._was_full = np.zeros(n_ports * na, dtype=bool)
        self._floor: F64 = np.zeros(n_ports * na)
        # entries, as routed from outside; ``group`` (the flow) bounds what may be merged
        n_ent = len(prio)
        self.e_prio = prio.astype(np.int64)
        self._e_pslot = slot[self.e_prio]
        self.e_group = (np.arange(n_ent) if group is None else group).astype(np.int64)
        self.e_ch: IntArray = np.full((n_ent, N_TIERS), -1, dtype=np.int64)
        self._e_offered: F64 = np.zeros(n_ent)
        self.unit_of: IntArray = np.zeros(n_ent, dtype=np.int64)
        self.unit_count: F64 = np.zeros(0)
        # units: the entries of one flow that share a path, simulated as one
        self.prio: IntArray = np.zeros(0, dtype=np.int64)
        self._pslot: IntArray = np.zeros(0, dtype=np.int64)
        self.q: list[F64] = [np.zeros(0) for _ in range(N_TIERS)]   # bytes queued per tier
        self.ch: IntArray = np.full((0, N_TIERS), -1, dtype=np.int64)
        self.routable = np.zeros(0, dtype=bool)
        self.offered: F64 = np.zeros(0)          # bytes/s each unit wants to send
        self.remaining: F64 = np.zeros(0)        # bytes left to send (finite transfers)
        self.delivered: F64 = np.zeros(0)
        self.dcqcn = dcqcn
        self.rate_factor: F64 = np.zeros(0)      # DCQCN sending-rate multiplier
        self.ecn_slot = np.tile(self.ecn_capable[self.prios], n_ports).astype(np.float64)
        empty = np.zeros(0, dtype=np.int64)
        self._m: list[IntArray] = [empty] * N_TIERS   # entries present at each tier
        self._k: list[IntArray] = [empty] * N_TIERS   # their (channel, slot) keys
        self._c: list[IntArray] = [empty] * N_TIERS   # their channels
        # per tier: the next tier each present entry visits, grouped ((next tier, mask), ...)
        self._next: list[list[tuple[int, NDArray[np.bool_]]]] = [[] for _ in range(N_TIERS)]
        self._has_lossy = False
        self.reset_accumulators()

    # ------------------------------------------------------------------ configuration

    def _hysteresis(self, xoff: F64) -> F64:
        """XON sits a fixed band below XOFF, but never below half of a (tiny) XOFF."""
        return np.minimum(self.buf.xon_band_bytes, 0.5 * xoff)

    def _compact(self, per8: F64) -> F64:
        return np.ascontiguousarray(per8[:, self.prios]).ravel()

    def set_conditions(self, *, loss: F64, forced: F64, forced_busy: F64, rx_drain: F64,
                       stuck: F64, xoff_scale: F64) -> None:
        """Fault-imposed state: per-channel loss, and (port, 8) pause/drain/fill arrays."""
        self.loss = loss.copy()
        self._any_loss = bool(self.loss.any())
        self._forced = self._compact(forced)
        self._forced_busy = self._compact(forced_busy)
        self._forced_any = np.maximum(self._forced, self._forced_busy)
        self._rx_drain = self._compact(rx_drain)
        self._stuck = self._compact(stuck)
        self._xoff = self._compact(self.xoff_base * xoff_scale[:, None])
        self._band = self._hysteresis(self._xoff)

    def set_offered(self, entry_rate: F64) -> None:
        """Bytes/s each entry wants to send this step."""
        self._e_offered = entry_rate
        self.offered = sum_by_key(self.unit_of, entry_rate, len(self.prio))

    def set_transfer(self, nbytes: F64) -> None:
        """Finite transfers: each entry sends ``nbytes`` then stops (completion experiments)."""
        self.remaining = sum_by_key(self.unit_of, nbytes.astype(np.float64), len(self.prio))
        self._finite = True

    def entry_delivered(self) -> F64:
        """Bytes delivered per entry (a unit's members share its bytes equally)."""
        return np.asarray(self.delivered[self.unit_of] / self.unit_count[self.unit_of])

    def set_routes(self, ch: IntArray, routable: NDArray[np.bool_]) -> None:
        """Install new paths for the entries and regroup them into units.

        Bytes queued on a hop that moved follow their entry, except on a port that is down or for
        an entry that lost its route, whose bytes are discarded there."""
        n_ent = len(self.e_prio)
        if self.unit_count.size:
            u, cnt = self.unit_of, self.unit_count[self.unit_of]
            q_e = [self.q[t][u] / cnt for t in range(N_TIERS)]
            rem_e, del_e = self.remaining[u] / cnt, self.delivered[u] / cnt
            rate_e = self.rate_factor[u]
        else:
            q_e = [np.zeros(n_ent) for _ in range(N_TIERS)]
            rem_e, del_e, rate_e = np.full(n_ent, np.inf), np.zeros(n_ent), np.ones(n_ent)
        old = self.e_ch
        for tier in range(1, N_TIERS):
            moved = (old[:, tier] >= 0) & ((old[:, tier] != ch[:, tier]) | ~routable)
            lost_hop = moved & ((ch[:, tier] < 0) | ~routable | ~self.channel_up[old[:, tier]])
            if lost_hop.any():
                self._discard(old[lost_hop, tier], self._e_pslot[lost_hop], q_e[tier][lost_hop])
                q_e[tier][lost_hop] = 0.0
        self.e_ch = ch.copy()
        key = np.column_stack([self.e_group, ch, routable.astype(np.int64), self.e_prio])
        _, first, inv, counts = np.unique(key, axis=0, return_index=True, return_inverse=True,
                                          return_counts=True)
        inv = np.asarray(inv).ravel()
        n_units = len(first)
        self.unit_of, self.unit_count = inv, counts.astype(np.float64)
        self.ch, self.routable = ch[first], routable[first]
        self.prio = self.e_prio[first]
        self._pslot = self.slot[self.prio]
        self.q = [sum_by_key(inv, q_e[t], n_units) for t in range(N_TIERS)]
        self.remaining = sum_by_key(inv, rem_e, n_units)
        self.delivered = sum_by_key(inv, del_e, n_units)
        self.rate_factor = sum_by_key(inv, rate_e, n_units) / self.unit_count
        self.offered = sum_by_key(inv, self._e_offered, n_units)
        ch, routable = self.ch, self.routable
        na = self.n_act
        for tier in range(N_TIERS):
            m = np.flatnonzero((ch[:, tier] >= 0) & routable)
            self._m[tier] = m
            self._c[tier] = ch[m, tier]
            self._k[tier] = self._c[tier] * na + self._pslot[m]
        for tier in range(N_TIERS - 1):
            m = self._m[tier]
            later = ch[m, tier + 1:] >= 0
            nxt = np.where(later.any(axis=1), tier + 1 + np.argmax(later, axis=1), -1)
            self._next[tier] = [(int(t), nxt == t) for t in np.unique(nxt) if t >= 0]
        self._has_lossy = bool((~self.lossless[self.prio[self.routable]]).any())

    def set_channel_up(self, up: NDArray[np.bool_]) -> None:
        """Links going down flush the queues of their ports and lose what their PGs held."""
        newly_down = self.channel_up & ~up
        if newly_down.any():
            for tier in range(1, N_TIERS):
                hit = (self.ch[:, tier] >= 0) & newly_down[np.maximum(self.ch[:, tier], 0)]
                if hit.any():
                    self._discard(self.ch[hit, tier], self._pslot[hit], self.q[tier][hit])
                    self.q[tier][hit] = 0.0
            flat = np.repeat(newly_down, self.n_act)
            self.nicbuf[flat] = 0.0
            self.phi[flat] = 0.0
        self.channel_up = up.copy()
        self._up_flat = np.repeat(up, self.n_act).astype(np.float64)
        self._all_up = bool(up.all())

    def reset_accumulators(self) -> None:
        n = self.n_ports * self.n_act
        self.acc_tx: F64 = np.zeros(n)
        self.acc_lost: F64 = np.zeros(n)
        self.acc_flushed: F64 = np.zeros(n)
        self.acc_dropped: F64 = np.zeros(n)
        self.acc_nic_drop: F64 = np.zeros(n)
        self.acc_pause_s: F64 = np.zeros(n)
        self.acc_frames: F64 = np.zeros(n)
        self.acc_qsum: F64 = np.zeros(n)
        self.acc_qmax: F64 = np.zeros(n)
        self.acc_pgsum: F64 = np.zeros(n)
        self.acc_time = 0.0

    def harvest(self) -> Harvest:
        """This tick's accumulators; resets them."""
        h = Harvest(self.acc_time, self.acc_tx, self.acc_lost, self.acc_flushed,
                    self.acc_dropped, self.acc_nic_drop, self.acc_pause_s, self.acc_frames,
                    self.acc_qsum, self.acc_qmax, self.acc_pgsum, self.queue.copy(),
                    self._xoff.copy(), self._band.copy())
        self.reset_accumulators()
        return h

    # ------------------------------------------------------------------ the step

    def step(self) -> None:
        dt = self.dt
        n = self.n_ports * self.n_act
        cap = self._cap_flat * dt * self._up_flat
        phi_used = np.maximum(self.phi, self._forced_any)
        avail = (1.0 - phi_used) * cap
        n_ent = len(self.prio)
        moved = [np.zeros(n_ent) for _ in range(N_TIERS)]
        lost = [np.zeros(n_ent) for _ in range(N_TIERS)]
        # what each entry held at each tier before the step, and the share of it served:
        # a PG whose old bytes cannot drain below XON stays in XOFF however much passes through
        self._held0 = [q.copy() for q in self.q]
        self._served = [np.zeros(n_ent) for _ in range(N_TIERS)]
        arr = np.zeros(n_ent)
        demand = np.zeros(n)
        tx = np.zeros(n)
        any_loss = self._any_loss
        for tier in range(N_TIERS):
            m = self._m[tier]
            if not m.size:
                continue
            k = self._k[tier]
            if tier == 0:
                offered = self.offered[m] * self.rate_factor[m] if self.dcqcn else self.offered[m]
                want = np.minimum(offered * dt, self.remaining[m])
            else:
                want = self.q[tier][m] + arr[m]
            dem = sum_by_key(k, want, n)
            served = serve(dem, avail, cap, self.n_ports, self.n_act)
            demand += dem
            tx += served
            frac = (served / np.maximum(dem, _TINY))[k]
            out = want * frac
            self._served[tier][m] = frac
            if tier:
                rest = want - out
                if not self._all_up:
                    down = ~self.channel_up[self._c[tier]]
                    if down.any():
                        self.acc_flushed += sum_by_key(k[down], rest[down], n)
                        rest[down] = 0.0
                self.q[tier][m] = rest
                if self._has_lossy:
                    tail_drop(self, tier)
            moved[tier][m] = out
            if any_loss:
                lo = out * self.loss[self._c[tier]]
                lost[tier][m] = lo
                arr[m] = out - lo
            else:
                arr[m] = out
        self._floor = np.zeros(n)      # PG level each would keep with its upstream silent
        pg_end = sink(self, cap, moved, arr, tx)
        for tier in range(TIER_LEAF_DOWN - 1, -1, -1):
            if self._m[tier].size:
                pg_end += hand_back(self, tier, moved, lost, tx)
        lost_k = np.zeros(n)
        if any_loss:
            for tier in range(N_TIERS):
                m = self._m[tier]
                if m.size:
                    lost_k += sum_by_key(self._k[tier], lost[tier][m], n)
        m0 = self._m[0]
        if self._finite and m0.size:
            # bytes corrupted anywhere on the path are retransmitted
            sent = moved[0][m0] - (lost[0][m0] + lost[1][m0] + lost[2][m0] + lost[3][m0])
            fin = np.isfinite(self.remaining[m0])
            self.remaining[m0[fin]] -= sent[fin]
        estimate_pause(self, demand, cap, tx, tx - lost_k, pg_end)
        queue = self._stuck.copy()
        for tier in range(1, N_TIERS):
            m = self._m[tier]
            if m.size:
                queue += sum_by_key(self._k[tier], self.q[tier][m], n)
        self.queue = queue
        if self.dcqcn:
            react(self, queue)
        self.acc_tx += tx
        if any_loss:
            self.acc_lost += lost_k
        self.acc_qsum += queue * dt
        np.maximum(self.acc_qmax, queue, out=self.acc_qmax)
        self.acc_pgsum += self.pg * dt
        self.acc_time += dt

    # ------------------------------------------------------------------ pieces of the step

    def _discard(self, chans: IntArray, slots: IntArray, nbytes: F64) -> None:
        np.add.at(self.acc_flushed, chans * self.n_act + slots, nbytes)

    # ------------------------------------------------------------------ observations

    def tiers(self) -> list[tuple[IntArray, IntArray]]:
        """Per tier: the entries present there and their (channel, active prio) keys."""
        return list(zip(self._m, self._k, strict=True))

    def next_hops(self, tier: int) -> list[tuple[int, NDArray[np.bool_]]]:
        """For the entries present at ``tier``: the next tier they visit, as (tier, mask) groups
        over ``tiers()[tier]``'s entries (empty at the last tier)."""
        return self._next[tier]

    def next_channel(self, tier: int) -> IntArray:
        """For the entries present at ``tier``: the channel of their next hop."""
        m = self._m[tier]
        out = np.full(m.size, -1, dtype=np.int64)
        for nt, sel in self._next[tier]:
            out[sel] = self.ch[m[sel], nt]
        return out

    def queued_bytes(self) -> float:
        return float(sum(float(q.sum()) for q in self.q))
