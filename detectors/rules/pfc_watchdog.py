"""The PFC watchdog at telemetry cadence: a port paused continuously whose queue makes no progress.

SONiC's PFC watchdog declares a storm on a queue when it was paused at two consecutive polls, PFC
frames kept arriving, and the queue transmitted nothing in between (sonic-swss
``pfc_detect_*.lua``); NIC and ToR watchdogs act on the same condition within ~100 ms (Guo et al.,
SIGCOMM'16). We confirm at the telemetry cadence what the hardware has already contained:

* a sample **pauses** when PFC frames for the priority arrived (or the pause timer moved);
* a sample is **stuck** when, in addition, the priority's queue drained less than ``max_drain``
  of line rate while the port was paused for most of the interval (timer, or frames × refresh time,
  ≥ ``min_pause_share``: 0.5 rather than ~1 because SNMP timestamps come from the device clock
  read a moment apart from the counters, which puts ±25 % of noise on a one-second ratio; the
  drain, a ratio of two byte counts, is what carries the decision);
* the symptom fires on a stuck sample that ends a run of at least ``fire_after`` pausing samples:
  two observations, the last of them stuck. A storm that starts mid-interval is therefore confirmed
  at the end of the next interval; one that starts on a sample boundary, at the second;
* it clears after ``clear_after`` samples that either carry no pause, or drain at least
  ``drained`` of line rate while paused less than ``light`` of the time. A sample paused for
  part of its interval counts toward the run: it is the storm's onset.

On a host-facing port this is a NIC that stopped draining (``pfc_storm`` on the host); on a
fabric port it is a victim of a storm or a member of a deadlock, which the correlator decides.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from pydantic import Field

from detectors.base import DetectorOptions
from detectors.features import Frame
from detectors.ports import PortKind
from detectors.rule import PortRule, Verdict
from detectors.signals import At, lossless_tx_util, pause_rx_fps, pause_share
from pipeline.kinds import PFC_WATCHDOG
from pipeline.model import Severity


class PfcWatchdogOptions(DetectorOptions):
    min_pause_share: float = Field(0.5, gt=0, le=1)
    max_drain: float = Field(0.01, ge=0, lt=1, description="share of line rate")
    drained: float = Field(0.05, gt=0, lt=1, description="drain that proves progress")
    light: float = Field(0.05, gt=0, lt=1, description="pause share that is only a blip")


class PfcWatchdog(PortRule[PfcWatchdogOptions]):
    name = PFC_WATCHDOG
    Options = PfcWatchdogOptions
    driver = "pfc_rx_frames"
    symptom = PFC_WATCHDOG
    slots = 8
    slot_label = "priority"

    def candidates(self, frame: Frame) -> NDArray[np.int64]:
        """Host-facing ports: the ToR watchdog's ports (fabric ports:
        :mod:`detectors.rules.pfc_hold`)."""
        return frame.touched_of(PortKind.HOST)

    def evaluate(self, frame: Frame, at: At) -> Verdict:
        share, _measured = pause_share(frame, at, "rx")
        frames = pause_rx_fps(frame, at)
        drain = lossless_tx_util(frame, at)
        known = np.isfinite(frames) & np.isfinite(drain)
        pausing = known & ((frames > 0) | (share > 0))
        stuck = pausing & (share >= self.opts.min_pause_share) & (drain < self.opts.max_drain)
        # progress: draining and barely paused; a sample paused for part of the interval is the
        # onset of a storm as much as a stuck one is its confirmation
        good = known & (~pausing | ((drain >= self.opts.drained) & (share < self.opts.light)))
        # fire only on a stuck sample: evidence needed there is fire_after, elsewhere never
        need = np.where(stuck, self.persistence.fire_after, np.iinfo(np.int32).max)
        return Verdict(pausing, good, {"pause_share": share, "drain": drain,
                                       "pause_fps": frames},
                       fire_after=need.astype(np.int64), severity=Severity.CRITICAL)
