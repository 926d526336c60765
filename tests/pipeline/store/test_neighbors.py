"""The store's record of LLDP neighbours (pipeline.store.neighbors), in the contract's style: the
same tests on chDB, the ClickHouse server (18.16) and the ClickHouse cluster. The fabric at time
T has the neighbours of time T; a change recorded twice is one; ingest's recorder writes only
what changed, and picks up where the store is after a restart."""

from __future__ import annotations

from typing import Any

from pipeline.ingest.neighbors import NeighborRecorder
from pipeline.store.base import Store
from pipeline.store.neighbors import changes_between, neighbors_at
from pipeline.topology.neighbors import LocalPort, NeighborChange, NeighborReport, RemoteEnd

NS = 1_000_000_000
T0 = 1_750_000_000 * NS


def _seen(system: str, port: str) -> RemoteEnd:
    return RemoteEnd(chassis_id=f"02:00:00:00:00:{len(system):02x}", chassis_id_type="MAC_ADDRESS",
                     port_id=port, port_id_type="INTERFACE_NAME", system_name=system,
                     port_description=f"{system}:{port}")


def _report(at_s: float, device: str, **ports: RemoteEnd | None) -> NeighborReport:
    return NeighborReport(device=device, ts_ns=T0 + int(at_s * NS), chassis_id="02:aa",
                          system_name=device,
                          ports=tuple(LocalPort(name=name.replace("_", "/"), oper_up=True,
                                                neighbors=(n,) if n else ())
                                      for name, n in ports.items()))


def _view(changes: list[NeighborChange]) -> dict[tuple[str, str], str]:
    return {(c.device, c.port): f"{c.system_name}:{c.port_id}" for c in changes}


def test_the_fabric_at_time_t_has_the_neighbours_of_time_t(store: Store, merge: Any) -> None:
    rec = NeighborRecorder(store)
    timeline = [
        _report(0, "leaf1", Ethernet3=_seen("spine1", "Ethernet1"),
                Ethernet4=_seen("spine2", "Ethernet1")),
        _report(0, "spine1", Ethernet1=_seen("leaf1", "Ethernet3")),
        _report(30, "leaf1", Ethernet3=_seen("spine1", "Ethernet1"),        # no change
                Ethernet4=_seen("spine2", "Ethernet1")),
        _report(60, "leaf1", Ethernet3=_seen("spine2", "Ethernet7"),        # re-cabled
                Ethernet4=None),                                           # and gone
        _report(90, "leaf1", Ethernet3=_seen("spine2", "Ethernet7"),
                Ethernet4=_seen("spine2", "Ethernet1")),                   # back
    ]
    written = rec.changes(timeline)
    assert [(c.ts_ns - T0) // NS for c in written] == [0, 0, 0, 60, 60, 90]
    store.insert_neighbors(written)
    store.insert_neighbors(written[2:])            # a redelivery: collapses
    merge(store, "neighbors")
    assert _view(neighbors_at(store, T0 + 10 * NS)) == {
        ("leaf1", "Ethernet3"): "spine1:Ethernet1", ("leaf1", "Ethernet4"): "spine2:Ethernet1",
        ("spine1", "Ethernet1"): "leaf1:Ethernet3"}
    at_70 = neighbors_at(store, T0 + 70 * NS)
    assert _view(at_70) == {("leaf1", "Ethernet3"): "spine2:Ethernet7",
                            ("spine1", "Ethernet1"): "leaf1:Ethernet3"}
    gone = [c for c in neighbors_at(store, T0 + 70 * NS, present_only=False) if not c.present]
    assert [(c.device, c.port, (c.ts_ns - T0) // NS) for c in gone] == [("leaf1", "Ethernet4",
                                                                          60)]
    assert _view(neighbors_at(store)) == {**_view(at_70), ("leaf1", "Ethernet4"):
                                          "spine2:Ethernet1"}
    assert neighbors_at(store, T0 - NS) == []
    history = changes_between(store, T0, T0 + 100 * NS)
    assert [(c.device, c.port, c.present) for c in history] == [
        ("leaf1", "Ethernet3", True), ("leaf1", "Ethernet4", True), ("spine1", "Ethernet1", True),
        ("leaf1", "Ethernet3", True), ("leaf1", "Ethernet4", False), ("leaf1", "Ethernet4", True)]
    assert history[0].port_description == "spine1:Ethernet1"


def test_a_restarted_recorder_records_no_change_twice(store: Store) -> None:
    first = NeighborRecorder(store)
    store.insert_neighbors(first.changes([_report(0, "leaf2", Ethernet3=_seen("spine1", "X"))]))
    again = NeighborRecorder(store)            # a new ingest process, the same store
    assert again.changes([_report(0, "leaf2", Ethernet3=_seen("spine1", "X")),      # redelivered
                          _report(30, "leaf2", Ethernet3=_seen("spine1", "X"))]) == []
    moved = again.changes([_report(60, "leaf2", Ethernet3=_seen("spine3", "Y"))])
    assert [(c.system_name, c.port_id) for c in moved] == [("spine3", "Y")]
    # a report older than what a port showed last (late, redelivered) changes nothing
    assert again.changes([_report(45, "leaf2", Ethernet3=None)]) == []
    # a port that never showed anything, and shows nothing, writes nothing
    assert again.changes([_report(90, "leaf9", Ethernet1=None)]) == []
