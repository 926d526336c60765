"""Optics degradation: PCS symbol errors rising above the port's own normal before frames corrupt.

A laser ageing or a connector getting dirty raises the pre-FEC bit error rate; FEC hides it
(symbol errors and corrected codewords climb) until the errors exceed what it can correct and
frames arrive corrupted (CorrOpt; vendor FEC thresholds). A healthy link's symbol error rate is
whatever its pre-FEC BER gives and stays put — often nothing at all — so each port is judged
against its own normal, learned as the mean rate of its first ``warmup`` samples and followed
slowly (``baseline_alpha``) while the port is calm:

* **bad**: the rate is at least ``step`` times its normal and at least ``min_errors`` symbol
  errors above it in the sample: the line has become worse than it is, whatever its level (a
  rise from nothing, a climb, or a jump);
* **good**: ``window`` samples in a row without such a sample. A degradation that has only just
  begun counts errors now and then (a raw error rate of 1e-8 gives a fraction of an error per
  interval at 400G): the clean samples between them are no evidence of health, so they neither
  clear nor restart the count.

That mark is the detector's threshold: a degradation is raised on the ``fire_after``-th sample
that crosses it within ``window`` samples (the first counting), so within ``fire_after`` sample
intervals of the crossing once the rate is above it in every sample. It raises ``faulty_link``
through the correlator, usually before :mod:`detectors.rules.fcs_errors` would: the time to act
is before frames are lost. A link whose rate was high from the start learns that as its normal (a
steady rate is not a degradation); clearing waits ``clear_after`` good samples, since a degrading
optic does not heal.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from detectors.base import DetectorOptions, grown
from detectors.features import Frame, col
from detectors.rule import PortRule, Verdict
from detectors.signals import At
from pipeline.kinds import OPTICS_TREND
from pipeline.topology.model import Topology


class OpticsTrendOptions(DetectorOptions):
    step: float = Field(10.0, gt=1, description="rate over the port's normal that is a rise")
    min_errors: float = Field(1.0, gt=0, description="symbol errors above normal in a sample")
    window: int = Field(4, ge=1, description="clean samples in a row that are health")
    warmup: int = Field(5, ge=1, description="samples that define the port's normal")
    baseline_alpha: float = Field(0.02, ge=0, le=1)
    clear_after: int = Field(5, ge=1)


class OpticsTrend(PortRule[OpticsTrendOptions]):
    name = OPTICS_TREND
    Options = OpticsTrendOptions
    driver = "if_in_symbol_errors"
    symptom = OPTICS_TREND

    def __init__(self, instance: str, options: OpticsTrendOptions, *,
                 topology: Topology | None) -> None:
        super().__init__(instance, options, topology=topology)
        self.normal = np.zeros(0)
        self.seen = np.zeros(0, np.int64)
        #: samples since the last one above the threshold
        self.quiet = np.zeros(0, np.int64)

    def evaluate(self, frame: Frame, at: At) -> Verdict:
        o = self.opts
        n = frame.table.n_ports
        self.normal = grown(self.normal, n, 0.0)
        self.seen = grown(self.seen, n, 0)
        self.quiet = grown(self.quiet, n, 1 << 30)
        pid = at.pids
        c = col("if_in_symbol_errors")
        rate = frame.table.value[pid, c]
        dt = frame.table.dt[pid, c]
        known = np.isfinite(rate) & np.isfinite(dt) & (dt > 0)
        rate0 = np.where(known, rate, 0.0)
        seen = self.seen[pid]
        normal = self.normal[pid]
        warm = seen >= o.warmup
        excess = (rate0 - normal) * np.where(known, dt, 0.0)
        risen = (rate0 >= o.step * normal) & (excess >= o.min_errors)
        bad = known & warm & risen
        self.quiet[pid] = np.where(known, np.where(bad, 0, self.quiet[pid] + 1), self.quiet[pid])
        good = known & warm & ~risen & (self.quiet[pid] >= o.window)
        # the normal: the mean of the first samples, then followed slowly while nothing is wrong
        learn = known & (~warm | (good & ~self.firing(pid)))
        k = np.where(warm, 0.0, 1.0 / (seen + 1.0))
        weight = np.where(warm, o.baseline_alpha, k)
        self.normal[pid] = np.where(learn, normal + weight * (rate0 - normal), normal)
        self.seen[pid] = seen + known.astype(np.int64)
        fec = frame.table.value[pid, col("fec_corrected_blocks")]
        with np.errstate(divide="ignore", invalid="ignore"):
            growth = np.where(normal > 0, rate0 / normal, np.where(rate0 > 0, 1e6, 1.0))
        return Verdict(bad[:, None], good[:, None],
                       {"symbol_per_s": rate[:, None], "normal_per_s": normal[:, None],
                        "growth": growth[:, None], "fec_corrected_per_s": fec[:, None],
                        "corruption": np.zeros((pid.size, 1))})
