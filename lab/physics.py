"""The fluid model: one time step of every queue, pause and flow in the fabric, vectorised.

State is per *entry* (a flow's queue pair on its path) and per *channel* (a port's egress) and
priority. A step of length ``dt`` runs two passes over the four tiers (see :mod:`lab.wiring`):

Forward, tier 0 to 3: each egress queue offers its backlog plus this step's arrivals; the port's
capacity is shared among priorities (DWRR, equal weights) and each priority only gets the share of
time it is not paused (``phi``); a FIFO queue serves its entries in proportion to what they hold.
Frames corrupted on a channel vanish at the receiver. Traffic into a down port is flushed.

Backward, sink to tier 0 (PFC): a priority group (PG) is the bytes that arrived through one channel
and still sit in the next switch (or in the receiving NIC). Wherever a lossless PG ends the step
above its XOFF threshold, the excess it received *this step* is handed back to the upstream queue:
the upstream was paused for that part of the step. Handing back cascades hop by hop to the senders,
which is how congestion spreads. Lossy queues never pause; they tail-drop.

Then each channel's pause fraction for the next step is estimated from what its PG could accept
(drained + free room) against what the channel would have sent unpaused, and applied to *every*
entry on that channel and priority: victims share the pause with the culprits (head-of-line
blocking), and a PG that never drains converges to a full pause. Because the hand-back bounds every
PG at XOFF whatever ``dt`` is, the model stays stable from microsecond steps (where transients are
visible) to the 10 ms steps the lab runs at (where the queues sit at their equilibria).

Counters are accumulated here per step and turned into device counters by :mod:`lab.stats`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from lab.buffers import BufferProfile
from lab.wiring import N_PRIO, N_TIERS, TIER_LEAF_DOWN, IntArray, Wiring

F64 = NDArray[np.float64]
_EPS = 1e-9


class Physics:
    def __init__(self, wiring: Wiring, prio: IntArray, buffers: BufferProfile, dt: float) -> None:
        self.w = wiring
        self.buf = buffers
        self.dt = dt
        P = wiring.n_ports
        self.P = P
        self.cap: F64 = wiring.bps / 8.0                           # bytes/s per channel
        self.refresh_s: F64 = np.array([buffers.pause_refresh_s(b) for b in wiring.bps])
        self.lossless = np.zeros(N_PRIO, dtype=bool)
        self.lossless[list(buffers.lossless)] = True
        self.ecn_capable = np.zeros(N_PRIO, dtype=bool)
        self.ecn_capable[list(buffers.ecn_capable)] = True
        self.frame: F64 = np.array([buffers.frame_bytes(p) for p in range(N_PRIO)])
        self._lossless_flat = np.tile(self.lossless, P)
        # threshold of the PG each channel feeds (that PG lives on the receiving device)
        xoff = np.full((P, N_PRIO), buffers.xoff_bytes)
        xoff[wiring.tier == TIER_LEAF_DOWN] = buffers.nic_xoff_bytes
        self.xoff_base: F64 = xoff
        self.xoff: F64 = xoff.copy()
        # link state and fault-imposed conditions, per channel
        self.channel_up = np.ones(P, dtype=bool)
        self.loss: F64 = np.zeros(P)                 # probability a frame arrives corrupted
        self.forced: F64 = np.zeros((P, N_PRIO))     # pause asserted regardless of buffers
        self.forced_busy: F64 = np.zeros((P, N_PRIO))  # pause asserted whenever traffic arrives
        self.rx_drain: F64 = np.ones((P, N_PRIO))    # tier-3 channels: NIC drain fraction
        self.stuck_bytes: F64 = np.zeros((P, N_PRIO))  # bytes frozen in a deadlocked queue
        # dynamic state
        self.phi: F64 = np.zeros(P * N_PRIO)          # pause fraction imposed on (channel, prio)
        self.pg: F64 = np.zeros(P * N_PRIO)           # PG bytes held downstream of each channel
        self.nicbuf: F64 = np.zeros(P * N_PRIO)       # receive buffers, by the leaf channel
        self.queue: F64 = np.zeros(P * N_PRIO)        # egress queue bytes at the end of the step
        # entries
        E = len(prio)
        self.prio = prio.astype(np.int64)
        self.q: F64 = np.zeros((E, N_TIERS))
        self.ch: IntArray = np.full((E, N_TIERS), -1, dtype=np.int64)
        self.routable = np.zeros(E, dtype=bool)
        self.offered: F64 = np.zeros(E)               # bytes/s each entry wants to send
        self.remaining: F64 = np.full(E, np.inf)      # bytes left to send (finite transfers)
        self.delivered: F64 = np.zeros(E)
        self._tier_ent: list[IntArray] = [np.zeros(0, dtype=np.int64)] * N_TIERS
        self._keys: list[IntArray] = [np.zeros(0, dtype=np.int64)] * N_TIERS
        self._next0: IntArray = np.zeros(0, dtype=np.int64)
        self._has_lossy = False
        self.reset_accumulators()

    # ------------------------------------------------------------------ configuration

    def set_routes(self, ch: IntArray, routable: NDArray[np.bool_]) -> None:
        """Install new paths; bytes queued on a hop that moved follow their entry, except on a
        port that is down or an entry that lost its route, whose bytes are discarded there."""
        old = self.ch
        for tier in range(1, N_TIERS):
            moved = (old[:, tier] >= 0) & ((old[:, tier] != ch[:, tier]) | ~routable)
            lost_hop = moved & ((ch[:, tier] < 0) | ~routable | ~self.channel_up[old[:, tier]])
            if lost_hop.any():
                self._discard(old[lost_hop, tier], self.prio[lost_hop], self.q[lost_hop, tier])
                self.q[lost_hop, tier] = 0.0
        self.ch = ch.copy()
        self.routable = routable.copy()
        for tier in range(N_TIERS):
            m = np.flatnonzero((ch[:, tier] >= 0) & routable)
            self._tier_ent[tier] = m
            self._keys[tier] = ch[m, tier] * N_PRIO + self.prio[m]
        m0 = self._tier_ent[0]
        self._next0 = np.where(ch[m0, 1] >= 0, 1, 3)
        self._has_lossy = bool((~self.lossless[self.prio[self.routable]]).any())

    def set_channel_up(self, up: NDArray[np.bool_]) -> None:
        """Links going down flush the queues of their ports and lose what their PGs held."""
        newly_down = self.channel_up & ~up
        if newly_down.any():
            for tier in range(1, N_TIERS):
                hit = (self.ch[:, tier] >= 0) & newly_down[np.maximum(self.ch[:, tier], 0)]
                if hit.any():
                    self._discard(self.ch[hit, tier], self.prio[hit], self.q[hit, tier])
                    self.q[hit, tier] = 0.0
            flat = np.repeat(newly_down, N_PRIO)
            self.nicbuf[flat] = 0.0
            self.phi[flat] = 0.0
        self.channel_up = up.copy()

    def reset_accumulators(self) -> None:
        P8 = self.P * N_PRIO
        self.acc_tx: F64 = np.zeros(P8)        # bytes sent per (channel, prio)
        self.acc_lost: F64 = np.zeros(P8)      # of which corrupted on the wire
        self.acc_flushed: F64 = np.zeros(P8)   # bytes discarded at a down/unroutable port
        self.acc_dropped: F64 = np.zeros(P8)   # lossy tail drops at egress
        self.acc_nic_drop: F64 = np.zeros(P8)  # lossy drops in a NIC receive buffer
        self.acc_pause_s: F64 = np.zeros(P8)   # time (channel, prio) was paused
        self.acc_frames: F64 = np.zeros(P8)    # PFC frames sent to (channel, prio)
        self.acc_qsum: F64 = np.zeros(P8)      # integral of the queue, byte-seconds
        self.acc_qmax: F64 = np.zeros(P8)
        self.acc_pgsum: F64 = np.zeros(P8)
        self.acc_time = 0.0

    # ------------------------------------------------------------------ the step

    def step(self) -> None:
        dt = self.dt
        P8 = self.P * N_PRIO
        cap = self.cap * dt * self.channel_up
        phi_used = np.maximum(self.phi, np.maximum(self.forced, self.forced_busy).ravel())
        n = len(self.prio)
        q = self.q
        moved = np.zeros((n, N_TIERS))
        lost = np.zeros((n, N_TIERS))
        arr = np.zeros(n)
        demand = np.zeros(P8)
        any_loss = bool(self.loss.any())
        for tier in range(N_TIERS):
            m = self._tier_ent[tier]
            if not m.size:
                continue
            k = self._keys[tier]
            want = (np.minimum(self.offered[m] * dt, self.remaining[m]) if tier == 0
                    else q[m, tier] + arr[m])
            D = np.bincount(k, want, minlength=P8)
            served = _serve(D, cap, phi_used)
            demand += D
            frac = np.divide(served, D, out=np.zeros(P8), where=D > 0)
            out = want * frac[k]
            c = self.ch[m, tier]
            if tier:
                rest = want - out
                down = ~self.channel_up[c]
                if down.any():
                    self.acc_flushed += np.bincount(k[down], rest[down], minlength=P8)
                    rest[down] = 0.0
                q[m, tier] = rest
                if self._has_lossy:
                    self._tail_drop(m, tier, k)
            moved[m, tier] = out
            if any_loss:
                lo = out * self.loss[c]
                lost[m, tier] = lo
                arr[m] = out - lo
            else:
                arr[m] = out
        pg_end = self._sink(cap, moved, arr)
        pg_end += self._hand_back(2, 3, moved, lost)
        pg_end += self._hand_back(1, 2, moved, lost)
        pg_end += self._hand_back(0, -1, moved, lost)
        tx = np.zeros(P8)
        lost_cp = np.zeros(P8)
        for tier in range(N_TIERS):
            m = self._tier_ent[tier]
            if m.size:
                tx += np.bincount(self._keys[tier], moved[m, tier], minlength=P8)
                if any_loss:
                    lost_cp += np.bincount(self._keys[tier], lost[m, tier], minlength=P8)
        m0 = self._tier_ent[0]
        if m0.size:
            sent = moved[m0, 0] - lost[m0, :].sum(axis=1)   # corrupted bytes get retransmitted
            fin = np.isfinite(self.remaining[m0])
            self.remaining[m0[fin]] -= sent[fin]
        self._estimate_pause(demand, cap, tx - lost_cp, pg_end)
        queue = np.zeros(P8)
        for tier in range(1, N_TIERS):
            m = self._tier_ent[tier]
            if m.size:
                queue += np.bincount(self._keys[tier], q[m, tier], minlength=P8)
        queue += self.stuck_bytes.ravel()
        self.queue = queue
        self.acc_tx += tx
        self.acc_lost += lost_cp
        self.acc_qsum += queue * dt
        np.maximum(self.acc_qmax, queue, out=self.acc_qmax)
        self.acc_pgsum += self.pg * dt
        self.acc_time += dt

    def pg_load(self, util: F64) -> F64:
        """Per (channel, prio): the load on whatever drains the PG that channel feeds.

        A switch PG drains into the egress ports its traffic continues on (offered-weighted mean
        of their utilisation); a NIC's buffer drains at its receive rate, so it only builds up
        when the NIC drains slower than the link delivers."""
        P8 = self.P * N_PRIO
        num = np.zeros(P8)
        den = np.zeros(P8)
        for up, held in ((0, -1), (1, 2), (2, 3)):
            m = self._tier_ent[up]
            if not m.size:
                continue
            col = self._next0 if held < 0 else np.full(m.size, held)
            nxt = self.ch[m, col]
            wgt = self.offered[m]
            num += np.bincount(self._keys[up], wgt * util[nxt], minlength=P8)
            den += np.bincount(self._keys[up], wgt, minlength=P8)
        out = np.divide(num, den, out=np.zeros(P8), where=den > 0)
        nic = np.repeat(self.w.tier == TIER_LEAF_DOWN, N_PRIO)
        drain = self.rx_drain.ravel()
        slow = nic & (drain < 1.0)
        out[nic] = 0.0
        out[slow] = np.repeat(util, N_PRIO)[slow] / np.maximum(drain[slow], 1e-3)
        return out

    # ------------------------------------------------------------------ pieces of the step

    def _sink(self, cap: F64, moved: F64, arr: F64) -> F64:
        """Receiving NICs: buffer, drain at (a fraction of) line rate, pause the leaf when full."""
        m = self._tier_ent[TIER_LEAF_DOWN]
        P8 = self.P * N_PRIO
        if not m.size:
            return self.nicbuf.copy()
        k = self._keys[TIER_LEAF_DOWN]
        inflow = np.bincount(k, arr[m], minlength=P8)
        buf = self.nicbuf + inflow
        drain = np.minimum(buf, np.repeat(cap, N_PRIO) * self.rx_drain.ravel())
        buf -= drain
        over = np.maximum(buf - self.xoff.ravel(), 0.0)
        lossy_over = np.where(self._lossless_flat, 0.0, over)
        self.acc_nic_drop += lossy_over
        buf -= lossy_over
        excess = np.where(self._lossless_flat, over, 0.0)
        r = np.minimum(1.0, np.divide(excess, inflow, out=np.zeros(P8), where=inflow > 0))
        back = arr[m] * r[k]
        if back.any():
            self.q[m, TIER_LEAF_DOWN] += back
            moved[m, TIER_LEAF_DOWN] -= back
            arr[m] -= back
            buf -= np.bincount(k, back, minlength=P8)
        np.maximum(buf, 0.0, out=buf)
        self.nicbuf = buf
        self.delivered[m] += arr[m]
        return buf.copy()

    def _hand_back(self, up_tier: int, held_tier: int, moved: F64, lost: F64) -> F64:
        """PFC for the PGs fed by ``up_tier`` channels: return their excess to the upstream.

        ``held_tier`` is where those bytes now queue (-1: tier 1 or 3, per entry)."""
        m = self._tier_ent[up_tier]
        P8 = self.P * N_PRIO
        if not m.size:
            return np.zeros(P8)
        k = self._keys[up_tier]
        col = self._next0 if held_tier < 0 else np.full(m.size, held_tier)
        held = self.q[m, col]
        pg = np.bincount(k, held, minlength=P8)
        excess = np.where(self._lossless_flat, np.maximum(pg - self.xoff.ravel(), 0.0), 0.0)
        if not excess.any():
            return pg
        arrived = moved[m, up_tier] - lost[m, up_tier]
        reflectable = np.minimum(held, np.maximum(arrived, 0.0))
        R = np.bincount(k, reflectable, minlength=P8)
        r = np.minimum(1.0, np.divide(excess, R, out=np.zeros(P8), where=R > 0))
        back = reflectable * r[k]
        self.q[m, col] -= back
        moved[m, up_tier] -= back
        if up_tier > 0:
            self.q[m, up_tier] += back
        return pg - np.bincount(k, back, minlength=P8)

    def _estimate_pause(self, demand: F64, cap: F64, inflow: F64, pg_end: F64) -> None:
        """Pause fractions for the next step, and the pause time and PFC frames of this one."""
        dt = self.dt
        xoff = self.xoff.ravel()
        band = self.buf.xon_band_bytes
        potential = np.minimum(demand, np.repeat(cap, N_PRIO))
        drained = np.maximum(self.pg + inflow - pg_end, 0.0)
        allowed = drained + np.maximum(xoff - pg_end, 0.0)
        busy = potential > 1.0
        ratio = np.divide(allowed, potential, out=np.ones_like(potential), where=busy)
        phi = np.where(busy & self._lossless_flat, np.clip(1.0 - ratio, 0.0, 1.0), 0.0)
        self.phi = phi
        self.pg = pg_end
        up = np.repeat(self.channel_up, N_PRIO)
        asserting = (pg_end >= xoff - band) & self._lossless_flat
        used = np.divide(inflow, potential, out=np.zeros_like(potential), where=busy)
        eff = np.where(asserting, np.where(busy, np.clip(1.0 - used, 0.0, 1.0), 1.0), 0.0)
        eff = np.maximum(eff, self.forced.ravel())
        eff = np.maximum(eff, np.where(busy, self.forced_busy.ravel(), 0.0))
        eff = np.where(up, eff, 0.0)
        refresh = np.repeat(self.refresh_s, N_PRIO)
        full = eff >= 0.999
        rate_u = potential / dt
        rate_d = np.minimum(inflow / dt, rate_u)
        cycles = np.divide(rate_d * (rate_u - rate_d), band * rate_u, out=np.zeros_like(eff),
                           where=(~full) & (eff > 0) & (rate_u > 0))
        self.acc_frames += 2.0 * cycles * dt + eff * dt / refresh
        self.acc_pause_s += eff * dt

    def _tail_drop(self, m: IntArray, tier: int, k: IntArray) -> None:
        P8 = self.P * N_PRIO
        qk = np.bincount(k, self.q[m, tier], minlength=P8)
        over = np.where(self._lossless_flat, 0.0, np.maximum(qk - self.buf.lossy_limit_bytes, 0))
        if over.any():
            fd = np.divide(over, qk, out=np.zeros(P8), where=qk > 0)
            self.q[m, tier] *= 1.0 - fd[k]
            self.acc_dropped += over

    def _discard(self, chans: IntArray, prios: IntArray, nbytes: F64) -> None:
        np.add.at(self.acc_flushed, chans * N_PRIO + prios, nbytes)


def _serve(D: F64, cap: F64, phi: F64) -> F64:
    """Bytes each (channel, priority) sends: DWRR with equal weights over unpaused time."""
    P = cap.size
    want = D.reshape(P, N_PRIO)
    lim = np.minimum(want, (1.0 - phi.reshape(P, N_PRIO)) * cap[:, None])
    over = lim.sum(axis=1) > cap + _EPS
    if over.any():
        rows = lim[over]
        c = cap[over]
        s = np.sort(rows, axis=1)
        prev = np.concatenate([np.zeros((len(s), 1)), np.cumsum(s, axis=1)[:, :-1]], axis=1)
        level = (c[:, None] - prev) / (N_PRIO - np.arange(N_PRIO))
        first = np.argmax(s >= level, axis=1)
        lam = level[np.arange(len(s)), first]
        lim[over] = np.minimum(rows, lam[:, None])
    return lim.ravel()
