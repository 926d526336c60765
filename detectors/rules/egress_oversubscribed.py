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


class EgressOversubscribedOptions(QueueBuildupOptions):
    min_util: float = Field(0.95, gt=0, le=1)
    max_receiver_pause: float = Field(0.05, ge=0, le=1,
                                      description="a receiver pausing more is slow, not flooded")


class EgressOversubscribed(PortRule[EgressOversubscribedOptions]):
    name = EGRESS_OVERSUBSCRIBED
    Options = EgressOversubscribedOptions
    driver = "if_out_octets"
    symptom = EGRESS_OVERSUBSCRIBED

    def candidates(self, frame: Frame) -> NDArray[np.int64]:
        return frame.touched_of(PortKind.HOST)

    def evaluate(self, frame: Frame, at: At) -> Verdict:
        bad, good, ev = congested(frame, at, self.opts)
        share, _ = pause_share(frame, at, "rx")
        host_pause = np.nanmax(np.where(np.isfinite(share), share, 0.0), axis=1)
        bad &= host_pause < self.opts.max_receiver_pause
        good |= host_pause >= 2 * self.opts.max_receiver_pause
        ev["receiver_pause"] = host_pause
        ev["local_in"] = switch_local_bps(frame, at) / line_bps(frame, at)
        known = ev.pop("known").astype(bool)
        return Verdict(bad[:, None], good[:, None], {k: v[:, None] for k, v in ev.items()},
                       known=known[:, None])
