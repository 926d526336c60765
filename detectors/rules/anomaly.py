"""Learned anomalies: an IsolationForest over per-port feature vectors, for what no rule names.

Each port sample becomes a vector of physical ratios (utilisation both ways, pause shares both
ways, ECN marking, log corruption, discards per packet sent). A port's normal is its own: the
first ``baseline`` samples of every port give a robust centre (median) and scale (MAD, floored per
feature so a flat baseline does not turn noise into sigmas), and the forest is trained on the
baseline samples of all ports expressed as deviations from their own normal — it learns which
combinations of deviations are ordinary (a busy port also marks ECN) and which are not.

A sample is anomalous when the forest isolates it more easily than all but ``contamination`` of
the baseline *and* at least one feature deviates by ``min_z`` robust sigmas. It never fires on a
single sample: ``fire_after`` (3) anomalous samples in a row raise ``anomaly`` on the port, with
the features that made it anomalous and by how much (``z_<feature>`` evidence, largest first).
The correlator attaches it to an incident on the same port or link when there is one; otherwise
it stays an unexplained symptom for a human to look at — a learned score is evidence, not a root
cause.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from pydantic import Field
from sklearn.ensemble import IsolationForest

from detectors.base import DetectorOptions, grown
from detectors.features import Frame, col
from detectors.rule import PortRule, Verdict
from detectors.signals import (
    At,
    companion,
    corruption,
    ecn_fraction,
    pause_share,
    rx_util,
    tx_util,
)
from pipeline.kinds import ANOMALY
from pipeline.topology.model import Topology

FEATURES = ("tx_util", "rx_util", "pause_rx", "pause_tx", "ecn", "corruption_log",
            "discards")
#: the smallest scale of each feature: what a deviation of one "sigma" means at least
FLOORS = np.array([0.05, 0.05, 0.02, 0.02, 0.01, 1.0, 1e-4])


class AnomalyOptions(DetectorOptions):
    fire_after: int = Field(3, ge=2, description="never on a single sample")
    baseline: int = Field(30, ge=5, description="samples per port that define its normal")
    min_train: int = Field(256, ge=32)
    contamination: float = Field(0.005, gt=0, lt=0.5)
    min_z: float = Field(6.0, gt=0)
    trees: int = Field(50, ge=10)
    seed: int = 0


class Anomaly(PortRule[AnomalyOptions]):
    name = ANOMALY
    Options = AnomalyOptions
    driver = "if_out_octets"
    symptom = ANOMALY

    def __init__(self, instance: str, options: AnomalyOptions, *,
                 topology: Topology | None) -> None:
        super().__init__(instance, options, topology=topology)
        k = len(FEATURES)
        self.count = np.zeros(0, np.int64)
        self.history = np.zeros((0, options.baseline, k))
        self.center = np.zeros((0, k))
        self.scale = np.ones((0, k))
        self.model: object | None = None
        self.threshold = -np.inf
        self.degenerate = False

    def _grow(self, n: int) -> None:
        self.count = grown(self.count, n, 0)
        self.history = grown(self.history, n, np.nan)
        self.center = grown(self.center, n, 0.0)
        self.scale = grown(self.scale, n, 1.0)

    def features(self, frame: Frame, at: At) -> NDArray[np.float64]:
        rx_share, _ = pause_share(frame, at, "rx")
        tx_share, _ = pause_share(frame, at, "tx")
        corrupt, _ = corruption(frame, at)
        sent = companion(frame, at, col("if_out_pkts"))
        disc = companion(frame, at, col("if_out_discards"))
        with np.errstate(invalid="ignore", divide="ignore"):
            discards = np.where(sent > 0, disc / sent, 0.0)
        x = np.column_stack([
            tx_util(frame, at), rx_util(frame, at),
            np.clip(_rowmax(rx_share), 0, 1), np.clip(_rowmax(tx_share), 0, 1),
            _rowmax(ecn_fraction(frame, at)),
            np.log10(np.nan_to_num(corrupt) + 1e-12) + 12.0, discards,
        ])
        out: NDArray[np.float64] = np.nan_to_num(x, nan=0.0, posinf=0.0, neginf=0.0)
        return out

    def evaluate(self, frame: Frame, at: At) -> Verdict:
        o = self.opts
        self._grow(frame.table.n_ports)
        x = self.features(frame, at)
        pid = at.pids
        learning = self.count[pid] < o.baseline
        rows = pid[learning]
        if rows.size:
            self.history[rows, self.count[rows]] = x[learning]
            self.count[rows] += 1
            done = rows[self.count[rows] == o.baseline]
            if done.size:
                hist = self.history[done]
                med = np.median(hist, axis=1)
                mad = np.median(np.abs(hist - med[:, None, :]), axis=1) * 1.4826
                self.center[done] = med
                self.scale[done] = np.maximum(mad, FLOORS)
        if self.model is None:
            self._fit()
        n = pid.size
        unknown = np.zeros(n, bool)
        if self.model is None:
            return Verdict(unknown, unknown)
        ready = ~learning & (self.count[pid] >= o.baseline)
        z = (x - self.center[pid]) / self.scale[pid]
        score = np.full(n, np.inf)
        if ready.any():
            score[ready] = self.model.score_samples(z[ready])  # type: ignore[attr-defined]
        strong = np.abs(z).max(axis=1) >= o.min_z
        # a flat baseline gives the forest nothing to split: every point scores alike, and the
        # robust deviation alone decides
        isolated = score <= self.threshold if self.degenerate else score < self.threshold
        bad = ready & isolated & strong
        good = ready & ~bad
        evidence = {f"z_{name}": z[:, i] for i, name in enumerate(FEATURES)}
        evidence["score"] = np.where(np.isfinite(score), score, 0.0)
        return Verdict(bad[:, None], good[:, None], {k: v[:, None] for k, v in evidence.items()})

    def annotations(self, evidence: dict[str, float]) -> dict[str, str]:
        """Which features made the port anomalous, largest deviation first."""
        zs = sorted(((abs(v), k[2:], v) for k, v in evidence.items() if k.startswith("z_")),
                    reverse=True)
        top = [f"{name} {v:+.1f}σ" for mag, name, v in zs[:3] if mag >= 3.0]
        return {"features": ", ".join(top)} if top else {}

    def _fit(self) -> None:
        """Train once enough baseline vectors exist, on deviations from each port's own normal."""
        o = self.opts
        done = np.flatnonzero(self.count >= o.baseline)
        if done.size * o.baseline < o.min_train:
            return
        z = ((self.history[done] - self.center[done][:, None, :]) /
             self.scale[done][:, None, :]).reshape(-1, len(FEATURES))
        model = IsolationForest(n_estimators=o.trees, max_samples=min(256, z.shape[0]),
                                random_state=o.seed)
        model.fit(z)
        scores = model.score_samples(z)
        self.threshold = float(np.quantile(scores, o.contamination))
        self.degenerate = bool(np.ptp(scores) < 1e-9)
        self.model = model


def _rowmax(block: NDArray[np.float64]) -> NDArray[np.float64]:
    ok = np.isfinite(block)
    out: NDArray[np.float64] = np.where(ok.any(axis=1), np.where(ok, block, -np.inf).max(axis=1),
                                        0.0)
    return out
