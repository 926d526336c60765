"""Queue build-up: an egress with a standing queue behind it (ECN marks, or pinned at line rate)."""

from __future__ import annotations

import pytest

from tests.detectors.conftest import LINE, Feed, active, chain_of, run

PORT = "spine1:Ethernet2"


def test_ecn_marking_on_a_busy_egress_is_a_standing_queue(topo, feed):
    chain = chain_of(topo, "queue_buildup")
    feed.load(PORT, 0.7)
    feed.set(PORT, queue_ecn_marked_pkts__3=0.05 * 0.7 * LINE / 8 / 4150)  # 5 % marked
    run(chain, feed, 3)
    sym = active(chain)[("queue_buildup", PORT)]
    assert not sym.root_cause
    assert sym.evidence["ecn"] == pytest.approx(0.05, rel=0.05)
    assert sym.evidence["util"] == pytest.approx(0.7, rel=0.05)


def test_a_busy_port_without_marks_has_no_standing_queue(topo, feed):
    chain = chain_of(topo, "queue_buildup")
    feed.load(PORT, 0.8)
    run(chain, feed, 6)
    assert not active(chain)


def test_without_ecn_data_only_a_port_pinned_at_line_rate_counts(topo):
    feed = Feed(topo, profile="snmp")
    chain = chain_of(topo, "queue_buildup")
    feed.load(PORT, 0.9)
    run(chain, feed, 4)
    assert not active(chain)
    feed.load(PORT, 1.0)
    run(chain, feed, 3)
    assert ("queue_buildup", PORT) in active(chain)
