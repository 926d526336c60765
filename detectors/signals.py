"""Physical signals derived from the feature table, for a set of ports at a reference time.

Every signal is a ratio against something physical, so thresholds mean the same on any fabric:
utilisation is bits/s over the port's line rate; a pause ratio is the share of wall time a priority
was paused (from the pause-duration counter in µs/s); corruption is bad frames over frames
received; ECN marking is marked packets over packets sent. A signal a device does not provide is
NaN, never 0: detectors treat NaN as "unknown" and fall back to the signals the device does have
(``docs/telemetry-dialects.md``: SNMP has no ECN or queue occupancy, OpenConfig no pause time).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from detectors.features import Frame, col, cols

F64 = NDArray[np.float64]


@dataclass(frozen=True)
class At:
    """Ports, the event time each is judged at, and how far a companion sample may be from it."""

    pids: NDArray[np.int64]
    ts: NDArray[np.int64]
    slack_s: F64

    @classmethod
    def driven_by(cls, frame: Frame, pids: NDArray[np.int64], ts: NDArray[np.int64],
                  driver: int) -> At:
        """Companions must be within 0.6 of the driver's interval (same poll, not the next)."""
        dt = frame.table.dt[pids, driver]
        slack = np.where(np.isfinite(dt) & (dt > 0), 0.6 * dt, 0.5)
        return cls(pids, ts, slack)


def _get(frame: Frame, at: At, column: int | slice) -> F64:
    return frame.table.fresh(at.pids, column, at.ts, at.slack_s)


def line_bps(frame: Frame, at: At) -> F64:
    return frame.ports.line_bps[at.pids]


def tx_util(frame: Frame, at: At) -> F64:
    """Port egress bits/s over line rate."""
    return _get(frame, at, col("if_out_octets")) * 8.0 / line_bps(frame, at)


def rx_util(frame: Frame, at: At) -> F64:
    return _get(frame, at, col("if_in_octets")) * 8.0 / line_bps(frame, at)


def queue_tx_util(frame: Frame, at: At) -> F64:
    """Per egress queue (ports × 8): bits/s over line rate."""
    return _get(frame, at, cols("queue_tx_octets")) * 8.0 / line_bps(frame, at)[:, None]


def pause_rx_ratio(frame: Frame, at: At) -> F64:
    """Per priority (ports × 8): share of time the port was paused by its peer (NaN: no timer)."""
    return np.clip(_get(frame, at, cols("pfc_rx_pause_us")) / 1e6, 0.0, 1.0)


def pause_tx_ratio(frame: Frame, at: At) -> F64:
    """Per priority: share of time the port paused its peer (NaN: no timer)."""
    return np.clip(_get(frame, at, cols("pfc_tx_pause_us")) / 1e6, 0.0, 1.0)


def pause_rx_fps(frame: Frame, at: At) -> F64:
    """Per priority: PFC frames received per second."""
    return _get(frame, at, cols("pfc_rx_frames"))


def pause_tx_fps(frame: Frame, at: At) -> F64:
    return _get(frame, at, cols("pfc_tx_frames"))


def ecn_fraction(frame: Frame, at: At) -> F64:
    """Per queue: ECN-marked packets over packets sent (NaN where ECN is not reported)."""
    marked = _get(frame, at, cols("queue_ecn_marked_pkts"))
    sent = _get(frame, at, cols("queue_tx_pkts"))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(sent > 0, marked / sent, np.where(np.isfinite(marked), 0.0, np.nan))


def queue_bytes(frame: Frame, at: At) -> F64:
    """Per queue: the deepest view of the queue the device gives (watermark, else occupancy)."""
    wm = _get(frame, at, cols("queue_watermark_bytes"))
    occ = _get(frame, at, cols("queue_occupancy_bytes"))
    return np.where(np.isfinite(wm), wm, occ)


def corruption(frame: Frame, at: At) -> tuple[F64, F64]:
    """Bad frames over frames received (CorrOpt's corruption rate), and bad frames per second."""
    fcs = _get(frame, at, col("if_in_fcs_errors"))
    pkts = _get(frame, at, col("if_in_pkts"))
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(fcs + pkts > 0, fcs / (fcs + pkts), np.where(np.isfinite(fcs), 0.0, np.nan))
    return rate, fcs


#: 802.1Qbb: a pause asks for at most 65535 quanta of 512 bit times; a port held in XOFF is
#: re-paused every half of that (the usual refresh), so a continuous pause arrives at 1 / refresh
PAUSE_QUANTA_BITS = 65535 * 512


def refresh_s(frame: Frame, at: At) -> F64:
    """Seconds between refreshes of a continuous pause at each port's line rate."""
    return PAUSE_QUANTA_BITS / line_bps(frame, at) / 2.0


def pause_share(frame: Frame, at: At, direction: str) -> tuple[F64, F64]:
    """Per priority: the share of time paused (``rx``: the port was paused by its peer; ``tx``:
    the port paused its peer), and whether that share was measured (1.0) or estimated (0.0).

    With a pause timer (SONiC, Arista rx, SNMP) it is measured. With frame counts only
    (OpenConfig) it is estimated as frames × refresh time: exact for a continuous pause, an
    over-estimate when XON/XOFF cycle quickly (each cycle costs two frames), never an
    under-estimate — detectors use it to *rule out* pausing, or to confirm it together with the
    port's drain."""
    if direction == "rx":
        timed, frames = pause_rx_ratio(frame, at), pause_rx_fps(frame, at)
    else:
        timed, frames = pause_tx_ratio(frame, at), pause_tx_fps(frame, at)
    estimate = frames * refresh_s(frame, at)[:, None]
    measured = np.isfinite(timed)
    return np.where(measured, timed, estimate), measured.astype(np.float64)


def lossless_tx_util(frame: Frame, at: At) -> F64:
    """Per priority: what the port sends on that priority's queue over line rate; the port's total
    where the device has no per-queue counters (queues are indexed by the priority they carry)."""
    q = queue_tx_util(frame, at)
    return np.where(np.isfinite(q), q, tx_util(frame, at)[:, None])
