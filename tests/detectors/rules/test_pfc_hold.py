"""PFC hold: a fabric port stuck like a storm longer than a watchdog acts (a deadlock member)."""

from __future__ import annotations

from tests.detectors.conftest import STUCK, active, chain_of, run


def test_deadlock_member_needs_two_stuck_samples(topo, feed):
    # two stuck samples are seconds, far beyond any watchdog's hundreds of milliseconds; the
    # onset sample counting, a deadlock is named within two intervals (three for the cycle)
    chain = chain_of(topo, "pfc_hold")
    feed.set("spine1:Ethernet2", **STUCK)
    run(chain, feed, 2)  # the first sample has no rate yet: one stuck sample
    assert ("pfc_hold", "spine1:Ethernet2") not in active(chain)
    run(chain, feed, 1)
    assert ("pfc_hold", "spine1:Ethernet2") in active(chain)


def test_a_stuck_host_port_is_the_watchdogs_not_a_hold(topo, feed):
    chain = chain_of(topo, "pfc_hold")
    feed.set("leaf1:Ethernet1", **STUCK)
    run(chain, feed, 6)
    assert not active(chain)


def test_a_paused_fabric_port_that_still_drains_is_not_held(topo, feed):
    chain = chain_of(topo, "pfc_hold")
    feed.load("spine1:Ethernet2", 0.4)
    feed.set("spine1:Ethernet2", pfc_rx_frames__3=12000.0, pfc_rx_pause_us__3=0.5e6)
    run(chain, feed, 6)
    assert not active(chain)
