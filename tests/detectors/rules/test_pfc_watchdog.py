"""The PFC watchdog: a host port paused continuously whose queue makes no progress (the
correlator names the ``pfc_storm`` on the host)."""

from __future__ import annotations

import pytest

from tests.detectors.conftest import LINE, STUCK, Feed, active, at_s, chain_of, run


@pytest.mark.parametrize("profile", ["sonic", "openconfig", "snmp"])
def test_stuck_nic_fires_pfc_storm_on_the_second_sample(topo, profile):
    feed = Feed(topo, profile=profile)
    chain = chain_of(topo, "pfc_watchdog")
    run(chain, feed, 3)
    feed.set("leaf1:Ethernet1", **STUCK)
    run(chain, feed, 1)
    assert ("pfc_storm", "host1") not in active(chain)  # one sample is not evidence
    run(chain, feed, 1)
    storm = active(chain)[("pfc_storm", "host1")]
    assert storm.root_cause and storm.ports == ("leaf1:Ethernet1",)
    assert at_s(storm.updated_ns) == 5.0


def test_a_storm_that_starts_mid_interval_counts_its_onset_sample(topo, feed):
    chain = chain_of(topo, "pfc_watchdog")
    run(chain, feed, 3)
    half = {**STUCK, "pfc_rx_frames__3": 11921.0, "pfc_rx_pause_us__3": 5e5,
            "queue_tx_octets__3": 0.15 * LINE / 8, "if_out_octets": 0.15 * LINE / 8}
    feed.set("leaf1:Ethernet1", **half)
    run(chain, feed, 1)
    feed.set("leaf1:Ethernet1", **STUCK)
    run(chain, feed, 1)
    assert ("pfc_storm", "host1") in active(chain)


def test_storm_resolves_only_after_clean_samples(topo, feed):
    chain = chain_of(topo, "pfc_watchdog")
    run(chain, feed, 2)
    feed.set("leaf1:Ethernet1", **STUCK)
    run(chain, feed, 3)
    feed.load("leaf1:Ethernet1", 0.3)
    feed.set("leaf1:Ethernet1", pfc_rx_frames__3=0.0, pfc_rx_pause_us__3=0.0)
    changes = run(chain, feed, 2)
    assert ("pfc_storm", "host1") in active(chain)  # hysteresis: 3 clean samples
    changes = run(chain, feed, 1)
    resolved = [a for a in changes if a.name == "pfc_storm" and a.ends_ns]
    assert resolved and at_s(resolved[0].ends_ns) == 8.0


def test_no_storm_when_the_drain_is_unknown(topo, feed):
    chain = chain_of(topo, "pfc_watchdog")
    run(chain, feed, 2)
    feed.set("leaf1:Ethernet1", **STUCK)
    for key in ("queue_tx_octets@3", "queue_tx_pkts@3", "if_out_octets", "if_out_pkts"):
        del feed.rates["leaf1:Ethernet1"][key]
    run(chain, feed, 4)
    assert ("pfc_storm", "host1") not in active(chain)


def test_counter_reset_during_a_storm_freezes_evidence_instead_of_clearing(topo, feed):
    chain = chain_of(topo, "pfc_watchdog")
    run(chain, feed, 2)
    feed.set("leaf1:Ethernet1", **STUCK)
    run(chain, feed, 3)
    for key in list(feed.counters):
        if key[0] == "leaf1:Ethernet1":
            feed.counters[key] = 0.0  # the switch rebooted: every counter restarts
    run(chain, feed, 1)
    assert ("pfc_storm", "host1") in active(chain)
