"""Statistics ticks: turn a tick's worth of fluid accumulators into device counters and gauges.

The fluid model sees averages over each step; real queues also see micro-bursts, packet trains
arriving faster than a port drains. They are modelled here in closed form per egress queue, as an
M/M/1-like queue of mean burst size ``b`` at the channel's utilisation ``rho`` on top of the fluid
backlog: ``P(Q_burst > x) = rho * exp(-x (1 - rho) / b)``. From it:

* the occupancy gauge is the fluid backlog plus a draw of the burst queue at the tick instant;
* the watermark is the peak over the tick (the maximum of the fluid backlog, plus the maximum of
  the burst queue over the tick's busy periods), kept over a sliding window of one sample interval;
* ECN marks are served packets times the RED marking probability averaged over that distribution
  (Kmin/Kmax/Pmax; closed form);
* PFC from bursts: a lossless PG whose XOFF sits within reach of the bursts pauses its upstream for
  the fraction of time the burst queue exceeds XOFF, even without sustained overload. With sane
  thresholds this is negligible below ~80% load; with ``buffer_misconfig`` it is not. A priority
  is never paused for longer than the time it spent neither sending nor already paused: the wire
  time-shares, so a channel sending at line rate has no time left in which to be paused.

It also turns line errors into counters: corrupted frames (FCS and input errors, uncorrectable FEC
blocks on the receiving port), PCS symbol errors, and corrected FEC codewords at the link's pre-FEC
bit error rate (healthy 400G PAM4 links correct a few thousand codewords a second).
"""

from __future__ import annotations

import numpy as np

from lab import counters as cf
from lab.buffers import BufferProfile
from lab.counters import CounterState
from lab.physics import F64, Physics
from lab.wiring import TIER_LEAF_DOWN, Wiring

_MAX_RHO = 0.98


class StatsTicker:
    def __init__(self, wiring: Wiring, physics: Physics, counters: CounterState,
                 buffers: BufferProfile, window_ticks: int, seed: int) -> None:
        self.w = wiring
        self.ph = physics
        self.c = counters
        self.buf = buffers
        n_ports = wiring.n_ports
        self.rng = np.random.default_rng([seed, 37])
        self.symbols_per_pkt: F64 = np.zeros(n_ports)   # PCS symbol errors per frame and channel
        self.line_ber: F64 = np.zeros(n_ports)   # bit errors per line bit a fault adds
        # healthy pre-FEC bit error rates, spread around 1e-8 like a real fleet
        self.ber_pre: F64 = 10 ** self.rng.normal(-8.0, 0.4, size=n_ports)
        na = physics.n_act
        cols = physics.prios
        self._ring = np.zeros((max(1, window_ticks), n_ports * na))
        self._ring_pos = 0
        self._frame = np.tile(physics.frame[cols], n_ports)
        self._lossless = np.tile(physics.lossless[cols], n_ports)
        self._ecn = np.tile(physics.ecn_capable[cols], n_ports).astype(np.float64)
        self._ceiling = np.where(self._lossless,
                                 4.0 * physics.xoff_base[:, cols].ravel() + buffers.headroom_bytes,
                                 buffers.lossy_limit_bytes)
        self._cap_flat = np.repeat(physics.cap, na)
        self._refresh = np.repeat(physics.refresh_s, na)

    def tick(self) -> None:
        ph, c, w = self.ph, self.c, self.w
        h = ph.harvest()
        span = h.span
        if span <= 0:
            return
        n_ports = w.n_ports
        na = ph.n_act
        cols = ph.prios
        shape = (n_ports, na)
        cap_bytes = ph.cap * span
        frame = self._frame
        tx_pkts = h.tx / frame
        lost_pkts = h.lost / frame
        peer = w.peer
        port, prio = c.port, c.prio
        out_oct = h.tx.reshape(shape).sum(axis=1)
        out_pkts = tx_pkts.reshape(shape).sum(axis=1)
        lost_oct = h.lost.reshape(shape).sum(axis=1)
        lost_p = lost_pkts.reshape(shape).sum(axis=1)
        port[:, cf.P_OUT_OCTETS] += out_oct
        port[:, cf.P_OUT_PKTS] += out_pkts
        port[peer, cf.P_IN_OCTETS] += out_oct - lost_oct
        port[peer, cf.P_IN_PKTS] += out_pkts - lost_p
        port[peer, cf.P_IN_ERRORS] += lost_p
        port[peer, cf.P_IN_FCS] += lost_p
        port[peer, cf.P_FEC_UNCORR] += lost_p
        symbols = out_pkts * self.symbols_per_pkt + ph.channel_up * w.bps * self.line_ber * span
        port[peer, cf.P_IN_SYMBOL] += symbols
        port[peer, cf.P_FEC_CORR] += ph.channel_up * w.bps * self.ber_pre * span + symbols
        flushed = (h.flushed / frame).reshape(shape)
        dropped = (h.dropped / frame).reshape(shape)
        port[:, cf.P_OUT_DISCARDS] += flushed.sum(axis=1) + dropped.sum(axis=1)
        port[peer, cf.P_IN_DISCARDS] += (h.nic_drop / frame).reshape(shape).sum(axis=1)
        prio[:, cols, cf.Q_TX_PKTS] += tx_pkts.reshape(shape)
        prio[:, cols, cf.Q_TX_OCTETS] += h.tx.reshape(shape)
        prio[:, cols, cf.Q_DROPPED] += dropped + flushed

        # micro-burst layer, per (channel, priority)
        util = np.minimum(out_oct / np.maximum(cap_bytes, 1.0), _MAX_RHO)
        rho = np.repeat(util, na)
        active = h.tx > 0
        b = self.buf.burst_bytes
        lam = (1.0 - rho) / b
        n = rho.size
        u = self.rng.random(n)
        draw = self.rng.exponential(1.0, n) / lam
        burst_now = np.where(active & (u < rho), draw, 0.0)
        ceiling = self._ceiling
        occupancy = np.minimum(h.queue + burst_now, np.maximum(ceiling, h.queue))
        n_busy = np.maximum(1.0, np.repeat(cap_bytes, na) * rho / b)
        u2 = self.rng.random(n)
        with np.errstate(divide="ignore", invalid="ignore"):
            tail = (1.0 - u2 ** (1.0 / n_busy)) / np.maximum(rho, 1e-12)
            burst_peak = np.where(active & (tail < 1.0),
                                  -np.log(np.maximum(tail, 1e-300)) / lam, 0.0)
        peak = np.minimum(h.qmax + burst_peak, np.maximum(ceiling, h.qmax))
        peak = np.maximum(peak, occupancy)
        self._ring[self._ring_pos % len(self._ring)] = peak
        self._ring_pos += 1
        prio[:, cols, cf.Q_OCCUPANCY] = occupancy.reshape(shape)
        prio[:, cols, cf.Q_WATERMARK] = self._ring.max(axis=0).reshape(shape)

        q_mean = h.qsum / span
        p_mark = _expected_mark(q_mean, np.where(active, rho, 0.0), lam, self.buf)
        prio[:, cols, cf.Q_ECN] += (self._ecn * tx_pkts * p_mark).reshape(shape)

        # PFC: fluid pauses from the step accumulators, plus burst excursions over XOFF
        fluid_frac = np.minimum(h.pause_s / span, 1.0)
        pg_mean = h.pgsum / span
        room = np.maximum(h.xoff - pg_mean, 0.0)
        rho_pg = np.minimum(np.maximum(pg_load(ph, util), 0.0), _MAX_RHO)
        lam_pg = (1.0 - rho_pg) / b
        # only below the fluid XOFF regime: there the fluid pause already accounts for it
        calm = active & self._lossless & (pg_mean < h.xoff - h.band)
        burst_frac = np.where(calm, rho_pg * np.exp(-lam_pg * room), 0.0) * (1.0 - fluid_frac)
        # a priority cannot be paused while it sends: burst pauses fit in the time it was neither
        # sending nor already paused (a channel at line rate has no time left to be paused in)
        sending = h.tx / np.maximum(self._cap_flat * span, 1.0)
        burst_frac = np.minimum(burst_frac, np.maximum(1.0 - fluid_frac - sending, 0.0))
        excursion_s = np.maximum(b / np.maximum((1.0 - rho_pg) * self._cap_flat, 1.0),
                                 h.band / self._cap_flat)
        burst_frames = burst_frac * span * (2.0 / excursion_s + 1.0 / self._refresh)
        frames = (h.frames + burst_frames).reshape(shape)
        pause_us = ((h.pause_s + burst_frac * span) * 1e6).reshape(shape)
        # the PG lives on the receiving device: it sends the frames, the channel's port gets them
        prio[:, cols, cf.Q_PFC_RX] += frames
        prio[peer[:, None], cols[None, :], cf.Q_PFC_TX] += frames
        prio[:, cols, cf.Q_PFC_RX_US] += pause_us
        prio[peer[:, None], cols[None, :], cf.Q_PFC_TX_US] += pause_us


def _expected_mark(qf: F64, rho: F64, lam: F64, buf: BufferProfile) -> F64:
    """E[RED(qf + Y)] with Y = 0 w.p. 1 - rho, else exponential with rate lam."""
    kmin, kmax, pmax = buf.ecn_kmin_bytes, buf.ecn_kmax_bytes, buf.ecn_pmax
    slope = pmax / (kmax - kmin)
    p0 = np.where(qf >= kmax, 1.0, np.where(qf > kmin, slope * (qf - kmin), 0.0))
    a = np.maximum(kmin, qf)
    with np.errstate(over="ignore", invalid="ignore"):
        ramp = np.where(a < kmax,
                        slope * (np.exp(-lam * (a - qf)) - np.exp(-lam * (kmax - qf))) / lam, 0.0)
        jump = np.where(qf < kmax, (1.0 - pmax) * np.exp(-lam * (kmax - qf)), 0.0)
    py = np.minimum(p0 + ramp + jump, 1.0)
    return np.asarray((1.0 - rho) * p0 + rho * py, dtype=np.float64)


def pg_load(ph: Physics, util: F64) -> F64:
    """Per (channel, active prio): the load on whatever drains the PG that channel feeds.

    A switch PG drains into the egress ports its traffic continues on (offered-weighted mean of
    their utilisation). A NIC drains at line rate, so bursts never build its buffer up; a slow
    receiver's stalls are modelled as its pause duty instead (0 here)."""
    n = ph.n_ports * ph.n_act
    num = np.zeros(n)
    den = np.zeros(n)
    tiers = ph.tiers()
    for up in range(TIER_LEAF_DOWN):
        m, k = tiers[up]
        if not m.size:
            continue
        # where the PG's bytes continue: the next hop of each entry on its path
        nxt = ph.next_channel(up)
        wgt = ph.offered[m]
        num += np.bincount(k, wgt * util[nxt], minlength=n)
        den += np.bincount(k, wgt, minlength=n)
    out = np.divide(num, den, out=np.zeros(n), where=den > 0)
    out[np.repeat(ph.w.tier == TIER_LEAF_DOWN, ph.n_act)] = 0.0
    return out
