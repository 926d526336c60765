"""The fluid model against hand-computed cases: incast, pause spreading, corruption, drops, ECN."""

from __future__ import annotations

import numpy as np
import pytest

from lab import counters as cf
from lab.buffers import BufferProfile
from lab.scenario.load import parse_scenario
from lab.sim.simulation import Simulation
from lab.stats import _expected_mark
from tests.lab.conftest import make_scenario, scenario_dict

LINE = 400e9 / 8          # bytes/s of a 400G port
XOFF = BufferProfile().xoff_bytes


def _incast(hosts: list[str], spines: int = 1, leaves: int = 1, hpl: int = 3,
            buffers: BufferProfile | None = None, dt: float = 1e-6,
            host_gbps: int = 400) -> Simulation:
    sc = parse_scenario(scenario_dict(
        fabric={"spines": spines, "leaves": leaves, "hosts_per_leaf": hpl,
                "host_gbps": host_gbps},
        sample_interval_s=0.001,
        traffic=[{"pattern": "incast", "hosts": hosts, "load": 1.0, "qps_per_flow": 1}]))
    return Simulation(sc, dt=dt, tick_s=dt * 10, buffers=buffers, jitter=False)


def _queue(sim: Simulation, device: str, port: str, prio: int = 3) -> float:
    w, ph = sim.wiring, sim.physics
    slot = int(ph.slot[prio])
    return float(ph.queue.reshape(w.n_ports, ph.n_act)[w.port_index(device, port), slot])


def _c(sim: Simulation, device: str, port: str, fld: int) -> float:
    return float(sim.counters.port[sim.wiring.port_index(device, port), fld])


def _q(sim: Simulation, device: str, port: str, fld: int, prio: int = 3) -> float:
    return float(sim.counters.prio[sim.wiring.port_index(device, port), prio, fld])


def test_two_to_one_incast_fills_the_queue_at_line_rate_then_pauses_the_senders() -> None:
    sim = _incast(["host3", "host1", "host2"])           # host1, host2 -> host3 on leaf1
    sim.run_until(10e-6)
    # two 400G senders into one 400G port: the egress queue grows at 400 Gb/s
    assert _queue(sim, "leaf1", "Ethernet3") == pytest.approx(10e-6 * LINE, rel=1e-6)
    # each sender's port has received line rate for the whole 10 us
    assert _c(sim, "leaf1", "Ethernet1", cf.P_IN_OCTETS) == pytest.approx(10e-6 * LINE)
    sim.run_until(16e-6)   # each sender's PG now holds XOFF: 2 x 400 KB = 16 us of growth
    assert _queue(sim, "leaf1", "Ethernet3") == pytest.approx(2 * XOFF, rel=1e-6)
    # then each PG cycles between XOFF and XON: paused, it drains at 200 Gb/s (half the port)
    # for 64 KB / 25 KB/us = 2.6 us; resumed, it fills at 400 - 200 Gb/s for as long
    queues = []
    while sim.t < 300e-6 - 1e-9:
        sim.step()
        queues.append(_queue(sim, "leaf1", "Ethernet3"))
    band = BufferProfile().xon_band_bytes
    assert min(queues) >= 2 * (XOFF - band) - 2 * 25e3 and max(queues) <= 2 * XOFF + 1.0
    # the receiver gets line rate all along
    assert _c(sim, "leaf1", "Ethernet3", cf.P_OUT_OCTETS) == pytest.approx(300e-6 * LINE,
                                                                          rel=1e-3)
    # the ports facing the senders pause them; nobody pauses the receiver's port
    for sender in ("Ethernet1", "Ethernet2"):
        assert _q(sim, "leaf1", sender, cf.Q_PFC_TX) > 0
        assert _q(sim, "leaf1", sender, cf.Q_PFC_RX) == 0
    assert _q(sim, "leaf1", "Ethernet3", cf.Q_PFC_TX) == 0
    assert _q(sim, "leaf1", "Ethernet3", cf.Q_PFC_RX) == 0
    nic = sim.counters.prio[sim.wiring.host_nic, 3]
    assert (nic[:2, cf.Q_PFC_RX] > 0).all() and nic[2, cf.Q_PFC_RX] == 0
    # each sender is paused about half of the time after the queue filled, in XOFF/XON cycles
    # of about 5 us (at 1 us steps), an XOFF and an XON frame each (plus the pro-rated refresh
    # of a pause held for 142 us in all, one frame per 42 us)
    paused_us = nic[0, cf.Q_PFC_RX_US]
    assert paused_us == pytest.approx((300 - 16) / 2, rel=0.1)
    assert 2 * 284 / 6 <= nic[0, cf.Q_PFC_RX] <= 2 * 284 / 5 + 142 / 42 + 2
    # PFC acts before anything is lost: no drops anywhere
    assert sim.counters.prio[:, :, cf.Q_DROPPED].sum() == 0


def test_pause_propagates_hop_by_hop_to_the_senders_across_the_spine() -> None:
    # host1 (leaf1) and host3 (leaf2) -> host5 (leaf3), one spine in between; 100G hosts on
    # 400G fabric links, so the hot spot is the receiver's leaf port, two hops from the senders
    sim = _incast(["host5", "host1", "host3"], spines=1, leaves=3, hpl=2, dt=1e-5,
                  host_gbps=100)
    sim.run_until(0.01)
    rx = lambda d, p: _q(sim, d, p, cf.Q_PFC_RX)   # noqa: E731
    tx = lambda d, p: _q(sim, d, p, cf.Q_PFC_TX)   # noqa: E731
    # leaf3 pauses the spine, the spine pauses both source leaves, they pause the hosts
    assert tx("leaf3", "Ethernet3") > 0 and rx("spine1", "Ethernet3") > 0
    assert tx("spine1", "Ethernet1") > 0 and rx("leaf1", "Ethernet3") > 0
    assert tx("spine1", "Ethernet2") > 0 and rx("leaf2", "Ethernet3") > 0
    assert tx("leaf1", "Ethernet1") > 0 and tx("leaf2", "Ethernet1") > 0
    # the destination's own port never pauses anything; idle hosts are never paused
    assert tx("leaf3", "Ethernet1") == 0 and rx("leaf3", "Ethernet1") == 0
    assert tx("leaf1", "Ethernet2") == 0
    # the bottleneck still runs at line rate
    assert _c(sim, "leaf3", "Ethernet1", cf.P_OUT_OCTETS) == pytest.approx(0.01 * LINE / 4,
                                                                          rel=0.01)


def test_a_backlogged_port_is_paused_for_all_the_time_it_does_not_send() -> None:
    # the spine's port to leaf3 holds a standing queue it cannot send (leaf3's PG sits at XOFF):
    # whatever part of the time it does not spend sending, it spends paused, even when its
    # backlog is smaller than a step's worth of line rate
    sim = _incast(["host5", "host1", "host3"], spines=1, leaves=3, hpl=2, dt=1e-3,
                  host_gbps=100)
    sim.run_until(1.0)
    before = (_c(sim, "spine1", "Ethernet3", cf.P_OUT_OCTETS),
              _q(sim, "spine1", "Ethernet3", cf.Q_PFC_RX_US))
    sim.run_until(2.0)
    sent = (_c(sim, "spine1", "Ethernet3", cf.P_OUT_OCTETS) - before[0]) / LINE
    paused = (_q(sim, "spine1", "Ethernet3", cf.Q_PFC_RX_US) - before[1]) / 1e6
    assert sent == pytest.approx(0.25, rel=0.02)          # what host5's 100G port drains
    assert paused == pytest.approx(1.0 - sent, abs=0.02)


def test_a_port_sending_at_line_rate_is_never_paused() -> None:
    # two 400G senders into one 400G receiver across the spine: the spine's port to leaf3 is the
    # bottleneck and sends at line rate, so leaf3 (which takes exactly line rate) never pauses
    # it, however busy its egress to the receiver is
    sim = _incast(["host5", "host1", "host3"], spines=1, leaves=3, hpl=2, dt=1e-4)
    sim.run_until(0.5)
    assert _c(sim, "spine1", "Ethernet3", cf.P_OUT_OCTETS) == pytest.approx(0.5 * LINE, rel=0.01)
    assert _q(sim, "spine1", "Ethernet3", cf.Q_PFC_RX_US) < 1.0    # not a microsecond
    # it pauses each sender half of the time (each gets half of the bottleneck)
    assert _q(sim, "spine1", "Ethernet1", cf.Q_PFC_TX_US) == pytest.approx(0.25e6, rel=0.05)


def _corrupting_uplink(rate: float, hosts: str, at_s: float) -> Simulation:
    """1 spine, 2 leaves of 2 hosts, all-to-all among ``hosts``; leaf1 corrupts what it sends
    to spine1 from ``at_s`` on."""
    return Simulation(make_scenario(
        fabric={"spines": 1, "leaves": 2, "hosts_per_leaf": 2},
        traffic=[{"pattern": "alltoall", "hosts": hosts, "load": 0.5, "qps_per_flow": 1}],
        faults=[{"kind": "link_corruption", "target": "leaf1~spine1", "at_s": at_s,
                 "params": {"rate": rate, "direction": "a_to_b"}}]), jitter=False)


def test_corrupting_link_counts_fcs_errors_on_the_receiving_side_only() -> None:
    rate = 1e-3
    sim = _corrupting_uplink(rate, hosts="all", at_s=0.0)
    sim.run_until(2.0)
    # a_to_b: leaf1 (a) sends corrupted frames, spine1 (b) receives and counts them
    leaf_port, spine_port = "Ethernet3", "Ethernet1"
    received = _c(sim, "spine1", spine_port, cf.P_IN_PKTS)
    fcs = _c(sim, "spine1", spine_port, cf.P_IN_FCS)
    sent = _c(sim, "leaf1", leaf_port, cf.P_OUT_PKTS)
    assert sent > 1e6
    assert fcs == pytest.approx(sent * rate, rel=1e-6)
    assert received + fcs == pytest.approx(sent, rel=1e-9)
    assert _c(sim, "spine1", spine_port, cf.P_IN_ERRORS) == pytest.approx(fcs)
    assert _c(sim, "leaf1", leaf_port, cf.P_IN_FCS) == 0     # the other direction is clean
    assert sim.counters.port[:, cf.P_IN_FCS].sum() == pytest.approx(fcs)


def test_a_corrupting_link_that_carries_no_frames_still_counts_symbol_errors() -> None:
    # the traffic stays under leaf1: the corrupting uplink only idles, so no frame can fail its
    # FCS, but the bit errors behind the corruption hit the idle blocks all the same
    rate = 4e-4
    sim = _corrupting_uplink(rate, hosts="leaf1", at_s=1.0)
    sim.run_until(1.0)
    before = _c(sim, "spine1", "Ethernet1", cf.P_IN_SYMBOL)
    sim.run_until(3.0)
    assert _c(sim, "leaf1", "Ethernet3", cf.P_OUT_PKTS) == 0
    assert _c(sim, "spine1", "Ethernet1", cf.P_IN_FCS) == 0
    symbols = _c(sim, "spine1", "Ethernet1", cf.P_IN_SYMBOL) - before
    # two seconds of a 400G line at the bit error rate that loses `rate` of 4150-byte frames
    assert symbols == pytest.approx(2.0 * LINE * rate / 4150.0, rel=0.01)
    assert before == 0 and _c(sim, "leaf1", "Ethernet3", cf.P_IN_SYMBOL) == 0


def test_drops_happen_only_where_the_queue_is_lossy() -> None:
    lossless = _incast(["host3", "host1", "host2"], dt=1e-5)
    lossy = _incast(["host3", "host1", "host2"], dt=1e-5,
                    buffers=BufferProfile(lossless=(), ecn_capable=(3,)))
    for sim in (lossless, lossy):
        sim.run_until(0.005)
    drops = lambda s: s.counters.prio[:, :, cf.Q_DROPPED].sum()   # noqa: E731
    pfc = lambda s: s.counters.prio[:, :, cf.Q_PFC_TX].sum()      # noqa: E731
    assert drops(lossless) == 0 and pfc(lossless) > 0
    assert drops(lossy) > 0 and pfc(lossy) == 0
    # the lossy queue tail-drops what does not fit: half of what the senders offer
    offered = 2 * 0.005 * LINE / BufferProfile().roce_frame_bytes
    assert drops(lossy) == pytest.approx(offered / 2, rel=0.05)
    assert _c(lossy, "leaf1", "Ethernet3", cf.P_OUT_DISCARDS) == pytest.approx(drops(lossy))


def test_ecn_marking_ramps_between_kmin_and_kmax() -> None:
    buf = BufferProfile()
    q = np.array([0.0, buf.ecn_kmin_bytes, (buf.ecn_kmin_bytes + buf.ecn_kmax_bytes) / 2,
                  buf.ecn_kmax_bytes, 2 * buf.ecn_kmax_bytes])
    no_bursts = _expected_mark(q, np.zeros(5), np.full(5, 1.0), buf)
    assert no_bursts == pytest.approx([0.0, 0.0, buf.ecn_pmax / 2, 1.0, 1.0])
    lam = np.full(5, (1 - 0.5) / buf.burst_bytes)
    with_bursts = _expected_mark(q, np.full(5, 0.5), lam, buf)
    assert (with_bursts >= no_bursts).all() and with_bursts[0] > 0


def test_congested_queue_marks_ecn_and_an_idle_one_barely() -> None:
    sim = _incast(["host3", "host1", "host2"], dt=1e-5)
    sim.run_until(0.002)
    busy = _q(sim, "leaf1", "Ethernet3", cf.Q_ECN) / _q(sim, "leaf1", "Ethernet3", cf.Q_TX_PKTS)
    assert 0.05 < busy < 1.0
    # the senders' links run below line rate into an empty queue: next to no marks
    quiet = _q(sim, "leaf1", "Ethernet1", cf.Q_ECN)
    assert quiet == 0


def test_counters_never_decrease_through_faults_flaps_and_admin_changes() -> None:
    sc = make_scenario(
        fabric={"spines": 2, "leaves": 2, "hosts_per_leaf": 2},
        traffic=[{"pattern": "alltoall", "hosts": "all", "load": 0.9, "qps_per_flow": 2}],
        faults=[
            {"kind": "link_flap", "target": "leaf1~spine1", "at_s": 1,
             "params": {"period_s": 1.0, "down_s": 0.3}},
            {"kind": "pfc_storm", "target": "host4", "at_s": 2, "until_s": 4},
            {"kind": "link_corruption", "target": "leaf2~spine2", "at_s": 0,
             "params": {"rate": 1e-4}},
            {"kind": "incast", "target": "host1", "at_s": 3, "until_s": 5,
             "params": {"fan_in": 3}}])
    sim = Simulation(sc)
    gauges = {cf.P_OPER, cf.P_ADMIN, cf.P_LAST_CHANGE, cf.P_SPEED}
    port_cols = [f for f in range(cf.N_PORT_FIELDS) if f not in gauges]
    prio_cols = [f for f in range(cf.N_PRIO_FIELDS) if f not in (cf.Q_OCCUPANCY, cf.Q_WATERMARK)]
    prev_port = sim.counters.port[:, port_cols].copy()
    prev_prio = sim.counters.prio[:, :, prio_cols].copy()
    port = sim.wiring.port_index("leaf2", "Ethernet3")
    while sim.t < 6.0:
        sim.run_until(sim.t + sim.tick_s)
        if abs(sim.t - 2.5) < 1e-6:
            sim.set_admin(port, False)
        if abs(sim.t - 3.5) < 1e-6:
            sim.set_admin(port, True)
        cur_port = sim.counters.port[:, port_cols]
        cur_prio = sim.counters.prio[:, :, prio_cols]
        assert (cur_port >= prev_port).all() and (cur_prio >= prev_prio).all()
        prev_port, prev_prio = cur_port.copy(), cur_prio.copy()
    flaps = sim.counters.port[sim.wiring.port_index("leaf1", "Ethernet3"), cf.P_CARRIER]
    assert flaps == 2 * 5                                  # down and up, 5 periods
    assert sim.counters.port[port, cf.P_CARRIER] == 2      # the admin down and up


def test_counter_reset_restarts_counters_and_uptime() -> None:
    sim = Simulation(make_scenario())
    sim.run_until(2.0)
    dev = sim.wiring.device_index("leaf1")
    p = int(sim.wiring.switch_ports[dev][0])
    assert sim.counters.port[p, cf.P_OUT_OCTETS] > 0
    sim.reset_device(dev)
    assert sim.counters.port[p, cf.P_OUT_OCTETS] == 0
    assert sim.counters.device[dev, cf.D_BOOT_S] == pytest.approx(2.0)
    sim.run_until(3.0)
    assert sim.counters.port[p, cf.P_OUT_OCTETS] > 0


def test_a_link_going_down_moves_its_traffic_and_counts_carrier_transitions() -> None:
    sc = make_scenario(
        fabric={"spines": 2, "leaves": 2, "hosts_per_leaf": 2},
        traffic=[{"pattern": "alltoall", "hosts": "all", "load": 0.5, "qps_per_flow": 4}],
        faults=[{"kind": "link_down", "target": "leaf1~spine1", "at_s": 1}])
    sim = Simulation(sc, jitter=False)
    sim.run_until(1.0)
    up = sim.wiring.port_index("leaf1", "Ethernet3")
    other = sim.wiring.port_index("leaf1", "Ethernet4")
    before = sim.counters.port[[up, other], cf.P_OUT_OCTETS].copy()
    sim.run_until(2.0)
    after = sim.counters.port[[up, other], cf.P_OUT_OCTETS] - before
    assert after[0] == 0 and after[1] > 0
    assert sim.counters.port[up, cf.P_OPER] == cf.OPER_DOWN
    assert sim.counters.port[up, cf.P_CARRIER] == 1
    assert sim.counters.port[up, cf.P_LAST_CHANGE] == pytest.approx(1.0)


def test_dcqcn_senders_back_off_on_ecn_and_relieve_pfc() -> None:
    def run(dcqcn: bool) -> Simulation:
        sc = make_scenario(fabric={"spines": 1, "leaves": 1, "hosts_per_leaf": 4}, traffic=[
            {"pattern": "incast", "hosts": ["host4", "host1", "host2", "host3"], "load": 1.0}])
        sim = Simulation(sc, jitter=False, dcqcn=dcqcn)
        sim.run_until(2.0)
        return sim

    pfc_only, with_dcqcn = run(False), run(True)
    pauses = lambda s: s.counters.prio[:, 3, cf.Q_PFC_TX].sum()   # noqa: E731
    assert pauses(with_dcqcn) < 0.5 * pauses(pfc_only)
    assert with_dcqcn.physics.rate_factor.max() < 0.9
    assert (pfc_only.physics.rate_factor == 1.0).all()
    # the receiver still runs near line rate either way (DCQCN trades a little of it)
    for sim in (pfc_only, with_dcqcn):
        out = _c(sim, "leaf1", "Ethernet4", cf.P_OUT_OCTETS) / 2.0
        assert out > 0.85 * LINE
