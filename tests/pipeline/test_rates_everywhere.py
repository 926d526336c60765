"""One rate rule, the same rates everywhere: the same wrap, reset and gap series through the
detectors' rate path, ``/v1/series`` (the real API over a real store, step = the sample
interval) and the drain's residual-traffic check give equal rates, sample by sample."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import numpy as np
import pytest

from detectors.chain import DetectionChain
from detectors.features import col
from detectors.settings import DetectionSettings
from pipeline.metrics import metric_id
from pipeline.model import FLAG_COUNTER32, FLAG_RESET, BatchBuilder, SampleBatch
from pipeline.rates.rule import NS
from pipeline.store.base import Store
from pipeline.topology.model import Port
from remediation.drains.telemetry import LinkTelemetry
from ui.api.app import create_app
from ui.api.server import Running, start_background
from ui.query.layer import Query

PORT = Port("leaf1", "Ethernet1")
STEP_NS = 10 * NS
MISSED = range(20, 24)  # an outage: the interval after it spans 50 s, twice the gap limit


def samples(base_ns: int) -> list[SampleBatch]:
    """One batch per poll of a Counter32 octet counter every 10 s (each poll in a bucket of its
    own): growth at a varying rate, wraps at 2**32, a flagged restart, an unflagged fall, an
    outage."""
    rng = np.random.default_rng(7)
    value = 2.0**32 - 2e9
    out = []
    for k in range(48):
        value += float(rng.integers(1, 4)) * 1e8
        flags = FLAG_COUNTER32
        if k == 12:
            value, flags = 3e9, FLAG_COUNTER32 | FLAG_RESET  # the switch rebooted
        if k == 26:
            value /= 8  # counters set back, nothing said (too small a fall for a wrap)
        value %= 2.0**32
        if k in MISSED:
            continue
        b = BatchBuilder()
        ts = base_ns + k * STEP_NS + NS + int(rng.integers(0, 100_000_000))
        b.add(ts, PORT.device, PORT.name, metric_id("if_out_octets"), -1, value, flags)
        out.append(b.build())
    return out


@pytest.fixture
def api(store: Store) -> Iterator[Running]:
    running = start_background(create_app(Query(store)))
    yield running
    running.stop()


def test_detection_the_api_and_the_drain_see_the_same_rates(store: Store, api: Running) -> None:
    base = (time.time_ns() - 3600 * NS) // (60 * NS) * 60 * NS
    polls = samples(base)
    store.insert_samples(SampleBatch.concat(polls))

    chain = DetectionChain(DetectionSettings(), None, detectors=[])
    drain = LinkTelemetry()
    drain.watch([PORT])
    detected: list[float | None] = []
    drained: list[tuple[int, float] | None] = []
    for poll in polls:
        chain.observe([poll])
        pid = chain.names.find_port(PORT.device, PORT.name)
        assert pid is not None
        rate = float(chain.table.value[pid, col("if_out_octets")])
        detected.append(None if np.isnan(rate) else rate)
        drain.observe(poll)
        drained.append(drain.gbps(PORT))
    stats = chain.rates.stats
    assert stats.wraps >= 2 and stats.resets == 2 and stats.gaps == 1

    body = _get(api.url, {
        "device": PORT.device, "port": PORT.name, "metric": "if_out_octets", "source": "raw",
        "start": str(base), "end": str(int(polls[-1].ts_ns[0])), "step": "10s"})
    points = {int(t): v for t, v in body["results"][0]["series"][0]["points"]}
    served = [points[int(p.ts_ns[0]) // STEP_NS * STEP_NS] for p in polls]

    assert served == detected
    assert [None if d is None else d[1] for d in drained] == [
        None if r is None else r * 8 / 1e9 for r in detected]
    # no rate where it would be invented: the first poll, the restarts, across the outage
    missing = [k for k, r in enumerate(detected) if r is None]
    assert missing == [0, 12, 20, 22]
    assert all(r is not None and 0.9e7 <= r <= 3.1e7 for k, r in enumerate(detected)
               if k not in missing)


def _get(url: str, params: dict[str, str]) -> Any:
    response = httpx.get(f"{url}/v1/series", params=params, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()
