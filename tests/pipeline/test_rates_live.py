"""The compiled live path of the rate rule (pipeline/rates/live.py) gives exactly what the numpy
rule gives (pipeline/rates/rule.py), on every kind of interval."""

from __future__ import annotations

import numpy as np

from pipeline.model import FLAG_COUNTER32, FLAG_RESET
from pipeline.rates.live import judge_live
from pipeline.rates.rule import CADENCE_INTERVALS, MISSING, NS, Status, intervals

KEEP = CADENCE_INTERVALS + 1


def _step(rng: np.random.Generator, last_ts: np.ndarray, last_value: np.ndarray
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The next sample of every series: mostly a 10 s poll, sometimes a jitter, a gap, a
    sample past the horizon, a late or repeated one; values that grow, reset, or wrap at 2**32."""
    n = last_ts.shape[0]
    step = rng.choice([10, 10, 10, 9, 11, 3, 30, 200, 0, -5], size=n) * NS
    step += rng.integers(-NS // 10, NS // 10, n) * (rng.random(n) < 0.3)
    ts = np.where(last_ts == MISSING, 1_000 * NS, last_ts + step)
    grow = rng.integers(0, 10**6, n).astype(np.float64)
    value = np.where(np.isnan(last_value), rng.integers(0, 2**32, n).astype(np.float64),
                     last_value + grow)
    reset = rng.random(n) < 0.05
    value = np.where(reset, rng.integers(0, 1000, n), value)
    c32 = rng.random(n) < 0.3
    value = np.where(c32 & (value >= 2**32), value - 2**32, value)  # a Counter32 wraps
    flags = (c32 * FLAG_COUNTER32 | (rng.random(n) < 0.02) * FLAG_RESET).astype(np.uint8)
    return ts.astype(np.int64), value, flags


def test_live_path_matches_the_rule_on_every_kind_of_interval() -> None:
    rng = np.random.default_rng(2024)
    n = 5000
    counter = rng.random(n) < 0.8
    times = np.full((n, KEEP), MISSING, np.int64)
    last_value = np.full(n, np.nan)
    ref_times, ref_value = times.copy(), last_value.copy()
    seen = {status: 0 for status in Status}
    for _ in range(40):
        # a random subset of the series, each once, in a random order
        sid = rng.permutation(n)[: rng.integers(1, n)]
        ts, value, flags = _step(rng, times[sid, -1], last_value[sid])
        increase, dt_ns, status, late = judge_live(sid, ts, value, flags, counter[sid], times,
                                                   last_value)
        # the numpy rule on the same rows, sorted by series, late ones dropped as RateState does
        order = np.argsort(sid)
        s, t, v, f = sid[order], ts[order], value[order], flags[order]
        fresh = t > ref_times[s, -1]
        assert late == int((~fresh).sum())
        want = intervals(s[fresh], t[fresh], v[fresh], f[fresh], counter[s[fresh]],
                         before=ref_times[s[fresh]], before_value=ref_value[s[fresh]])
        got_status = status[order]
        assert (got_status[~fresh] == Status.LATE).all()
        np.testing.assert_array_equal(got_status[fresh], want.status)
        np.testing.assert_array_equal(increase[order][fresh], want.increase)
        np.testing.assert_array_equal(dt_ns[order][fresh], want.dt_ns)
        # the state after: the history shifted by the new time, the new last value
        kept = s[fresh]
        ref_times[kept, :-1] = ref_times[kept, 1:]
        ref_times[kept, -1] = t[fresh]
        ref_value[kept] = v[fresh]
        np.testing.assert_array_equal(times, ref_times)
        np.testing.assert_array_equal(last_value, ref_value)
        for code in np.unique(status).tolist():
            seen[Status(code)] += 1
    assert all(seen.values()), seen  # every status came up
