"""Optics degradation as a trend: PCS symbol errors rising before frames start to corrupt.

A laser ageing or a connector getting dirty raises the pre-FEC bit error rate gradually; FEC hides
it (symbol errors and corrected codewords climb) until the errors exceed what it can correct and
frames arrive corrupted (CorrOpt; vendor FEC thresholds). A healthy link's symbol error rate is
whatever its pre-FEC BER gives and stays put; a degrading one keeps growing. Per receiving port,
over the last ``window`` samples of its symbol error rate:

* **bad**: errors in at least half of the window, and the second half's mean at least ``growth``
  times the first half's — the rate is climbing, whatever its level;
* **good**: no errors in the recent half window, or a flat rate (growth < ``flat``).

The symptom fires after ``fire_after`` windows in a row and raises ``faulty_link`` through the
correlator before :mod:`detectors.rules.fcs_errors` would: the time to act is before frames are
lost.
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
    window: int = Field(8, ge=4)
    growth: float = Field(2.0, gt=1)
    flat: float = Field(1.2, gt=1)
    clear_after: int = Field(5, ge=1)


class OpticsTrend(PortRule[OpticsTrendOptions]):
    name = OPTICS_TREND
    Options = OpticsTrendOptions
    driver = "if_in_symbol_errors"
    symptom = OPTICS_TREND

    def __init__(self, instance: str, options: OpticsTrendOptions, *,
                 topology: Topology | None) -> None:
        super().__init__(instance, options, topology=topology)
        self.ring = np.zeros((0, options.window))
        self.filled = np.zeros(0, np.int64)

    def evaluate(self, frame: Frame, at: At) -> Verdict:
        w = self.opts.window
        n = frame.table.n_ports
        self.ring = grown(self.ring, n, np.nan)
        self.filled = grown(self.filled, n, 0)
        rate = frame.table.value[at.pids, col("if_in_symbol_errors")]
        pid = at.pids
        self.ring[pid] = np.roll(self.ring[pid], -1, axis=1)
        self.ring[pid, -1] = rate
        self.filled[pid] += 1
        ring = self.ring[pid]
        half = w // 2
        first = _mean(ring[:, :half])
        second = _mean(ring[:, half:])
        positive = (np.nan_to_num(ring) > 0).sum(axis=1)
        full = self.filled[pid] >= w
        with np.errstate(divide="ignore", invalid="ignore"):
            growth = np.where(first > 0, second / first, np.where(second > 0, np.inf, 1.0))
        bad = full & (positive >= half) & (growth >= self.opts.growth)
        recent_clean = ~(np.nan_to_num(ring[:, half:]) > 0).any(axis=1)
        good = full & (recent_clean | (growth < self.opts.flat))
        fec = frame.table.value[pid, col("fec_corrected_blocks")]
        return Verdict(bad[:, None], good[:, None],
                       {"symbol_per_s": rate[:, None],
                        "growth": np.where(np.isfinite(growth), growth, 1e6)[:, None],
                        "fec_corrected_per_s": fec[:, None],
                        "corruption": np.zeros((pid.size, 1))})


def _mean(block: np.ndarray) -> np.ndarray:
    """Row means over the finite values (NaN where a row has none)."""
    ok = np.isfinite(block)
    count = ok.sum(axis=1)
    total = np.where(ok, block, 0.0).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)
