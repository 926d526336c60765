"""Egress oversubscribed: host-facing ports pinned at line rate with a standing queue behind them.

Many senders converging on one receiver saturate the leaf port facing it: it runs at line rate,
its queue stands (ECN marking, or pinned at line rate where ECN is not reported), and the receiver
itself is not pausing (a pausing receiver is a slow receiver or a stuck NIC, not an incast). This
rule raises ``egress_oversubscribed`` on such ports; whether the demand behind the queue is an
incast or benign oversubscription is decided by the correlator from how hard the senders are
throttled (:mod:`detectors.correlation.classify`): collective traffic keeps a receiver's demand
near its line rate by design, an incast multiplies it by the number of senders. Its evidence
carries what the port could have received from its own leaf's hosts (``local_in``, a share of its
line rate: the leaf's host-to-host traffic, :func:`~detectors.signals.switch_local_bps`), so the
correlator can tell a neighbour held back *by* the port from one that only sends *past* it.

An incast is an event: demand on a receiver that was not there before. A port already saturated
in its first ``warmup`` judged samples carries the workload's steady state as far as anyone
watching can tell (a receiver that a fixed traffic matrix gives more than its line rate, as
random many-to-many traffic gives some), the same way a leaf's ECMP group uneven from the start
is its hash's normal (:mod:`detectors.rules.uplink_imbalance`). Its evidence says so
(``habitual`` 1) until the port has been judged free of it (good) for ``warmup`` samples in a
row; a saturation that begins after that is judged as new. The correlator names no incast on a
habitual port: its symptom stays visible, as any busy port's does.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from pydantic import Field

from detectors.features import Frame
from detectors.ports import PortKind
from detectors.rule import PortRule, Verdict
from detectors.rules.queue_buildup import QueueBuildupOptions, congested
from detectors.signals import At, line_bps, pause_share, switch_local_bps
from pipeline.kinds import EGRESS_OVERSUBSCRIBED
from pipeline.topology.model import Topology


class EgressOversubscribedOptions(QueueBuildupOptions):
    min_util: float = Field(0.95, gt=0, le=1)
    max_receiver_pause: float = Field(0.05, ge=0, le=1,
                                      description="a receiver pausing more is slow, not flooded")
    warmup: int = Field(10, ge=1, description="samples a port is watched before a saturation "
                                              "counts as new (an incast), not its normal")


class EgressOversubscribed(PortRule[EgressOversubscribedOptions]):
    name = EGRESS_OVERSUBSCRIBED
    Options = EgressOversubscribedOptions
    driver = "if_out_octets"
    symptom = EGRESS_OVERSUBSCRIBED

    def __init__(self, instance: str, options: EgressOversubscribedOptions, *,
                 topology: Topology | None) -> None:
        super().__init__(instance, options, topology=topology)
        #: per port: samples judged, samples judged good in a row, and whether its saturation
        #: was there when monitoring started (not good for ``warmup`` samples in a row since)
        self._seen = np.zeros(0, np.int64)
        self._cool = np.zeros(0, np.int64)
        self._habitual = np.zeros(0, bool)

    def candidates(self, frame: Frame) -> NDArray[np.int64]:
        return frame.touched_of(PortKind.HOST)

    def _habit(self, pids: NDArray[np.int64], bad: NDArray[np.bool_],
               good: NDArray[np.bool_]) -> NDArray[np.bool_]:
        """Whether each port's saturation is the one it had when monitoring started: it was bad
        in the port's first ``warmup`` samples and has not been good for ``warmup`` samples in a
        row since (a sample that is neither, in the rule's hysteresis, changes nothing)."""
        need = int(pids.max()) + 1 if pids.size else 0
        if self._seen.shape[0] < need:
            grow = need - self._seen.shape[0]
            self._seen = np.concatenate([self._seen, np.zeros(grow, np.int64)])
            self._cool = np.concatenate([self._cool, np.zeros(grow, np.int64)])
            self._habitual = np.concatenate([self._habitual, np.zeros(grow, bool)])
        warmup = self.opts.warmup
        starting = self._seen[pids] < warmup
        self._seen[pids] += 1
        self._cool[pids] = np.where(bad, 0, np.where(good, self._cool[pids] + 1,
                                                     self._cool[pids]))
        habitual = (self._habitual[pids] | (bad & starting)) & (self._cool[pids] < warmup)
        self._habitual[pids] = habitual
        return habitual

    def evaluate(self, frame: Frame, at: At) -> Verdict:
        bad, good, ev = congested(frame, at, self.opts)
        share, _ = pause_share(frame, at, "rx")
        host_pause = np.nanmax(np.where(np.isfinite(share), share, 0.0), axis=1)
        bad &= host_pause < self.opts.max_receiver_pause
        good |= host_pause >= 2 * self.opts.max_receiver_pause
        ev["receiver_pause"] = host_pause
        ev["local_in"] = switch_local_bps(frame, at) / line_bps(frame, at)
        ev["habitual"] = self._habit(at.pids, bad, good).astype(np.float64)
        known = ev.pop("known").astype(bool)
        return Verdict(bad[:, None], good[:, None], {k: v[:, None] for k, v in ev.items()},
                       known=known[:, None])
