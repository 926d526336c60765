"""Per-port detectors on hand-built telemetry: storms, pauses, slow receivers, congestion,
corruption, optics, deadlock members — including missing data and counter resets."""

from __future__ import annotations

import numpy as np
import pytest

from tests.detectors.conftest import LINE, Feed, active, at_s, chain_of, run

STUCK = {"pfc_rx_frames__3": 23842.0, "pfc_rx_pause_us__3": 1e6, "queue_tx_octets__3": 0.0,
         "queue_tx_pkts__3": 0.0, "if_out_octets": 0.0, "if_out_pkts": 0.0}


@pytest.mark.parametrize("profile", ["sonic", "openconfig", "snmp"])
def test_stuck_nic_fires_pfc_storm_on_the_second_sample(topo, profile):
    feed = Feed(topo, profile=profile)
    chain = chain_of(topo, "pfc_storm")
    run(chain, feed, 3)
    feed.set("leaf1:Ethernet1", **STUCK)
    run(chain, feed, 1)
    assert ("pfc_storm", "host1") not in active(chain)  # one sample is not evidence
    run(chain, feed, 1)
    storm = active(chain)[("pfc_storm", "host1")]
    assert storm.root_cause and storm.ports == ("leaf1:Ethernet1",)
    assert at_s(storm.updated_at_ns) == 5.0


def test_a_storm_that_starts_mid_interval_counts_its_onset_sample(topo, feed):
    chain = chain_of(topo, "pfc_storm")
    run(chain, feed, 3)
    half = {**STUCK, "pfc_rx_frames__3": 11921.0, "pfc_rx_pause_us__3": 5e5,
            "queue_tx_octets__3": 0.15 * LINE / 8, "if_out_octets": 0.15 * LINE / 8}
    feed.set("leaf1:Ethernet1", **half)
    run(chain, feed, 1)
    feed.set("leaf1:Ethernet1", **STUCK)
    run(chain, feed, 1)
    assert ("pfc_storm", "host1") in active(chain)


def test_storm_resolves_only_after_clean_samples(topo, feed):
    chain = chain_of(topo, "pfc_storm")
    run(chain, feed, 2)
    feed.set("leaf1:Ethernet1", **STUCK)
    run(chain, feed, 3)
    feed.load("leaf1:Ethernet1", 0.3)
    feed.set("leaf1:Ethernet1", pfc_rx_frames__3=0.0, pfc_rx_pause_us__3=0.0)
    changes = run(chain, feed, 2)
    assert ("pfc_storm", "host1") in active(chain)  # hysteresis: 3 clean samples
    changes = run(chain, feed, 1)
    resolved = [a for a in changes if a.name == "pfc_storm" and a.ends_at_ns]
    assert resolved and at_s(resolved[0].ends_at_ns) == 8.0


def test_no_storm_when_the_drain_is_unknown(topo, feed):
    chain = chain_of(topo, "pfc_storm")
    run(chain, feed, 2)
    feed.set("leaf1:Ethernet1", **STUCK)
    for key in ("queue_tx_octets@3", "queue_tx_pkts@3", "if_out_octets", "if_out_pkts"):
        del feed.rates["leaf1:Ethernet1"][key]
    run(chain, feed, 4)
    assert ("pfc_storm", "host1") not in active(chain)


def test_counter_reset_during_a_storm_freezes_evidence_instead_of_clearing(topo, feed):
    chain = chain_of(topo, "pfc_storm")
    run(chain, feed, 2)
    feed.set("leaf1:Ethernet1", **STUCK)
    run(chain, feed, 3)
    for key in list(feed.counters):
        if key[0] == "leaf1:Ethernet1":
            feed.counters[key] = 0.0  # the switch rebooted: every counter restarts
    run(chain, feed, 1)
    assert ("pfc_storm", "host1") in active(chain)


def test_slow_receiver_pauses_while_draining_below_line_rate(topo, feed):
    chain = chain_of(topo, "pfc_storm", "slow_receiver")
    run(chain, feed, 2)
    feed.load("leaf2:Ethernet2", 0.3)
    feed.set("leaf2:Ethernet2", pfc_rx_frames__3=16000.0, pfc_rx_pause_us__3=0.7e6)
    run(chain, feed, 2)
    assert ("slow_receiver", "host4") not in active(chain)
    run(chain, feed, 1)
    found = active(chain)
    assert ("slow_receiver", "host4") in found and ("pfc_storm", "host4") not in found


def test_a_busy_healthy_receiver_is_not_slow(topo, feed):
    chain = chain_of(topo, "slow_receiver")
    feed.load("leaf2:Ethernet2", 0.95)
    feed.set("leaf2:Ethernet2", pfc_rx_frames__3=3000.0, pfc_rx_pause_us__3=0.02e6)
    run(chain, feed, 8)
    assert not active(chain)


def test_pause_tx_carries_the_throttle_of_the_paused_peer(topo, feed):
    chain = chain_of(topo, "pause_tx")
    feed.load("leaf1:Ethernet2", 0.08)
    feed.set("leaf1:Ethernet2", pfc_tx_frames__3=130000.0, pfc_tx_pause_us__3=0.9e6)
    run(chain, feed, 3)
    sym = active(chain)[("pfc_pausing", "leaf1:Ethernet2")]
    assert not sym.root_cause and sym.evidence["throttle"] == pytest.approx(0.9)


def test_frames_only_throttle_is_bounded_by_utilisation(topo):
    feed = Feed(topo, profile="openconfig")
    chain = chain_of(topo, "pause_tx")
    feed.load("leaf1:Ethernet2", 0.8)
    feed.set("leaf1:Ethernet2", pfc_tx_frames__3=200000.0)
    run(chain, feed, 3)
    sym = active(chain)[("pfc_pausing", "leaf1:Ethernet2")]
    assert sym.evidence["measured"] == 0.0
    assert sym.evidence["throttle"] == pytest.approx(0.2, abs=0.01)


def test_standing_queue_marks_congestion_and_saturated_host_port_is_an_incast_candidate(
        topo, feed):
    chain = chain_of(topo, "congestion", "incast")
    feed.load("leaf2:Ethernet1", 1.0)
    feed.set("leaf2:Ethernet1", queue_ecn_marked_pkts__3=0.3 * LINE / 8 / 4150)
    run(chain, feed, 3)
    found = active(chain)
    assert ("queue_buildup", "leaf2:Ethernet1") in found
    assert ("egress_oversubscribed", "leaf2:Ethernet1") in found
    # without a throttled sender behind it the correlator raises no incast
    assert not any(a.root_cause for a in found.values())


@pytest.mark.parametrize("profile", ["sonic", "snmp"])
def test_corruption_fires_on_the_receiving_port_and_names_the_link(topo, profile):
    feed = Feed(topo, profile=profile)
    chain = chain_of(topo, "corruption")
    run(chain, feed, 2)
    pkts = feed.rates["spine1:Ethernet2"]["if_in_pkts"]
    feed.set("spine1:Ethernet2", if_in_fcs_errors=pkts * 1e-5)  # ~110 bad frames a sample
    run(chain, feed, 1)
    link = active(chain)[("faulty_link", "leaf2~spine1")]
    assert link.root_cause and link.ports == ("spine1:Ethernet2",)
    assert link.evidence["corruption"] == pytest.approx(1e-5, rel=0.05)
    assert link.severity.value == "critical"


def test_corruption_clears_only_after_enough_clean_frames(topo, feed):
    chain = chain_of(topo, "corruption")
    run(chain, feed, 2)
    feed.set("spine1:Ethernet2", if_in_fcs_errors=3.0)  # ~3e-7 of 11 M frames/s
    run(chain, feed, 3)
    assert ("faulty_link", "leaf2~spine1") in active(chain)
    feed.load("spine1:Ethernet2", 0.0001)  # almost no traffic: silence proves nothing
    feed.set("spine1:Ethernet2", if_in_fcs_errors=0.0)
    run(chain, feed, 6)
    assert ("faulty_link", "leaf2~spine1") in active(chain)
    feed.load("spine1:Ethernet2", 0.3)
    run(chain, feed, 4)
    assert ("faulty_link", "leaf2~spine1") not in active(chain)


def test_a_few_bad_frames_need_a_second_sample_and_a_burst_does_not(topo, feed):
    chain = chain_of(topo, "corruption")
    run(chain, feed, 2)
    feed.set("spine1:Ethernet2", if_in_fcs_errors=3.0)
    feed.set("spine2:Ethernet1", if_in_fcs_errors=12.0)
    links = lambda: {e for k, e in active(chain) if k == "faulty_link"}  # noqa: E731
    run(chain, feed, 1)
    assert links() == {"leaf1~spine2"}
    run(chain, feed, 1)
    assert links() == {"leaf1~spine2", "leaf2~spine1"}


def test_a_single_stray_fcs_error_does_not_fire(topo, feed):
    chain = chain_of(topo, "corruption")
    run(chain, feed, 2)
    feed.set("spine1:Ethernet2", if_in_fcs_errors=1.0)
    run(chain, feed, 1)
    feed.set("spine1:Ethernet2", if_in_fcs_errors=0.0)
    run(chain, feed, 5)
    assert not active(chain)


def test_optics_trend_fires_on_climbing_symbol_errors_before_any_fcs(topo, feed):
    chain = chain_of(topo, "optics", "corruption")
    run(chain, feed, 2)
    for k in range(14):
        feed.set("leaf1:Ethernet3", if_in_symbol_errors=float(2 ** (k / 2)))
        run(chain, feed, 1)
    link = active(chain).get(("faulty_link", "leaf1~spine1"))
    assert link is not None and link.root_cause
    sym = active(chain)[("optics_trend", "leaf1:Ethernet3")]
    assert sym.inhibited_by == link.fingerprint


def test_steady_symbol_errors_are_not_a_trend(topo, feed):
    chain = chain_of(topo, "optics")
    feed.set("leaf1:Ethernet3", if_in_symbol_errors=40.0)
    run(chain, feed, 20)
    assert not active(chain)


def test_deadlock_member_needs_three_stuck_samples(topo, feed):
    chain = chain_of(topo, "pfc_deadlock")
    feed.set("spine1:Ethernet2", **STUCK)
    run(chain, feed, 3)
    assert ("pfc_hold", "spine1:Ethernet2") not in active(chain)
    run(chain, feed, 1)
    assert ("pfc_hold", "spine1:Ethernet2") in active(chain)


def test_every_symptom_is_not_a_root_cause():
    from detectors.chain import build_detectors
    from detectors.settings import DetectionSettings

    names = {d.name for d in build_detectors(DetectionSettings(), None)}
    assert {"pfc_storm", "incast", "slow_receiver", "corruption", "flaps", "optics",
            "ecmp_imbalance", "buffer_misconfig", "pfc_deadlock", "anomaly", "no_data",
            "pause_rx", "pause_tx", "congestion"} <= names
    assert np.all([True])
