"""Every fault kind has the observable effect the scenario table promises, on the right ports."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from lab import counters as cf
from lab.buffers import BufferProfile
from lab.sim.simulation import Simulation
from tests.lab.conftest import make_scenario

FABRIC = {"spines": 2, "leaves": 2, "hosts_per_leaf": 4}   # host1-4 on leaf1, host5-8 on leaf2
TRAFFIC = [{"pattern": "allreduce", "hosts": "all", "load": 0.5, "qps_per_flow": 2}]
START, END = 1.0, 3.0


def _run(faults: list[dict[str, Any]], traffic: list[dict[str, Any]] | None = None,
         **kw: Any) -> tuple[Simulation, np.ndarray]:
    sim = Simulation(make_scenario(fabric=FABRIC, traffic=traffic or TRAFFIC, faults=faults),
                     **kw)
    sim.run_until(START)
    before = sim.counters.vector.copy()
    sim.run_until(END)
    return sim, before


def _delta(sim: Simulation, before: np.ndarray, device: str, port: str, fld: int,
           prio: int | None = None) -> float:
    lay = sim.counters.layout
    p = sim.wiring.port_index(device, port)
    i = lay.port_index(p, fld) if prio is None else lay.prio_index(p, prio, fld)
    return float(sim.counters.vector[i] - before[i]) / (END - START)


def _fault(kind: str, target: str, **params: Any) -> dict[str, Any]:
    return {"kind": kind, "target": target, "at_s": START, "params": params}


def test_pfc_storm_pauses_the_leaf_port_continuously_and_spreads() -> None:
    sim, b = _run([_fault("pfc_storm", "host3", priority=3)])
    refresh = BufferProfile.pause_refresh_s(400e9)
    port = "Ethernet3"
    assert _delta(sim, b, "leaf1", port, cf.Q_PFC_RX, 3) >= 0.99 / refresh
    assert _delta(sim, b, "leaf1", port, cf.Q_PFC_RX_US, 3) == pytest.approx(1e6, rel=0.01)
    assert _delta(sim, b, "leaf1", port, cf.P_OUT_OCTETS) < 1e3      # nothing drains
    # the stuck queue backs up: the leaf pauses the spines feeding it
    uplinks = sum(_delta(sim, b, "leaf1", f"Ethernet{k}", cf.Q_PFC_TX, 3) for k in (5, 6))
    assert uplinks > 0


def test_pfc_storm_on_another_priority_pauses_only_that_priority() -> None:
    sim, b = _run([_fault("pfc_storm", "host3", priority=5)])
    assert _delta(sim, b, "leaf1", "Ethernet3", cf.Q_PFC_RX, 5) > 0
    assert _delta(sim, b, "leaf1", "Ethernet3", cf.Q_PFC_RX, 3) == 0
    assert _delta(sim, b, "leaf1", "Ethernet3", cf.P_OUT_OCTETS) > 1e9   # RoCE still flows


def test_incast_saturates_the_target_port_and_pauses_the_senders() -> None:
    sim, b = _run([_fault("incast", "host2", fan_in=4)])
    out = _delta(sim, b, "leaf1", "Ethernet2", cf.P_OUT_OCTETS)
    assert out == pytest.approx(400e9 / 8, rel=0.02)
    assert _delta(sim, b, "leaf1", "Ethernet2", cf.Q_ECN, 3) > 0
    assert _delta(sim, b, "leaf1", "Ethernet2", cf.Q_WATERMARK, 3) >= 0
    assert sim.counters.prio[sim.wiring.port_index("leaf1", "Ethernet2"), 3,
                             cf.Q_WATERMARK] > 2 * BufferProfile().xoff_bytes
    tx = sum(_delta(sim, b, d, f"Ethernet{k}", cf.Q_PFC_TX, 3)
             for d in ("leaf1", "leaf2") for k in range(1, 7))
    assert tx > 0


def test_slow_receiver_pauses_intermittently_and_drains_slowly() -> None:
    sim, b = _run([_fault("slow_receiver", "host6", drain_fraction=0.3)])
    paused = _delta(sim, b, "leaf2", "Ethernet2", cf.Q_PFC_RX_US, 3) / 1e6
    assert 0.6 < paused < 0.8            # about 1 - drain_fraction, not a storm
    out = _delta(sim, b, "leaf2", "Ethernet2", cf.P_OUT_OCTETS) * 8
    assert out <= 0.3 * 400e9 * 1.01


def test_link_corruption_counts_fcs_on_the_receiving_end() -> None:
    sim, b = _run([_fault("link_corruption", "leaf1~spine2", rate=1e-4, direction="b_to_a")])
    assert _delta(sim, b, "leaf1", "Ethernet6", cf.P_IN_FCS) > 0        # a = leaf1 receives
    assert _delta(sim, b, "spine2", "Ethernet1", cf.P_IN_FCS) == 0


def test_link_flap_counts_carrier_transitions_at_both_ends() -> None:
    sim, b = _run([_fault("link_flap", "leaf2~spine1", period_s=0.5, down_s=0.1)])
    for dev, port in (("leaf2", "Ethernet5"), ("spine1", "Ethernet2")):
        assert _delta(sim, b, dev, port, cf.P_CARRIER) * (END - START) == 8


def test_optics_degrade_shows_symbol_errors_before_fcs_errors() -> None:
    sc = make_scenario(fabric=FABRIC, traffic=TRAFFIC, faults=[
        {"kind": "optics_degrade", "target": "leaf1~spine1", "at_s": 0.5, "until_s": 10,
         "params": {"start_rate": 1e-7, "end_rate": 1e-4}}])
    sim = Simulation(sc)
    p = sim.wiring.port_index("spine1", "Ethernet1")
    sim.run_until(2.0)
    early_sym, early_fcs = (sim.counters.port[p, cf.P_IN_SYMBOL],
                            sim.counters.port[p, cf.P_IN_FCS])
    assert early_sym > 0 and early_fcs < 1
    sim.run_until(10.0)
    assert sim.counters.port[p, cf.P_IN_FCS] > 100
    assert sim.counters.port[p, cf.P_IN_SYMBOL] > 10 * early_sym


def _uplink_imbalance(sim: Simulation, before: np.ndarray, leaf: str) -> float:
    outs = [_delta(sim, before, leaf, f"Ethernet{k}", cf.P_OUT_OCTETS) for k in (5, 6)]
    return max(outs) / max(np.mean(outs), 1.0)


def test_ecmp_collision_piles_a_leafs_flows_onto_one_uplink() -> None:
    traffic = [{"pattern": "alltoall", "hosts": "all", "load": 0.4, "qps_per_flow": 1}]
    control, cb = _run([], traffic=traffic, jitter=False)
    sim, b = _run([_fault("ecmp_collision", "leaf1", flows=16)], traffic=traffic, jitter=False)
    assert _uplink_imbalance(control, cb, "leaf1") < 1.5
    assert _uplink_imbalance(sim, b, "leaf1") == pytest.approx(2.0, rel=0.01)  # all on one


def test_buffer_misconfig_pauses_without_overload() -> None:
    traffic = [{"pattern": "alltoall", "hosts": "all", "load": 0.5, "qps_per_flow": 2}]
    control, cb = _run([], traffic=traffic)
    sim, b = _run([_fault("buffer_misconfig", "leaf1", xoff_fraction=0.02)], traffic=traffic)

    def pauses(s: Simulation, before: np.ndarray) -> float:
        return sum(_delta(s, before, "leaf1", f"Ethernet{k}", cf.Q_PFC_TX, 3)
                   for k in range(1, 7))

    assert pauses(control, cb) < 1.0
    assert pauses(sim, b) > 1000.0
    # and there is no real overload: the links stay well below line rate
    assert max(_delta(sim, b, "leaf1", f"Ethernet{k}", cf.P_OUT_OCTETS)
               for k in range(1, 7)) < 0.7 * 400e9 / 8


def test_pfc_deadlock_freezes_the_cycle() -> None:
    cycle = ["leaf1~spine1", "leaf2~spine1", "leaf2~spine2", "leaf1~spine2"]
    sim, b = _run([{"kind": "pfc_deadlock", "target": "leaf1~spine1", "at_s": START,
                    "params": {"cycle": cycle}}])
    refresh = BufferProfile.pause_refresh_s(400e9)
    # walking leaf1 -> spine1 -> leaf2 -> spine2 -> leaf1: each hop is paused and silent
    for dev, port in (("leaf1", "Ethernet5"), ("spine1", "Ethernet2"),
                      ("leaf2", "Ethernet6"), ("spine2", "Ethernet1")):
        assert _delta(sim, b, dev, port, cf.Q_PFC_RX, 3) >= 0.99 / refresh
        assert _delta(sim, b, dev, port, cf.Q_TX_OCTETS, 3) == 0
        p = sim.wiring.port_index(dev, port)
        assert sim.counters.prio[p, 3, cf.Q_OCCUPANCY] >= BufferProfile().xoff_bytes


def test_link_down_stays_down_and_carries_nothing() -> None:
    sim, b = _run([_fault("link_down", "leaf1~spine2")])
    p = sim.wiring.port_index("leaf1", "Ethernet6")
    assert sim.counters.port[p, cf.P_OPER] == cf.OPER_DOWN
    assert _delta(sim, b, "leaf1", "Ethernet6", cf.P_OUT_OCTETS) == 0
    assert _delta(sim, b, "leaf1", "Ethernet5", cf.P_OUT_OCTETS) > 0


def test_overlapping_faults_compose() -> None:
    sim, b = _run([_fault("link_corruption", "leaf1~spine1", rate=1e-4, direction="both"),
                   _fault("link_flap", "leaf1~spine1", period_s=1.0, down_s=0.2),
                   _fault("pfc_storm", "host1", priority=3)])
    assert _delta(sim, b, "spine1", "Ethernet1", cf.P_IN_FCS) > 0
    assert _delta(sim, b, "spine1", "Ethernet1", cf.P_CARRIER) > 0
    assert _delta(sim, b, "leaf1", "Ethernet1", cf.Q_PFC_RX, 3) > 0
