"""Fixtures of the pipeline tests: synthetic sample batches with known answers."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest

from pipeline.metrics import CATALOG, metric_id
from pipeline.model import FLAG_RESET, SampleBatch

NS = 1_000_000_000


def make_batch(devices: int = 2, ports: int = 3, seconds: int = 180, start_ns: int | None = None,
               seed: int = 1) -> SampleBatch:
    """Counters (``pfc_rx_frames`` per priority 3) and gauges (``queue_occupancy_bytes`` per
    queue 3) every second for ``seconds``, with one counter reset, starting a little in the past
    (TTLs run on the wall clock)."""
    rng = np.random.default_rng(seed)
    if start_ns is None:
        start_ns = (time.time_ns() // NS - seconds - 60) * NS
    dev_names = tuple(f"leaf{i}" for i in range(devices))
    port_names = tuple(f"Ethernet{i * 4}" for i in range(ports))
    series = [(d, p, m) for d in range(devices) for p in range(ports)
              for m in (metric_id("pfc_rx_frames"), metric_id("queue_occupancy_bytes"))]
    cols: dict[str, list[Any]] = {k: [] for k in ("ts", "dev", "port", "metric", "qual", "value",
                                                  "flags")}
    for d, p, m in series:
        t = start_ns + np.arange(seconds, dtype=np.int64) * NS + rng.integers(0, 1000, seconds)
        if CATALOG[m].kind.value == "counter":
            values = np.cumsum(rng.integers(0, 1000, seconds)).astype(np.float64)
            flags = np.zeros(seconds, np.uint8)
            if d == 0 and p == 0:  # the device restarted halfway
                values[seconds // 2:] -= values[seconds // 2 - 1]
                flags[seconds // 2] = FLAG_RESET
        else:
            values = rng.integers(0, 1 << 20, seconds).astype(np.float64)
            flags = np.zeros(seconds, np.uint8)
        cols["ts"].append(t)
        cols["dev"].append(np.full(seconds, d, np.int32))
        cols["port"].append(np.full(seconds, p, np.int32))
        cols["metric"].append(np.full(seconds, m, np.uint16))
        cols["qual"].append(np.full(seconds, 3, np.int16))
        cols["value"].append(values)
        cols["flags"].append(flags)
    return SampleBatch(
        np.concatenate(cols["ts"]), np.concatenate(cols["dev"]), np.concatenate(cols["port"]),
        np.concatenate(cols["metric"]), np.concatenate(cols["qual"]),
        np.concatenate(cols["value"]), np.concatenate(cols["flags"]), dev_names, port_names,
    ).validate()


@pytest.fixture
def batch() -> SampleBatch:
    return make_batch()


def expected_rollup(batch: SampleBatch, bucket_ns: int) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    """(device, port, metric, qual, bucket_ns) → (first, last, min, max, t_first, t_last, n,
    flags OR), computed in Python from the batch."""
    out: dict[tuple[Any, ...], list[Any]] = {}
    for ts, dev, port, metric, qual, value, flags in batch.rows():
        key = (dev, port, metric, qual, ts // bucket_ns * bucket_ns)
        acc = out.get(key)
        if acc is None:
            out[key] = [value, value, value, value, ts, ts, 1, flags]
            continue
        if ts < acc[4]:
            acc[0], acc[4] = value, ts
        if ts > acc[5]:
            acc[1], acc[5] = value, ts
        acc[2], acc[3] = min(acc[2], value), max(acc[3], value)
        acc[6] += 1
        acc[7] |= flags
    return {k: tuple(v) for k, v in out.items()}


@pytest.fixture
def batch_factory() -> Any:
    """``batch_factory(devices=, ports=, seconds=, start_ns=, seed=)``: see :func:`make_batch`."""
    return make_batch


@pytest.fixture
def rollup_expectation() -> Any:
    """``rollup_expectation(batch, bucket_ns)``: see :func:`expected_rollup`."""
    return expected_rollup
