"""Counter series with everything that breaks a naive difference, shared by the tests of the rate
rule in numpy, in SQL on every store backend, and across the stages."""

from __future__ import annotations

from typing import Any

import numpy as np

from pipeline.metrics import IS_COUNTER, metric_id
from pipeline.model import FLAG_COUNTER32, FLAG_RESET, BatchBuilder, SampleBatch
from pipeline.rates.rule import Intervals, intervals

S = 1_000_000_000
Row = tuple[float, str, str, str, int, float, int]


def batch(rows: list[Row], base_ns: int = 0) -> SampleBatch:
    """``(t seconds, device, port, metric, qual, value, flags)`` rows as one batch."""
    b = BatchBuilder()
    for t, dev, port, metric, qual, value, flags in rows:
        b.add(base_ns + round(t * S), dev, port, metric_id(metric), qual, value, flags)
    return b.build()


def wild_rows(seed: int = 3, n: int = 400, ports: int = 4) -> list[Row]:
    """Series of one switch: Counter32 wraps (odd ports), unflagged and flagged restarts, missed
    polls, outages longer than the horizon, a cadence changed halfway; the last port a gauge."""
    rng = np.random.default_rng(seed)
    rows: list[Row] = []
    for port in range(ports):
        t, v = 10.0, float(rng.integers(0, 2**32))
        c32 = FLAG_COUNTER32 if port % 2 else 0
        metric = "queue_occupancy_bytes" if port == ports - 1 else "if_in_octets"
        for k in range(n):
            step = 1.0 if k < n // 2 else 5.0
            t += step * float(rng.choice([1, 1, 1, 1, 2, 3, 0.3])) + float(rng.random()) * 1e-3
            if rng.random() < 0.01:
                t += 200.0
            flags, r = c32, rng.random()
            if r < 0.02:
                v = float(rng.integers(0, 1000))
            elif r < 0.04:
                v, flags = float(rng.integers(0, 1000)), c32 | FLAG_RESET
            else:
                v = v + float(rng.integers(0, 10**9))
                v = v % 2**32 if c32 else v
            rows.append((round(t, 6), "leaf1", f"Ethernet{port}", metric, -1, v, flags))
    return rows


def judged(bt: SampleBatch) -> tuple[Any, Intervals]:
    """The stateless rule over a whole batch of one device: (sort order, intervals), rows by
    port, metric, qual and time."""
    key = (bt.port.astype(np.int64) << 32) | (bt.metric.astype(np.int64) << 8) | \
        (bt.qual.astype(np.int64) + 1)
    order = np.lexsort((bt.ts_ns, key))
    return order, intervals(key[order], bt.ts_ns[order], bt.value[order], bt.flags[order],
                            IS_COUNTER[bt.metric[order].astype(np.int64)])
