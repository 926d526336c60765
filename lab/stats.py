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
  thresholds this is negligible below ~80% load; with ``buffer_misconfig`` it is not.

It also turns line errors into counters: corrupted frames (FCS and input errors, uncorrectable FEC
blocks on the receiving port), PCS symbol errors, and corrected FEC codewords at the link's pre-FEC
bit error rate (healthy 400G PAM4 links correct a few thousand codewords a second).
"""

from __future__ import annotations

import numpy as np

from lab import counters as K
from lab.buffers import BufferProfile
from lab.counters import CounterState
from lab.physics import F64, Physics
from lab.wiring import N_PRIO, Wiring

_MAX_RHO = 0.98


class StatsTicker:
    def __init__(self, wiring: Wiring, physics: Physics, counters: CounterState,
                 buffers: BufferProfile, window_ticks: int, seed: int) -> None:
        self.w = wiring
        self.ph = physics
        self.c = counters
        self.buf = buffers
        P = wiring.n_ports
        self.rng = np.random.default_rng([seed, 37])
        self.symbols_per_pkt: F64 = np.zeros(P)      # PCS symbol errors per frame, per channel
        # healthy pre-FEC bit error rates, spread around 1e-8 like a real fleet
        self.ber_pre: F64 = 10 ** self.rng.normal(-8.0, 0.4, size=P)
        self._ring = np.zeros((max(1, window_ticks), P * N_PRIO))
        self._ring_pos = 0
        self._frame = np.tile(physics.frame, P)

    def tick(self) -> None:
        ph, c, w = self.ph, self.c, self.w
        T = ph.acc_time
        if T <= 0:
            return
        P = w.n_ports
        P8 = P * N_PRIO
        cap_bytes = ph.cap * T
        frame = self._frame
        tx = ph.acc_tx
        tx_pkts = tx / frame
        lost_pkts = ph.acc_lost / frame
        peer = w.peer
        port, prio = c.port, c.prio
        out_oct = tx.reshape(P, N_PRIO).sum(axis=1)
        out_pkts = tx_pkts.reshape(P, N_PRIO).sum(axis=1)
        lost_oct = ph.acc_lost.reshape(P, N_PRIO).sum(axis=1)
        lost_p = lost_pkts.reshape(P, N_PRIO).sum(axis=1)
        port[:, K.P_OUT_OCTETS] += out_oct
        port[:, K.P_OUT_PKTS] += out_pkts
        port[peer, K.P_IN_OCTETS] += out_oct - lost_oct
        port[peer, K.P_IN_PKTS] += out_pkts - lost_p
        port[peer, K.P_IN_ERRORS] += lost_p
        port[peer, K.P_IN_FCS] += lost_p
        port[peer, K.P_FEC_UNCORR] += lost_p
        symbols = out_pkts * self.symbols_per_pkt
        port[peer, K.P_IN_SYMBOL] += symbols
        up = ph.channel_up
        port[peer, K.P_FEC_CORR] += np.where(up, w.bps * self.ber_pre * T, 0.0) + symbols
        flushed = (ph.acc_flushed / frame).reshape(P, N_PRIO)
        dropped = (ph.acc_dropped / frame).reshape(P, N_PRIO)
        port[:, K.P_OUT_DISCARDS] += flushed.sum(axis=1) + dropped.sum(axis=1)
        nic_drop = (ph.acc_nic_drop / frame).reshape(P, N_PRIO).sum(axis=1)
        port[peer, K.P_IN_DISCARDS] += nic_drop
        prio[:, :, K.Q_TX_PKTS] += tx_pkts.reshape(P, N_PRIO)
        prio[:, :, K.Q_TX_OCTETS] += tx.reshape(P, N_PRIO)
        prio[:, :, K.Q_DROPPED] += dropped + flushed

        # micro-burst layer, per (channel, priority)
        util = np.clip(out_oct / np.maximum(cap_bytes, 1.0), 0.0, _MAX_RHO)
        rho = np.repeat(util, N_PRIO)
        active = tx > 0
        b = self.buf.burst_bytes
        lam = (1.0 - rho) / b
        lossless = np.tile(ph.lossless, P)
        ceiling = np.where(lossless, 4.0 * ph.xoff_base.ravel() + self.buf.headroom_bytes,
                           self.buf.lossy_limit_bytes)
        u = self.rng.random(P8)
        draw = self.rng.exponential(1.0, P8) / lam
        burst_now = np.where(active & (u < rho), draw, 0.0)
        occupancy = np.minimum(ph.queue + burst_now, np.maximum(ceiling, ph.queue))
        n_busy = np.maximum(1.0, np.repeat(cap_bytes, N_PRIO) * rho / b)
        u2 = self.rng.random(P8)
        with np.errstate(divide="ignore", invalid="ignore"):
            tail = (1.0 - u2 ** (1.0 / n_busy)) / np.maximum(rho, 1e-12)
            burst_peak = np.where(active & (tail < 1.0),
                                  -np.log(np.maximum(tail, 1e-300)) / lam, 0.0)
        peak = np.minimum(ph.acc_qmax + burst_peak, np.maximum(ceiling, ph.acc_qmax))
        peak = np.maximum(peak, occupancy)
        self._ring[self._ring_pos % len(self._ring)] = peak
        self._ring_pos += 1
        prio[:, :, K.Q_OCCUPANCY] = occupancy.reshape(P, N_PRIO)
        prio[:, :, K.Q_WATERMARK] = self._ring.max(axis=0).reshape(P, N_PRIO)

        q_mean = ph.acc_qsum / T
        ecn = np.tile(ph.ecn_capable, P)
        p_mark = _expected_mark(q_mean, np.where(active, rho, 0.0), lam, self.buf)
        prio[:, :, K.Q_ECN] += np.where(ecn, tx_pkts * p_mark, 0.0).reshape(P, N_PRIO)

        # PFC: fluid pauses from the step accumulators, plus burst excursions over XOFF
        fluid_frac = np.clip(ph.acc_pause_s / T, 0.0, 1.0)
        pg_mean = ph.acc_pgsum / T
        xoff = ph.xoff.ravel()
        room = np.maximum(xoff - pg_mean, 0.0)
        rho_pg = np.clip(ph.pg_load(util), 0.0, _MAX_RHO)
        lam_pg = (1.0 - rho_pg) / b
        # only below the fluid XOFF regime: there the fluid pause already accounts for it
        calm = active & lossless & (pg_mean < xoff - self.buf.xon_band_bytes)
        burst_frac = np.where(calm, rho_pg * np.exp(-lam_pg * room), 0.0) * (1.0 - fluid_frac)
        cap8 = np.repeat(ph.cap, N_PRIO)
        excursion_s = np.maximum(b / np.maximum((1.0 - rho_pg) * cap8, 1.0),
                                 self.buf.xon_band_bytes / cap8)
        refresh = np.repeat(ph.refresh_s, N_PRIO)
        burst_frames = burst_frac * T * (2.0 / excursion_s + 1.0 / refresh)
        frames = (ph.acc_frames + burst_frames).reshape(P, N_PRIO)
        pause_us = ((ph.acc_pause_s + burst_frac * T) * 1e6).reshape(P, N_PRIO)
        # the PG lives on the receiving device: it sends the frames, the channel's port gets them
        prio[:, :, K.Q_PFC_RX] += frames
        prio[peer, :, K.Q_PFC_TX] += frames
        prio[:, :, K.Q_PFC_RX_US] += pause_us
        prio[peer, :, K.Q_PFC_TX_US] += pause_us
        ph.reset_accumulators()


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
    return (1.0 - rho) * p0 + rho * py
