"""ECN marking and queue build-up: egress ports with a standing queue behind them.

The queue is seen through ECN: RED/DCQCN marks with a probability that rises from the ``Kmin``
threshold, so marking ``min_ecn`` or more of the packets sent means the queue spent a real share
of the interval above Kmin (DCQCN, Zhu et al. SIGCOMM'15). Devices that report no ECN (SNMP: notes
§2.1) show a standing queue only by being pinned at line rate (``saturated``).

A port with a standing queue is a *blocked egress* in the pause graph: it explains why its switch
pauses the ports that feed it. Its utilisation says which kind: near line rate it is congested by
its own load (a root candidate); far below line rate it is held back by its peer (a link in a
pause chain). On its own it is benign — a busy port doing its job — and pages nobody.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from detectors.base import DetectorOptions
from detectors.features import Frame
from detectors.rule import PortRule, Verdict
from detectors.signals import At, ecn_fraction, queue_bytes, tx_util
from pipeline.kinds import QUEUE_BUILDUP


class QueueBuildupOptions(DetectorOptions):
    min_util: float = Field(0.0, ge=0, le=1, description="0: any standing queue counts")
    min_ecn: float = Field(0.01, gt=0, le=1, description="share of packets ECN-marked")
    saturated: float = Field(0.97, gt=0, le=1, description="line-rate share without ECN data")


def congested(frame: Frame, at: At, opts: QueueBuildupOptions) -> tuple[np.ndarray, np.ndarray,
                                                                      dict[str, np.ndarray]]:
    """Bad and good verdicts of a standing queue, and its evidence (shared with
    :mod:`detectors.rules.egress_oversubscribed`)."""
    util = tx_util(frame, at)
    ecn = np.nanmax(np.where(np.isfinite(ecn_fraction(frame, at)), ecn_fraction(frame, at),
                             -1.0), axis=1)
    ecn = np.where(ecn < 0, np.nan, ecn)
    queue = np.nanmax(np.where(np.isfinite(queue_bytes(frame, at)), queue_bytes(frame, at),
                               -1.0), axis=1)
    queue = np.where(queue < 0, np.nan, queue)
    has_ecn = np.isfinite(ecn)
    standing = np.where(has_ecn, ecn >= opts.min_ecn, util >= opts.saturated)
    known = np.isfinite(util)
    bad = known & (util >= opts.min_util) & standing
    calm = np.where(has_ecn, ecn < opts.min_ecn / 4, util < opts.saturated - 0.1)
    good = known & ((util < opts.min_util - 0.1) | calm)
    return bad, good, {"util": util, "ecn": ecn, "queue_bytes": queue, "known": known}


class QueueBuildup(PortRule[QueueBuildupOptions]):
    name = QUEUE_BUILDUP
    Options = QueueBuildupOptions
    driver = "if_out_octets"
    symptom = QUEUE_BUILDUP

    def evaluate(self, frame: Frame, at: At) -> Verdict:
        bad, good, ev = congested(frame, at, self.opts)
        known = ev.pop("known").astype(bool)
        return Verdict(bad[:, None], good[:, None], {k: v[:, None] for k, v in ev.items()},
                       known=known[:, None])
