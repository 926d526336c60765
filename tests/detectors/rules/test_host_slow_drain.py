"""Host slow drain: a host pausing its leaf port while it takes less than line rate."""

from __future__ import annotations

from tests.detectors.conftest import active, chain_of, run


def test_slow_receiver_pauses_while_draining_below_line_rate(topo, feed):
    chain = chain_of(topo, "pfc_watchdog", "host_slow_drain")
    run(chain, feed, 2)
    feed.load("leaf2:Ethernet2", 0.3)
    feed.set("leaf2:Ethernet2", pfc_rx_frames__3=16000.0, pfc_rx_pause_us__3=0.7e6)
    run(chain, feed, 1)
    assert ("slow_receiver", "host4") not in active(chain)
    run(chain, feed, 1)
    found = active(chain)
    assert ("slow_receiver", "host4") in found and ("pfc_storm", "host4") not in found


def test_a_busy_healthy_receiver_is_not_slow(topo, feed):
    chain = chain_of(topo, "host_slow_drain")
    feed.load("leaf2:Ethernet2", 0.95)
    feed.set("leaf2:Ethernet2", pfc_rx_frames__3=3000.0, pfc_rx_pause_us__3=0.02e6)
    run(chain, feed, 8)
    assert not active(chain)
