"""The REST API with FastAPI's TestClient: every endpoint, hostile requests, and commands."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from pipeline.bus.base import Topics
from pipeline.bus.memory import MemoryBus
from pipeline.store.base import Columns
from pipeline.wire.commands import decode_command
from tests.ui.api.conftest import bearer, entries
from tests.ui.conftest import FabricStore, fabric_query
from tests.ui.ui_fabric import FAULTY_LINK
from ui.api.access import AccessSettings, Tokens
from ui.api.app import create_app
from ui.api.commands import CommandPublisher


class RecordingStore:
    """The fabric store, recording every SQL statement the API sends it."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.dialect = inner.dialect
        self.database = inner.database
        self.settings = inner.settings
        self.sql: list[str] = []

    def query(self, sql: str) -> Columns:
        self.sql.append(sql)
        result: Columns = self.inner.query(sql)
        return result


@pytest.fixture
def recorded(fabric_store: FabricStore) -> RecordingStore:
    return RecordingStore(fabric_store.store)


@pytest.fixture
def bus() -> MemoryBus:
    return MemoryBus(partitions=1)


@pytest.fixture
def client(fabric_store: FabricStore, recorded: RecordingStore,
           bus: MemoryBus) -> Iterator[TestClient]:
    query = fabric_query(FabricStore(recorded, fabric_store.fabric))  # type: ignore[arg-type]
    app = create_app(query, probes=lambda: {"ingest": {"alive": True, "samples": 7}},
                     publisher=CommandPublisher(bus, Topics()),
                     tokens=Tokens(AccessSettings(tokens=entries())))
    with TestClient(app) as c:
        yield c


def test_alerts_and_incidents(client: TestClient) -> None:
    body = client.get("/v1/alerts").json()
    assert body["mode"] == "active"
    assert {a["name"] for a in body["alerts"]} == {"faulty_link", "fcs_errors"}
    incidents = client.get("/v1/alerts", params={"kind": "incident"}).json()["alerts"]
    assert [a["entity"] for a in incidents] == [FAULTY_LINK]
    body = client.get("/v1/incidents").json()
    [incident] = body["incidents"]
    assert incident["entity"] == FAULTY_LINK and len(incident["symptoms"]) == 2
    history = client.get("/v1/alerts", params={"start": "now-10m", "name": "pfc_storm"}).json()
    assert [(a["entity"], a["status"]) for a in history["alerts"]] == [("host1", "resolved")]


def test_series(client: TestClient, fabric_store: FabricStore) -> None:
    fabric = fabric_store.fabric
    device, port = fabric.faulty_ports[0].split(":")
    resp = client.get("/v1/series", params=[
        ("device", device), ("port", port), ("metric", "if_in_fcs_errors"),
        ("metric", "pfc_rx_frames"), ("start", "now-60s"), ("step", "10s")])
    assert resp.status_code == 200, resp.text
    fcs, pfc = resp.json()["results"]
    assert fcs["unit"] == "frames/s" and fcs["kind"] == "counter"
    assert [v for _, v in fcs["series"][0]["points"]][-3:] == [500.0, 500.0, 500.0]
    assert pfc["series"][0]["qual"] == 3
    assert [v for _, v in pfc["series"][0]["points"]][-1] == 2.0


def test_actions_status_topology_latest_clock(client: TestClient) -> None:
    actions = client.get("/v1/actions").json()["actions"]
    assert [a["action"] for a in actions] == ["drain", "notify"]
    assert actions[0]["mode"] == "dry_run" and actions[0]["steps"] == [{"step": "capacity",
                                                                        "ok": True}]
    status = client.get("/v1/status").json()
    assert status["entities"][0]["entity"] == FAULTY_LINK
    assert status["entities"][0]["level"] == "critical"
    assert status["telemetry"]["state"] == "live"
    topo = client.get("/v1/topology").json()
    assert topo["known"] and FAULTY_LINK in {link["id"] for link in topo["links"]}
    latest = client.get("/v1/latest", params={"device": "leaf3", "metric": "if_in_fcs_errors"})
    assert {v["value"] for v in latest.json()["values"]} >= {500.0, 0.0}
    clock = client.get("/v1/clock").json()
    assert clock["source"] == "data" and clock["now_ns"] == status["clock"]["now_ns"]


def test_healthz_reports_the_loops(client: TestClient) -> None:
    body = client.get("/healthz").json()
    assert body["status"] == "ok" and body["store"] == "ok"
    assert body["loops"]["ingest"] == {"alive": True, "samples": 7}
    assert body["loops"]["api"]["requests"] >= 0


def test_openapi_documents_every_endpoint(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    assert {"/v1/alerts", "/v1/incidents", "/v1/series", "/v1/actions", "/v1/topology",
            "/v1/status", "/v1/latest", "/v1/clock", "/healthz", "/v1/commands"} <= set(
        spec["paths"])
    params = {p["name"]: p for p in spec["paths"]["/v1/series"]["get"]["parameters"]}
    assert "RFC 3339" in params["start"]["description"]
    assert spec["paths"]["/v1/series"]["get"]["description"]


HOSTILE: list[tuple[str, dict[str, Any], int, str]] = [
    ("/v1/series", {"device": "leaf1' OR '1'='1", "port": "Ethernet1", "metric": "pfc_rx_frames"},
     400, "not a valid device"),
    ("/v1/series", {"device": "leaf1", "port": "Ethernet1); DROP TABLE samples; --",
                    "metric": "pfc_rx_frames"}, 400, "not a valid port"),
    ("/v1/series", {"device": "leaf1", "port": "Ethernet1", "metric": "pfc_rx_frames' --"},
     400, "unknown metric"),
    ("/v1/series", {"device": "leaf1", "port": "Ethernet1", "metric": "pfc_rx_frames",
                    "start": "now-399d", "step": "1s"}, 400, "use a step of at least"),
    ("/v1/series", {"device": "leaf1", "port": "Ethernet1", "metric": "pfc_rx_frames",
                    "start": "now-9999d"}, 400, "the limit is"),
    ("/v1/series", {"device": "leaf1", "port": "Ethernet1", "metric": "pfc_rx_frames",
                    "step": "1e30"}, 400, "want a duration"),
    ("/v1/series", {"device": "leaf1", "port": "Ethernet1", "metric": "pfc_rx_frames",
                    "step": "-5s"}, 400, "want a duration"),
    ("/v1/series", {"device": "leaf1", "port": "Ethernet1", "metric": "pfc_rx_frames",
                    "start": "tomorrow"}, 400, "RFC 3339"),
    ("/v1/series", {"device": "leaf1", "port": "Ethernet1", "metric": "pfc_rx_frames",
                    "qual": "3 OR 1=1"}, 422, "qual"),
    ("/v1/series", {"device": "x" * 5000, "port": "Ethernet1", "metric": "pfc_rx_frames"},
     422, "device"),
    ("/v1/series", {"port": "Ethernet1", "metric": "pfc_rx_frames"}, 422, "device"),
    ("/v1/series", {"device": "leaf0\n", "port": "Ethernet1", "metric": "pfc_rx_frames"},
     400, "not a valid device"),
    ("/v1/series", {"device": "leaf0", "port": "Ethernet1\n", "metric": "pfc_rx_frames"},
     400, "not a valid port"),
    ("/v1/alerts", {"entity": "leaf3~spine2\n"}, 400, "not a valid entity"),
    ("/v1/alerts", {"name": "faulty_link\n"}, 400, "not a valid name"),
    ("/v1/alerts", {"fingerprint": "0123456789abcdef\n"}, 400, "fingerprint"),
    ("/v1/alerts", {"entity": "leaf1~spine1' UNION SELECT 1 --"}, 400, "not a valid entity"),
    ("/v1/alerts", {"name": "faulty_link\\'"}, 400, "not a valid name"),
    ("/v1/alerts", {"severity": "urgent"}, 400, "not one of"),
    ("/v1/alerts", {"kind": "everything"}, 400, "incident, symptom"),
    ("/v1/alerts", {"at": "now", "start": "now-1h"}, 400, "not both"),
    ("/v1/alerts", {"limit": "100000000"}, 422, "limit"),
    ("/v1/alerts", {"limit": "99999"}, 400, "outside"),
    ("/v1/alerts", {"fingerprint": "'; SELECT 1"}, 400, "fingerprint"),
    ("/v1/alerts", {"touching": "leaf1\x00"}, 400, "not a valid device"),
    ("/v1/actions", {"target": "leaf1%' OR 1"}, 400, "not a valid entity"),
    ("/v1/actions", {"start": "99999999999999999999999"}, 400, "too far in the future"),
    ("/v1/latest", {"device": "leaf1", "window": "3d"}, 400, "at most 1h"),
    ("/v1/status", {"top": "100000"}, 422, "top"),
]


@pytest.mark.parametrize(("path", "params", "code", "message"), HOSTILE)
def test_hostile_requests_are_refused_before_sql(client: TestClient, recorded: RecordingStore,
                                                 path: str, params: dict[str, Any], code: int,
                                                 message: str) -> None:
    resp = client.get(path, params=params)
    assert resp.status_code == code, resp.text
    assert message in resp.json()["error"]
    # at most the clock was read: no statement carries anything the request sent
    for sql in recorded.sql:
        for value in params.values():
            if len(str(value)) > 4:
                assert str(value) not in sql


def test_commands_are_published(client: TestClient, bus: MemoryBus) -> None:
    consumer = bus.consumer([Topics().commands], "test")
    resp = client.post("/v1/commands", json={"kind": "approve", "target": FAULTY_LINK,
                                             "comment": "optics checked"},
                       headers=bearer("operator"))
    assert resp.status_code == 202, resp.text
    [msg] = consumer.poll(1.0)
    command = decode_command(msg.value)
    assert (command.kind, getattr(command, "target", ""), command.by) == (
        "approve", FAULTY_LINK, "operator-1")
    assert command.id == resp.json()["id"] and command.issued_at_ns > 0
    assert msg.key == FAULTY_LINK.encode()
    resp = client.post("/v1/commands", json={"kind": "silence", "matchers": ["alertname=x"],
                                             "ends_ns": 2 * 10**18, "id": "retry-7"},
                       headers=bearer("admin"))
    assert resp.status_code == 202, resp.text
    [msg] = consumer.poll(1.0)
    assert (decode_command(msg.value).by, resp.json()["id"]) == ("admin-1", "retry-7")


@pytest.mark.parametrize(("body", "code", "message"), [
    ({"kind": "approve", "target": "leaf1'; DROP"}, 400, "not a valid entity"),
    ({"kind": "approve", "target": FAULTY_LINK + "\n"}, 400, "not a valid entity"),
    ({"kind": "launch_missiles"}, 422, "does not match"),
    ({"target": FAULTY_LINK}, 422, "kind"),
    ({"kind": "approve"}, 422, "target"),
    ({"kind": "approve", "target": FAULTY_LINK, "by": "alice"}, 422, "by: not taken"),
    ({"kind": "approve", "target": FAULTY_LINK, "issued_at_ns": 5}, 422, "not taken"),
    ({"kind": "silence", "matchers": ["=~("], "ends_ns": 1}, 400, "matchers"),
    ({"kind": "expire_silence", "silence_id": "s" * 500_000}, 422,
     "silence_id: String should have at most 64 characters"),
    ({"kind": "silence", "matchers": ["alertname=x"], "ends_ns": 1e40}, 422,
     "ends_ns: Unable to parse input string as an integer, exceeded maximum size (want an "
     "integer of ns since the epoch, below 4102444800000000000: 2100)"),
    ({"kind": "silence", "matchers": ["alertname=x"], "ends_ns": 5e18}, 422,
     "ends_ns: Input should be less than 4102444800000000000"),
    ({"kind": "silence", "matchers": ["alertname=x"], "ends_ns": -1}, 422, "ends_ns"),
    ({"kind": "silence", "matchers": ["alertname=x"] * 17, "ends_ns": 1}, 422, "matchers"),
    ({"kind": "silence", "matchers": ["alertname=" + "x" * 300], "ends_ns": 1}, 422,
     "at most 256"),
    ({"kind": "repair", "target": FAULTY_LINK, "action": "x" * 201}, 422, "action"),
    ({"kind": "approve", "target": FAULTY_LINK, "comment": "c" * 2001}, 422, "comment"),
    ({"kind": "approve", "target": FAULTY_LINK, "id": "a b"}, 422, "id"),
])
def test_bad_commands(client: TestClient, bus: MemoryBus, body: dict[str, Any], code: int,
                      message: str) -> None:
    consumer = bus.consumer([Topics().commands], "test")
    resp = client.post("/v1/commands", json=body, headers=bearer("admin"))
    assert resp.status_code == code, resp.text
    assert message in resp.json()["error"]
    assert len(resp.json()["error"]) < 1000
    assert consumer.poll(0.1) == []


def test_without_a_bus_there_are_no_commands(fabric_store: FabricStore) -> None:
    with TestClient(create_app(fabric_query(fabric_store))) as c:
        resp = c.post("/v1/commands", json={"kind": "resume"}, headers=bearer("admin"))
        assert resp.status_code == 404
