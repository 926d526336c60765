"""LLDP over gNMI ON_CHANGE: the collector keeps one subscription per target open and reports a
target's table when it changes, against the lab's gNMI agents in every dialect (OpenConfig,
Arista EOS, SONiC's APPL_DB); its table kept from updates and deletes, and a restarted stream's
sync replacing it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from pygnmi.spec.v080 import gnmi_pb2 as pb

from collectors.gnmi.collector import GnmiCollector, GnmiOptions
from collectors.gnmi.lldp_stream import LldpStream, LldpTable
from collectors.gnmi.subscription import parse_path
from collectors.neighbors import read_all
from collectors.profile import GnmiProfile, load_profile
from lab.runtime import Lab
from pipeline.inventory import from_lab
from pipeline.topology.neighbors import NeighborReport
from tests.collectors.conftest import Reports, Running, running_lab, wait_until
from tests.lab.conftest import scenario_dict

NS = 1_000_000_000
DROP_AT, DROP_UNTIL = 45.0, 55.0
#: how late (simulated s) a busy machine's lab may stamp a change it served late
SLACK_S = 3.0
#: every switch over gNMI, each dialect twice; leaf1 stops showing spine1 for ten seconds
STREAMED = scenario_dict(
    name="lldp-on-change", duration_s=3600,
    fabric={"spines": 2, "leaves": 4, "hosts_per_leaf": 1, "agents": {"gnmi": 1.0},
            "profiles": ["openconfig", "arista", "sonic"]},
    traffic=[{"pattern": "allreduce", "hosts": "all", "load": 0.3, "qps_per_flow": 2}],
    faults=[{"kind": "lldp_neighbor_drop", "target": "leaf1~spine1", "at_s": DROP_AT,
             "until_s": DROP_UNTIL, "params": {"side": "a"}}])


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    with running_lab(STREAMED, 1.5, tmp_path_factory.mktemp("on-change")) as running:
        yield running


def _far(report: NeighborReport, port: str) -> tuple[str, ...]:
    p = report.port(port)
    assert p is not None
    return tuple(n.system_name for n in p.neighbors)


def _content(report: NeighborReport) -> dict[str, Any]:
    return report.model_dump(exclude={"ts_ns", "streamed"})


def test_a_dropped_neighbour_is_reported_as_it_goes_and_as_it_comes_back(lab: Lab) -> None:
    got = Reports()
    agents = str(lab.out_dir / "agents.json")
    # a 30 s LLDP interval: a periodic read could not see a 10 s drop within its window
    gnmi = GnmiCollector("oc", GnmiOptions(agents=agents, lldp_interval_s=30),
                         emit=lambda b: None)
    gnmi.emit_neighbors = got.take
    devices = lab.topology.switches
    dialects = {s["name"]: s["gnmi"]["profile"] for s in lab.agents()["switches"]}
    assert set(dialects.values()) == {"openconfig", "arista", "sonic"}
    port = next(p.name for p in lab.topology.ports("leaf1")
                if (peer := lab.topology.peer(p)) is not None and peer.device == "spine1")
    with Running(gnmi):
        wait_until(lambda: all(got.of(d) for d in devices), "every switch's synced table",
                   timeout=30)
        inventory, env = from_lab(lab.agents())
        fresh = {r.device: r for r in read_all(inventory.targets, env).reports}
        assert lab.sim_time() < DROP_AT, "the test was too slow to read before the drop"
        for d in devices:     # the stream's table is what a one-off read decodes
            (synced,) = got.of(d)
            assert synced.streamed and _content(synced) == _content(fresh[d]), d
        assert _far(got.of("leaf1")[0], port) == ("spine1",)
        wait_until(lambda: len(got.of("leaf1")) >= 2 and lab.sim_time() > DROP_AT + 3,
                   "leaf1's report of the drop", timeout=60)
        gone = got.of("leaf1")[1]
        assert _far(gone, port) == ()
        # stamped by the device: the drop's own time (a lab the machine slows may serve it a
        # snapshot or so late), nowhere near a 30 s read
        at = (gone.ts_ns - lab.epoch_ns) / NS
        assert DROP_AT <= at <= DROP_AT + SLACK_S, at
        wait_until(lambda: len(got.of("leaf1")) >= 3, "leaf1's report of its return",
                   timeout=60)
        back = got.of("leaf1")[2]
        assert _far(back, port) == ("spine1",) and _content(back) == _content(fresh["leaf1"])
        assert DROP_UNTIL <= (back.ts_ns - lab.epoch_ns) / NS <= DROP_UNTIL + SLACK_S
        health = gnmi.health()["lldp"]
        # LLDP rides each target's session connection: one connect per target, not two
        assert gnmi.health()["connects_granted"] == len(devices)
    # nothing else changed: one report each (SONiC's time mark moves every second, and is no
    # change), and leaf1 reported its two changes once each
    assert {d: len(got.of(d)) for d in devices} == {d: 3 if d == "leaf1" else 1
                                                    for d in devices}
    assert (health["streamed"], health["syncs"], health["changes"], health["errors"]) == (
        len(devices), len(devices), 2, 0)


# -- the table, without a target -----------------------------------------------------------------

def _gnmi(name: str) -> GnmiProfile:
    profile = load_profile(name)
    assert isinstance(profile, GnmiProfile)
    return profile


_OC = _gnmi("openconfig")
_NB = "/lldp/interfaces/interface[name=Ethernet1]/neighbors/neighbor[id={id}]/state/{leaf}"


def _update(path: str, value: Any, ts: int) -> pb.Notification:
    note = pb.Notification(timestamp=ts)
    note.update.add(path=parse_path(path),
                    val=pb.TypedValue(json_ietf_val=json.dumps(value).encode()))
    return note


def _neighbor(nid: str, system: str, ts: int) -> list[pb.Notification]:
    return [_update(_NB.format(id=nid, leaf="chassis-id"), f"02:72:77:00:00:{nid}", ts),
            _update(_NB.format(id=nid, leaf="chassis-id-type"), "MAC_ADDRESS", ts),
            _update(_NB.format(id=nid, leaf="port-id"), "Ethernet7", ts),
            _update(_NB.format(id=nid, leaf="system-name"), system, ts)]


def _up(ts: int) -> pb.Notification:
    return _update("/interfaces/interface[name=Ethernet1]/state/oper-status", "UP", ts)


def test_the_table_takes_updates_and_deletes_and_ignores_what_says_nothing_new() -> None:
    table = LldpTable("leaf1", _OC)
    for note in [_up(1), *_neighbor("01", "spine1", 2)]:
        assert table.apply(note)
    assert _far(table.report(), "Ethernet1") == ("spine1",) and table.report().ts_ns == 2
    assert not table.apply(_neighbor("01", "spine1", 5)[0])       # the same value again
    assert table.report().ts_ns == 2                               # no change: no new time
    gone = pb.Notification(timestamp=7)
    gone.delete.append(parse_path(_NB.format(id="01", leaf="")[:-len("/state/")]))
    assert table.apply(gone)                                       # the whole neighbour
    report = table.report()
    assert _far(report, "Ethernet1") == () and report.ts_ns == 7 and report.streamed
    assert report.port("Ethernet1").oper_up is True                # type: ignore[union-attr]
    sonic = LldpTable("leaf3", _gnmi("sonic"))
    doc = {"Ethernet1": {"lldp_rem_chassis_id": "02:72:77:00:00:01",
                         "lldp_rem_chassis_id_subtype": "4", "lldp_rem_port_id": "etp7",
                         "lldp_rem_port_id_subtype": "7", "lldp_rem_sys_name": "spine1",
                         "lldp_rem_time_mark": "9"}}
    entries = pb.Notification(timestamp=1, prefix=pb.Path(target="APPL_DB"))
    entries.update.add(path=parse_path("LLDP_ENTRY_TABLE/*"),
                       val=pb.TypedValue(json_ietf_val=json.dumps(doc).encode()))
    ports = pb.Notification(timestamp=1, prefix=pb.Path(target="APPL_DB"))
    ports.update.add(path=parse_path("PORT_TABLE/*"), val=pb.TypedValue(json_ietf_val=json.dumps(
        {"Ethernet1": {"oper_status": "up", "speed": "400000", "alias": "etp1"}}).encode()))
    assert sonic.apply(entries) and sonic.apply(ports)
    assert _far(sonic.report(), "Ethernet1") == ("spine1",)
    doc["Ethernet1"]["lldp_rem_time_mark"] = "10"     # its age (a longer text): no change
    entries.update[0].val.json_ietf_val = json.dumps(doc).encode()
    assert not sonic.apply(entries)
    del doc["Ethernet1"]                               # the neighbour went: a new document
    entries.update[0].val.json_ietf_val = json.dumps(doc).encode()
    assert sonic.apply(entries) and _far(sonic.report(), "Ethernet1") == ()


class _Call:
    """A Subscribe call that answers what it is given, then ends."""

    def __init__(self, responses: list[pb.SubscribeResponse]) -> None:
        self._responses = list(responses)

    async def write(self, request: pb.SubscribeRequest) -> None:
        sub = request.subscribe
        assert sub.mode == pb.SubscriptionList.STREAM
        assert {s.mode for s in sub.subscription} == {pb.ON_CHANGE}

    async def read(self) -> Any:
        await asyncio.sleep(0.01)
        return self._responses.pop(0) if self._responses else grpc.aio.EOF

    def cancel(self) -> bool:
        return True


class _Channel:
    def __init__(self, *calls: _Call) -> None:
        self._calls = list(calls)

    def stream_stream(self, *_args: Any, **_kw: Any) -> Any:
        return lambda **_kw2: self._calls.pop(0)


def _responses(*notes: pb.Notification, sync: bool = True) -> list[pb.SubscribeResponse]:
    out = [pb.SubscribeResponse(update=n) for n in notes]
    return [*out, pb.SubscribeResponse(sync_response=True)] if sync else out


def test_a_restarted_stream_replaces_the_table_with_its_sync_and_bursts_are_one_report() -> None:
    """The first stream syncs a neighbour, then two changes arrive together (one report), then
    it ends. The second stream's initial set has no neighbour at all: its sync replaces the
    table (no neighbour left over from the first), and until then the first table stood."""
    first = _Call([*_responses(_up(1), *_neighbor("01", "spine1", 2)),
                   *_responses(*_neighbor("02", "spine9", 3), sync=False)])
    second = _Call(_responses(_up(10)))
    stream = LldpStream("leaf1", _OC, coalesce_s=0.2)
    got: list[NeighborReport] = []

    async def deliver(report: NeighborReport) -> None:
        got.append(report)

    async def run() -> None:
        stopping = asyncio.Event()
        channel = _Channel(first, second)
        with pytest.raises(Exception, match="ended its LLDP subscription"):
            await stream.follow(channel, _Secrets(), stopping, deliver)
        await asyncio.sleep(0.3)              # the burst's report, after the window
        assert stream.table is not None and len(got) == 2
        # the stream is gone: its table is a snapshot now, said once
        lost = stream.lost()
        assert lost is not None and not lost.streamed and lost.ts_ns == 3
        assert stream.lost() is None
        with pytest.raises(Exception, match="ended its LLDP subscription"):
            await stream.follow(channel, _Secrets(), stopping, deliver)

    asyncio.run(run())
    assert [r.ts_ns for r in got] == [2, 3, 10]
    assert _far(got[0], "Ethernet1") == ("spine1",)
    assert sorted(_far(got[1], "Ethernet1")) == ["spine1", "spine9"]
    assert _far(got[2], "Ethernet1") == ()
    assert (stream.syncs, stream.changes) == (2, 4)


class _Secrets:
    username = "u"
    password = "p"
