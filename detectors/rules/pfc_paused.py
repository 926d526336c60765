"""Paused by the peer: a port whose egress (on a priority) its peer pauses a large share of time.

``pfc_paused`` on port P says P's egress was paused by P's peer for at least ``min_share`` of the
time: P waits for its peer. It is one of the two views of an edge of the pause graph; the other,
the peer's switch pausing through a port, is :mod:`detectors.rules.pfc_pausing`.

The share is measured where the device has a pause timer and bounded from above by frames ×
refresh time where it has only frame counts (:func:`detectors.signals.pause_share`). The evidence
also carries the *throttle*: how much of its line rate the paused sender is kept from sending. A
backlogged sender paused for a share s gets at most 1 − s through, so without a timer the
throttle is the smaller of the frame bound and ``1 − utilisation``. The correlator uses it to tell
an incast (senders held to a small share of their line rate: demand several times the capacity)
from benign oversubscription.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from detectors.base import DetectorOptions
from detectors.features import Frame
from detectors.rule import PortRule, Verdict
from detectors.signals import At, lossless_tx_util, pause_share
from pipeline.kinds import PFC_PAUSED


class PfcPausedOptions(DetectorOptions):
    min_share: float = Field(0.05, gt=0, le=1, description="share of time paused")


class PfcPaused(PortRule[PfcPausedOptions]):
    """A port whose egress its peer pauses."""

    name = PFC_PAUSED
    Options = PfcPausedOptions
    driver = "pfc_rx_frames"
    symptom = PFC_PAUSED
    slots = 8
    slot_label = "priority"

    def evaluate(self, frame: Frame, at: At) -> Verdict:
        share, measured = pause_share(frame, at, "rx")
        util = lossless_tx_util(frame, at)
        known = np.isfinite(share)
        bad = known & (share >= self.opts.min_share)
        good = known & (share < self.opts.min_share / 2)
        throttle = np.where(measured > 0, share, np.minimum(share, np.clip(1.0 - util, 0.0, 1.0)))
        return Verdict(bad, good, {"pause_share": share, "measured": measured, "drain": util,
                                   "throttle": throttle}, known=known)
