"""Pausing the peer: a port through which its switch pauses the peer a large share of the time.

``pfc_pausing`` on port Q says Q's switch paused Q's peer for at least ``min_share`` of the time:
the peer waits for Q's switch. It is the other view of a pause-graph edge
(:mod:`detectors.rules.pfc_paused`), and the only view of a host being paused by its leaf, since
hosts are not monitored.

Without a pause timer the share is an upper bound (frames × refresh time), and a backlogged peer
paused for a share s gets at most 1 − s of line rate through, so the evidence's *throttle* (how
much of its line rate the peer is kept from sending) is the smaller of the bound and one minus
the port's inbound utilisation.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from detectors.base import DetectorOptions
from detectors.features import Frame
from detectors.rule import PortRule, Verdict
from detectors.signals import At, pause_share, rx_util
from pipeline.kinds import PFC_PAUSING


class PfcPausingOptions(DetectorOptions):
    min_share: float = Field(0.05, gt=0, le=1, description="share of time pausing the peer")


class PfcPausing(PortRule[PfcPausingOptions]):
    """A port through which its switch pauses the peer."""

    name = PFC_PAUSING
    Options = PfcPausingOptions
    driver = "pfc_tx_frames"
    symptom = PFC_PAUSING
    slots = 8
    slot_label = "priority"

    def evaluate(self, frame: Frame, at: At) -> Verdict:
        share, measured = pause_share(frame, at, "tx")
        inbound = rx_util(frame, at)[:, None] * np.ones((1, share.shape[1]))
        known = np.isfinite(share)
        bad = known & (share >= self.opts.min_share)
        good = known & (share < self.opts.min_share / 2)
        # without a timer, the share is an upper bound, and a backlogged peer paused for a share
        # s gets at most 1 - s of line rate through: the smaller bound holds
        throttle = np.where(measured > 0, share, np.minimum(share, np.clip(1.0 - inbound, 0, 1)))
        return Verdict(bad, good, {"pause_share": share, "measured": measured,
                                   "inbound": inbound, "throttle": throttle}, known=known)
