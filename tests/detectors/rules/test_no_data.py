"""The explicit no-data state: a collector that says it is down, and a switch gone silent."""

from __future__ import annotations

import numpy as np

from pipeline.metrics import metric_id
from pipeline.model import SampleBatch
from tests.detectors.conftest import EPOCH, active, at_s, chain_of, run


def health(t: float, device: str, up: float, expected: float, received: float) -> SampleBatch:
    n = 3
    return SampleBatch(
        np.full(n, EPOCH + round(t * 1e9), np.int64), np.zeros(n, np.int32),
        np.zeros(n, np.int32),
        np.array([metric_id("collector_up"), metric_id("collector_expected"),
                  metric_id("collector_received")], np.uint16),
        np.full(n, -1, np.int16), np.array([up, expected, received]), np.zeros(n, np.uint8),
        (device,), ("",))


def test_collector_down_is_an_explicit_no_data_state(topo, feed):
    chain = chain_of(topo, "no_data")
    for t in (1.0, 2.0, 3.0):
        chain.observe([*feed.tick(), health(t, "leaf2", 1, 100, 100)])
    assert not active(chain)
    chain.observe([*feed.tick(), health(4.0, "leaf2", 0, 100, 0)])
    chain.observe([*feed.tick(), health(5.0, "leaf2", 0, 100, 0)])
    state = active(chain)[("no_data", "leaf2")]
    assert not state.root_cause and state.severity.value == "warning"
    for t in (6.0, 7.0, 8.0):
        chain.observe([*feed.tick(), health(t, "leaf2", 1, 100, 100)])
    assert not active(chain)


def test_a_silent_switch_is_no_data_on_event_time(topo, feed):
    chain = chain_of(topo, "no_data")
    run(chain, feed, 3)
    for _ in range(5):
        chain.observe([b for b in feed.tick() if b.devices != ("leaf1",)])
    state = active(chain)[("no_data", "leaf1")]
    assert state.evidence["silent_s"] > 3.0
    assert at_s(state.updated_ns) <= 8.0
    run(chain, feed, 1)
    assert not active(chain)
