"""A rule's evidence read row by row from its columns is what a symptom would keep of it."""

from __future__ import annotations

import numpy as np

from detectors.base import EvidenceRows, Symptoms, _finite


def test_kept_rows_are_the_finite_rounded_evidence() -> None:
    rng = np.random.default_rng(3)
    columns = {"share": rng.random(50) / 7, "util": rng.random(50) * 1e3,
               "ecn": np.where(rng.random(50) < 0.3, np.nan, rng.random(50) / 3)}
    columns["util"][[4, 9]] = [np.inf, -np.inf]
    rows = EvidenceRows(columns)
    for j in range(50):
        raw = rows.raw(j)
        assert raw == {name: float(col[j]) for name, col in columns.items()} or \
            any(np.isnan(v) for v in raw.values())
        assert list(raw) == list(columns)
        assert rows.kept(j) == _finite(raw)
        assert list(rows.kept(j)) == list(_finite(raw))


def test_restate_is_update_with_kept_evidence() -> None:
    a, b = Symptoms("rule"), Symptoms("rule")
    for s in (a, b):
        s.fire(7, name="x", entity="leaf1:Ethernet1", ports=("leaf1:Ethernet1",),
               labels={"device": "leaf1"}, evidence={"v": 1.0}, onset_ns=1, ts_ns=2)
    evidence = {"v": 0.12345678, "w": float("nan")}
    a.update(7, evidence, 5)
    b.restate(7, EvidenceRows({k: np.array([v]) for k, v in evidence.items()}).kept(0), 5)
    assert a.active[7] == b.active[7] and a.active[7].evidence == {"v": 0.123457}
