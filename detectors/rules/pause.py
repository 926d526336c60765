"""Pause ratio and propagation: which ports are held back by their peer, and which hold theirs.

Every edge of the pause graph is one of these two views of one link direction:

* ``pfc_paused`` on port P: P's egress (on a priority) was paused by P's peer for at least
  ``min_share`` of the time — P waits for its peer;
* ``pfc_pausing`` on port Q: Q's switch paused Q's peer for at least ``min_share`` of the time —
  the peer waits for Q's switch (the only view of a host being paused by its leaf, since hosts are
  not monitored).

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
from detectors.signals import At, lossless_tx_util, pause_share, rx_util
from pipeline.kinds import PFC_PAUSED, PFC_PAUSING
from pipeline.topology.model import Topology


class PauseOptions(DetectorOptions):
    min_share: float = Field(0.05, gt=0, le=1, description="share of time paused")


class PfcPaused(PortRule):
    """A port whose egress its peer pauses."""

    name = "pause_rx"
    Options = PauseOptions
    driver = "pfc_rx_frames"
    symptom = PFC_PAUSED
    slots = 8
    slot_label = "priority"

    def __init__(self, instance: str, options: PauseOptions, *,
                 topology: Topology | None) -> None:
        super().__init__(instance, options, topology=topology)
        self.opts = options

    def evaluate(self, frame: Frame, at: At) -> Verdict:
        share, measured = pause_share(frame, at, "rx")
        util = lossless_tx_util(frame, at)
        known = np.isfinite(share)
        bad = known & (share >= self.opts.min_share)
        good = known & (share < self.opts.min_share / 2)
        throttle = np.where(measured > 0, share, np.minimum(share, np.clip(1.0 - util, 0.0, 1.0)))
        return Verdict(bad, good, {"pause_share": share, "measured": measured, "drain": util,
                                   "throttle": throttle})


class PfcPausing(PortRule):
    """A port through which its switch pauses the peer."""

    name = "pause_tx"
    Options = PauseOptions
    driver = "pfc_tx_frames"
    symptom = PFC_PAUSING
    slots = 8
    slot_label = "priority"

    def __init__(self, instance: str, options: PauseOptions, *,
                 topology: Topology | None) -> None:
        super().__init__(instance, options, topology=topology)
        self.opts = options

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
                                   "inbound": inbound, "throttle": throttle})
