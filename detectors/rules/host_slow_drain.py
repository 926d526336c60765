"""Host slow drain: a host that pauses its leaf port while taking less than line rate.

A NIC that drains at line rate can only fill its receive buffer when arrivals approach line rate,
so a healthy receiver pauses rarely, and only near saturation. A NIC that drains at a fraction of
line rate (cache misses, PCIe back-pressure: Guo et al. SIGCOMM'16) pauses whenever traffic
arrives faster than it drains, at a duty cycle near ``1 − drain``. The rule:

* **bad**: the host paused the port for at least ``min_share`` of the time while the port sent
  between ``min_drain`` (below that it is stuck: a storm) and ``max_util`` of line rate; where
  only frame counts exist, the share is an upper bound and XON/XOFF cycling inflates it near
  saturation, so the port must run below ``max_util_frames`` and the share bound be higher;
  where the share is measured it must also reach half of the idle line rate (``1 − util``), the
  duty cycle of a receiver that drains at its utilisation;
* **good**: the host barely pauses, or the port runs at line rate;
* fires after ``fire_after`` (2) bad samples, the onset counting: a sample paused for part of
  its interval is already the NIC's duty cycle, so the receiver is named within two intervals of
  the slowdown (three when the onset sample is too short to show it); a slow receiver is a
  warning for the host team, not a page that races a watchdog.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from pydantic import Field

from detectors.base import DetectorOptions
from detectors.features import Frame
from detectors.ports import PortKind
from detectors.rule import PortRule, Verdict
from detectors.signals import At, pause_share, tx_util
from pipeline.kinds import HOST_SLOW_DRAIN


class HostSlowDrainOptions(DetectorOptions):
    fire_after: int = Field(2, ge=1)
    min_share: float = Field(0.05, gt=0, le=1)
    min_share_frames: float = Field(0.1, gt=0)
    min_drain: float = Field(0.01, ge=0, lt=1)
    max_util: float = Field(0.9, gt=0, le=1)
    max_util_frames: float = Field(0.75, gt=0, le=1)


class HostSlowDrain(PortRule[HostSlowDrainOptions]):
    name = HOST_SLOW_DRAIN
    Options = HostSlowDrainOptions
    driver = "pfc_rx_frames"
    symptom = HOST_SLOW_DRAIN

    def candidates(self, frame: Frame) -> NDArray[np.int64]:
        return frame.touched_of(PortKind.HOST)

    def evaluate(self, frame: Frame, at: At) -> Verdict:
        o = self.opts
        shares, measured = pause_share(frame, at, "rx")
        share = np.nanmax(np.where(np.isfinite(shares), shares, -1.0), axis=1)
        timed = np.nanmax(measured, axis=1) > 0
        util = tx_util(frame, at)
        known = (share >= 0) & np.isfinite(util)
        draining = util >= o.min_drain
        timed_bad = timed & (share >= np.maximum(o.min_share, 0.5 * (1.0 - util))) & \
            (util < o.max_util)
        frames_bad = ~timed & (share >= o.min_share_frames) & (util < o.max_util_frames)
        bad = known & draining & (timed_bad | frames_bad)
        good = known & ((share < o.min_share / 2) | (util >= o.max_util))
        return Verdict(bad[:, None], good[:, None],
                       {"pause_share": share[:, None], "drain": util[:, None],
                        "measured": timed.astype(float)[:, None]}, known=known[:, None])
