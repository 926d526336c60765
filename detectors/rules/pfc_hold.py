"""PFC deadlock, per port: a switch-to-switch port held paused with nothing leaving it.

A deadlock is a cyclic buffer dependency (Hu et al., HotNets'16): each port of the cycle is
paused by the next switch, whose buffer is full of traffic waiting on the port after it, so no
port of the cycle ever transmits. Per port it looks like a storm on a fabric link (paused all the
time, the priority's queue drains nothing) that does not go away: watchdogs act within hundreds of
milliseconds, so a port still stuck ``fire_after`` samples later is beyond their reach. This rule
raises ``pfc_hold`` on such ports; the correlator closes the cycle through the topology and names
the links (:mod:`detectors.correlation.pause_graph`).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from pydantic import Field

from detectors.features import Frame
from detectors.ports import PortKind
from detectors.rules.pfc_watchdog import PfcWatchdog, PfcWatchdogOptions
from pipeline.kinds import PFC_HOLD


class PfcHoldOptions(PfcWatchdogOptions):
    fire_after: int = Field(2, ge=2)


class PfcHold(PfcWatchdog):
    name = PFC_HOLD
    Options = PfcHoldOptions
    symptom = PFC_HOLD

    def candidates(self, frame: Frame) -> NDArray[np.int64]:
        return frame.touched_of(PortKind.FABRIC)
