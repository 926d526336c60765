"""Physical signals derived from the feature table, for a set of ports at a reference time.

Every signal is a ratio against something physical, so thresholds mean the same on any fabric:
utilisation is bits/s over the port's line rate; a pause ratio is the share of wall time a priority
was paused (from the pause-duration counter in µs/s); corruption is bad frames over frames
received; ECN marking is marked packets over packets sent. A signal a device does not provide is
NaN, never 0: detectors treat NaN as "unknown" and fall back to the signals the device does have
(``docs/telemetry-dialects.md``: SNMP has no ECN or queue occupancy, OpenConfig no pause time).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Concatenate, ParamSpec, TypeVar, cast

import numpy as np
from numpy.typing import NDArray

from detectors.features import Frame, col, cols, window
from detectors.ports import PortKind

F64 = NDArray[np.float64]
P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True)
class At:
    """Ports, the event time each is judged at, and how far a companion sample may be from it."""

    pids: NDArray[np.int64]
    ts: NDArray[np.int64]
    slack_s: F64
    #: the sample times a companion may have (:func:`~detectors.features.window`), once per At
    lo: NDArray[np.int64] = field(init=False, repr=False)
    hi: NDArray[np.int64] = field(init=False, repr=False)
    #: the larger At this one is a part of (its ports ``whole.pids[part]``), or None
    whole: At | None = field(default=None, repr=False, compare=False)
    part: slice = field(default_factory=lambda: slice(None), repr=False, compare=False)
    #: signals already computed over this At (:func:`per_port`), by function and arguments
    memo: dict[tuple[object, ...], Any] = field(default_factory=dict, init=False, repr=False,
                                                compare=False)

    def __post_init__(self) -> None:
        if self.whole is None:
            lo, hi = window(self.ts, self.slack_s)
        else:
            lo, hi = self.whole.lo[self.part], self.whole.hi[self.part]
        object.__setattr__(self, "lo", lo)
        object.__setattr__(self, "hi", hi)

    def split(self, part: slice) -> At:
        """The ports ``part`` of this At, as an At whose signals are this one's, sliced: a rule
        that judges many switches one by one computes each signal once for all of them."""
        return At(self.pids[part], self.ts[part], self.slack_s[part], whole=self, part=part)

    @classmethod
    def driven_by(cls, frame: Frame, pids: NDArray[np.int64], ts: NDArray[np.int64],
                  driver: int) -> At:
        """Companions must be within 0.6 of the driver's interval (same poll, not the next)."""
        dt = frame.table.dt[pids, driver]
        slack = np.where(np.isfinite(dt) & (dt > 0), 0.6 * dt, 0.5)
        return cls(pids, ts, slack)


def per_port(signal: Callable[Concatenate[Frame, At, P], R]
             ) -> Callable[Concatenate[Frame, At, P], R]:
    """A signal (arrays whose first axis is the At's ports, or a tuple of them) computed over
    the whole At an At is a part of, once per arguments, and sliced to the part."""
    def at_part(frame: Frame, at: At, /, *args: P.args, **kwargs: P.kwargs) -> R:
        whole = at.whole
        if whole is None:
            return signal(frame, at, *args, **kwargs)
        key = (signal, *(_hashable(a) for a in args), *sorted(kwargs.items()))
        if key not in whole.memo:
            whole.memo[key] = signal(frame, whole, *args, **kwargs)
        got = whole.memo[key]
        if isinstance(got, tuple):
            return cast(R, tuple(g[at.part] for g in got))
        return cast(R, got[at.part])
    functools.update_wrapper(at_part, signal)
    return at_part


def _hashable(arg: object) -> object:
    return (arg.start, arg.stop, arg.step) if isinstance(arg, slice) else arg


@per_port
def companion(frame: Frame, at: At, column: int | slice) -> F64:
    """A column's values at ``at`` (NaN where missing or stale)."""
    return frame.table.fresh_within(at.pids, column, at.lo, at.hi)


@per_port
def line_bps(frame: Frame, at: At) -> F64:
    return frame.ports.line_bps[at.pids]


@per_port
def tx_util(frame: Frame, at: At) -> F64:
    """Port egress bits/s over line rate."""
    return companion(frame, at, col("if_out_octets")) * 8.0 / line_bps(frame, at)


@per_port
def rx_util(frame: Frame, at: At) -> F64:
    return companion(frame, at, col("if_in_octets")) * 8.0 / line_bps(frame, at)


@per_port
def queue_tx_util(frame: Frame, at: At) -> F64:
    """Per egress queue (ports × 8): bits/s over line rate."""
    return companion(frame, at, cols("queue_tx_octets")) * 8.0 / line_bps(frame, at)[:, None]


@per_port
def pause_rx_ratio(frame: Frame, at: At) -> F64:
    """Per priority (ports × 8): share of time the port was paused by its peer (NaN: no timer)."""
    return np.clip(companion(frame, at, cols("pfc_rx_pause_us")) / 1e6, 0.0, 1.0)


@per_port
def pause_tx_ratio(frame: Frame, at: At) -> F64:
    """Per priority: share of time the port paused its peer (NaN: no timer)."""
    return np.clip(companion(frame, at, cols("pfc_tx_pause_us")) / 1e6, 0.0, 1.0)


@per_port
def pause_rx_fps(frame: Frame, at: At) -> F64:
    """Per priority: PFC frames received per second."""
    return companion(frame, at, cols("pfc_rx_frames"))


@per_port
def pause_tx_fps(frame: Frame, at: At) -> F64:
    return companion(frame, at, cols("pfc_tx_frames"))


@per_port
def ecn_fraction(frame: Frame, at: At) -> F64:
    """Per queue: ECN-marked packets over packets sent (NaN where ECN is not reported)."""
    marked = companion(frame, at, cols("queue_ecn_marked_pkts"))
    sent = companion(frame, at, cols("queue_tx_pkts"))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(sent > 0, marked / sent, np.where(np.isfinite(marked), 0.0, np.nan))


@per_port
def queue_bytes(frame: Frame, at: At) -> F64:
    """Per queue: the deepest view of the queue the device gives (watermark, else occupancy)."""
    wm = companion(frame, at, cols("queue_watermark_bytes"))
    occ = companion(frame, at, cols("queue_occupancy_bytes"))
    return np.where(np.isfinite(wm), wm, occ)


@per_port
def corruption(frame: Frame, at: At) -> tuple[F64, F64]:
    """Bad frames over frames received (CorrOpt's corruption rate), and bad frames per second."""
    fcs = companion(frame, at, col("if_in_fcs_errors"))
    pkts = companion(frame, at, col("if_in_pkts"))
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(fcs + pkts > 0, fcs / (fcs + pkts), np.where(np.isfinite(fcs), 0.0, np.nan))
    return rate, fcs


#: 802.1Qbb: a pause asks for at most 65535 quanta of 512 bit times; a port held in XOFF is
#: re-paused every half of that (the usual refresh), so a continuous pause arrives at 1 / refresh
PAUSE_QUANTA_BITS = 65535 * 512


@per_port
def refresh_s(frame: Frame, at: At) -> F64:
    """Seconds between refreshes of a continuous pause at each port's line rate."""
    return PAUSE_QUANTA_BITS / line_bps(frame, at) / 2.0


@per_port
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


@per_port
def lossless_tx_util(frame: Frame, at: At) -> F64:
    """Per priority: what the port sends on that priority's queue over line rate; the port's total
    where the device has no per-queue counters (queues are indexed by the priority they carry)."""
    q = queue_tx_util(frame, at)
    return np.where(np.isfinite(q), q, tx_util(frame, at)[:, None])


def switch_local_bps(frame: Frame, at: At) -> F64:
    """Per port: the bits/s its switch carries from its host ports to its host ports.

    Up-down routing never turns traffic from a fabric port back into the fabric, so on a leaf
    everything its hosts send either leaves through its fabric ports or reaches another of its
    hosts: host ingress minus fabric egress is the host-to-host traffic, and the most any host
    port of the leaf can receive from the leaf's own hosts. Judged at each port's own sample
    time (the switch's newest among the ports asked for); NaN where a port of the switch has no
    fresh rate."""
    ports = frame.ports
    devs = ports.device_id[at.pids]
    uniq, inv = np.unique(devs, return_inverse=True)
    members = [ports.ports_of_id(int(d)) for d in uniq.tolist()]
    if not members:
        return np.empty(0, np.float64)
    owner = np.repeat(np.arange(uniq.size), [m.size for m in members])
    every = np.concatenate(members)
    ts = np.zeros(uniq.size, np.int64)
    np.maximum.at(ts, inv, at.ts)
    slack = np.zeros(uniq.size, np.float64)
    np.maximum.at(slack, inv, at.slack_s)
    sub = At(every, ts[owner], slack[owner])
    kind = ports.kind[every]
    rx = companion(frame, sub, col("if_in_octets")) * 8.0
    tx = companion(frame, sub, col("if_out_octets")) * 8.0
    host_in = np.bincount(owner, np.where(kind == PortKind.HOST, rx, 0.0), uniq.size)
    fabric_out = np.bincount(owner, np.where(kind == PortKind.FABRIC, tx, 0.0), uniq.size)
    local: F64 = np.maximum(host_in - fabric_out, 0.0)[inv]
    return local
