"""Frame corruption at a port's receiver: FCS errors over frames received (CorrOpt).

CorrOpt (Zhuo et al., SIGCOMM'17) found that a corrupting link's loss rate is stable over time and
independent of its load, that it ranges from 1e-8 to 1e-2, and that a healthy link corrupts
essentially nothing. So the signal is the *rate* ``fcs / (fcs + frames received)``, not a count,
and it needs no baseline:

* a sample is **bad** when it carries FCS errors and its corruption rate is at least
  ``min_rate`` (CorrOpt's 1e-8 "corrupting" floor);
* a symptom fires after ``fire_after`` consecutive bad samples (two independent observations: a
  lone bit flip does not page anyone), or on the first one that holds ``burst_errors`` bad frames
  or more: random stray errors come one at a time, so ten in one interval are a corrupting link
  already, and RDMA's go-back-N pays for every one of them;
* it clears only when the link has carried enough frames without a single error that, at the rate
  it was measured at, we would have expected ``clear_expected_errors`` of them (5 by default:
  the chance a still-corrupting link shows none is e^-5 < 1 %). A low-rate corruption therefore
  needs a long clean stretch to clear, a high-rate one a short stretch — the hysteresis follows the
  physics, not a fixed count.

The receiver counts the errors, so the port that fires tells the direction;
:mod:`detectors.correlation.links` compares both ends.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from detectors.base import DetectorOptions, grown
from detectors.features import Frame, col
from detectors.rule import PortRule, Verdict
from detectors.signals import At, companion, corruption
from pipeline.kinds import FCS_ERRORS
from pipeline.topology.model import Topology


class FcsErrorsOptions(DetectorOptions):
    min_rate: float = Field(1e-8, gt=0, lt=1, description="CorrOpt's corrupting floor")
    clear_expected_errors: float = Field(5.0, gt=0)
    burst_errors: float = Field(10.0, gt=1, description="bad frames in one sample: fire at once")


class FcsErrors(PortRule[FcsErrorsOptions]):
    name = FCS_ERRORS
    Options = FcsErrorsOptions
    driver = "if_in_fcs_errors"
    symptom = FCS_ERRORS

    def __init__(self, instance: str, options: FcsErrorsOptions, *,
                 topology: Topology | None) -> None:
        super().__init__(instance, options, topology=topology)
        self.measured = np.zeros(0, np.float64)  # the corruption rate the symptom fired with
        self.clean_frames = np.zeros(0, np.float64)  # frames received since the last error

    def evaluate(self, frame: Frame, at: At) -> Verdict:
        self.measured = grown(self.measured, frame.table.n_ports, 0.0)
        self.clean_frames = grown(self.clean_frames, frame.table.n_ports, 0.0)
        rate, fcs = corruption(frame, at)
        dt = frame.table.dt[at.pids, col("if_in_fcs_errors")]
        pkts = companion(frame, at, col("if_in_pkts"))
        frames = np.where(np.isfinite(pkts) & np.isfinite(dt), pkts * dt, np.nan)
        errors = np.isfinite(fcs) & (fcs > 0)
        bad = errors & (rate >= self.opts.min_rate)
        pid = at.pids
        self.clean_frames[pid] = np.where(errors, 0.0, self.clean_frames[pid] +
                                          np.nan_to_num(frames))
        firing = self.firing(pid)
        self.measured[pid] = np.where(bad, np.maximum(self.measured[pid] * firing, rate),
                                      self.measured[pid])
        # clean: no error, and enough frames passed that the measured rate would have shown some
        expected = self.clean_frames[pid] * np.maximum(self.measured[pid], self.opts.min_rate)
        enough = ~firing | (expected >= self.opts.clear_expected_errors)
        good = np.isfinite(fcs) & ~errors & enough
        count = np.where(np.isfinite(fcs) & np.isfinite(dt), fcs * dt, 0.0)
        need = np.where(count >= self.opts.burst_errors, 1, self.opts.fire_after)
        return Verdict(bad[:, None], good[:, None],
                       {"corruption": rate[:, None], "fcs_per_s": fcs[:, None],
                        "frames_per_s": pkts[:, None]}, fire_after=need.astype(np.int64))
