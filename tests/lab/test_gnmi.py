"""The gNMI agents, checked with pygnmi: Capabilities, Get, Set, Subscribe in every mode, TLS."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from pygnmi.client import gNMIclient, gNMIException

from lab.runtime import Lab
from tests.lab.conftest import gnmi_target, make_scenario

OC, ARISTA, SONIC = "spine1", "leaf1", "leaf3"


def client(lab: Lab, switch: str, **kw: Any) -> gNMIclient:
    host, port = gnmi_target(lab, switch)
    opts: dict[str, Any] = {"username": "admin", "password": "admin", "insecure": True,
                            "gnmi_timeout": 10}
    opts.update(kw)
    return gNMIclient(target=(host, port), **opts)


def _updates(resp: dict[str, Any]) -> dict[str, Any]:
    return {u["path"]: u["val"] for n in resp["notification"] for u in n["update"]}


def test_capabilities_per_dialect(mixed_lab: Lab) -> None:
    for switch, model in ((OC, "openconfig-qos-ext"), (ARISTA, "arista-intf-augments"),
                          (SONIC, "sonic-db")):
        with client(mixed_lab, switch) as gc:
            caps = gc.capabilities()
        assert caps["gnmi_version"] == "0.8.0"
        assert set(caps["supported_encodings"]) == {"json", "json_ietf", "proto"}
        assert model in [m["name"] for m in caps["supported_models"]]


def test_get_openconfig_counters_as_json_tree_and_proto_leaves(mixed_lab: Lab) -> None:
    with client(mixed_lab, OC) as gc:
        before = mixed_lab.sim_time()
        tree = gc.get(path=["/interfaces/interface[name=Ethernet1]/state/counters"],
                      encoding="json_ietf")
        after = mixed_lab.sim_time()
        leaf = gc.get(path=["/interfaces/interface[name=Ethernet1]/state/counters/in-octets"],
                      encoding="proto")
        wild = gc.get(path=["/qos/interfaces/interface[interface-id=*]/output/queues/"
                            "queue[name=3]/state/transmit-octets"], encoding="proto")
        pfc = gc.get(path=["/qos/interfaces/interface[interface-id=Ethernet1]/pfc/pfc-priorities/"
                           "pfc-priority[dot1p=3]/state/statistics"], encoding="json_ietf")
        every = gc.get(path=["/interfaces/interface[name=*]/state/counters/in-octets"],
                       encoding="proto")
    assert sum(_updates(every).values()) > 0
    counters = _updates(tree)["interfaces/interface[name=Ethernet1]/state/counters"]
    assert isinstance(counters["in-octets"], str) and int(counters["in-octets"]) >= 0  # RFC 7951
    assert set(counters) >= {"in-octets", "out-octets", "in-pkts", "in-fcs-errors",
                             "carrier-transitions", "in-discards", "out-errors"}
    value = _updates(leaf)["interfaces/interface[name=Ethernet1]/state/counters/in-octets"]
    assert isinstance(value, int) and value >= int(counters["in-octets"])
    assert len(_updates(wild)) == 4       # spine1 has one port per leaf
    assert set(_updates(pfc).popitem()[1]) == {"pause-frames-rx", "pause-frames-tx"}
    # stamped with the simulated time of the snapshot served (published every 0.1 s)
    sim_s = (tree["notification"][0]["timestamp"] - mixed_lab.epoch_ns) / 1e9
    assert before - 0.1 - 1e-6 <= sim_s <= after + 1e-6


def test_get_container_returns_module_qualified_tree(mixed_lab: Lab) -> None:
    with client(mixed_lab, OC) as gc:
        resp = gc.get(path=["/interfaces"], encoding="json_ietf")
    body = resp["notification"][0]["update"][0]["val"]
    interfaces = body["openconfig-interfaces:interface"]
    assert [i["name"] for i in interfaces] == [f"Ethernet{k}" for k in range(1, 5)]
    first = interfaces[0]
    assert first["state"]["oper-status"] == "UP" and first["config"]["enabled"] is True
    assert first["ethernet"]["state"]["port-speed"] == "openconfig-if-ethernet:SPEED_400GB"


def test_arista_pfc_and_instant_queue(mixed_lab: Lab) -> None:
    with client(mixed_lab, ARISTA) as gc:
        pfc = gc.get(path=["/interfaces/interface[name=Ethernet1]/ethernet/pfc/priorities/"
                           "priority[index=3]/state"], encoding="proto")
        q = gc.get(path=["/qos/interfaces/interface[interface-id=Ethernet1]/output/queues/"
                         "queue[name=3]/state/instant-queue-len"], encoding="proto")
        with pytest.raises(gNMIException):   # not this dialect's PFC path
            gc.get(path=["/qos/interfaces/interface[interface-id=Ethernet1]/pfc"],
                   encoding="proto")
    leaves = {p.rsplit("/", 1)[1] for p in _updates(pfc)}
    assert {"in-frames", "out-frames", "pfc-on-total-rx-time", "index"} <= leaves
    assert isinstance(next(iter(_updates(q).values())), int)


def test_sonic_db_paths(mixed_lab: Lab) -> None:
    with client(mixed_lab, SONIC) as gc:
        ports = gc.get(path=["COUNTERS/Ethernet*"], target="COUNTERS_DB", encoding="json_ietf")
        queues = gc.get(path=["COUNTERS/Ethernet*/Queues"], target="COUNTERS_DB",
                        encoding="json_ietf")
        one = gc.get(path=["COUNTERS/Ethernet1"], target="COUNTERS_DB", encoding="json_ietf")
        field = gc.get(path=["COUNTERS/Ethernet1/SAI_PORT_STAT_IF_IN_OCTETS"],
                       target="COUNTERS_DB", encoding="json_ietf")
        status = gc.get(path=["PORT_TABLE/Ethernet*"], target="APPL_DB", encoding="json_ietf")
        oc = gc.get(path=["/interfaces/interface[name=Ethernet1]/state/oper-status"],
                    encoding="json_ietf")
        with pytest.raises(gNMIException):   # SONiC serves counters from the DBs only
            gc.get(path=["/interfaces/interface[name=Ethernet1]/state/counters"])
    by_port = next(iter(_updates(ports).values()))
    assert sorted(by_port) == sorted(f"Ethernet{k}" for k in range(1, 5))
    e1 = by_port["Ethernet1"]
    assert int(e1["SAI_PORT_STAT_IF_IN_OCTETS"]) > 0
    assert {"SAI_PORT_STAT_PFC_3_RX_PKTS", "SAI_PORT_STAT_PFC_3_TX_PAUSE_DURATION_US",
            "SAI_PORT_STAT_ETHER_STATS_CRC_ALIGN_ERRORS"} <= set(e1)
    q = next(iter(_updates(queues).values()))
    assert "Ethernet2:3" in q and "SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS" in q["Ethernet2:3"]
    assert "SAI_PORT_STAT_IF_OUT_OCTETS" in next(iter(_updates(one).values()))
    assert int(next(iter(_updates(field).values()))) > 0
    st = next(iter(_updates(status).values()))
    assert st["Ethernet1"]["oper_status"] == "up" and "flap_count" in st["Ethernet1"]
    assert next(iter(_updates(oc).values())) == "UP"


def test_unknown_path_and_bad_credentials_are_refused(mixed_lab: Lab) -> None:
    with client(mixed_lab, OC) as gc, pytest.raises(gNMIException):
        gc.get(path=["/system/config/hostname"])
    with pytest.raises(gNMIException), client(mixed_lab, OC, password="wrong") as gc:
        gc.capabilities()


def _stream(gc: gNMIclient, path: str, mode: str = "sample", **extra: Any) -> Any:
    sub: dict[str, Any] = {"path": path, "mode": mode}
    if mode == "sample":
        sub["sample_interval"] = 1_000_000_000
    return gc.subscribe2(subscribe={"mode": "stream", "encoding": "proto",
                                    "subscription": [sub], **extra})


def test_stream_sample_every_simulated_second_with_growing_counters(mixed_lab: Lab) -> None:
    path = "/interfaces/interface[name=Ethernet1]/state/counters/out-octets"
    with client(mixed_lab, OC) as gc:
        sub = _stream(gc, path)
        first = sub.get_update(timeout=10)
        assert first.get("sync_response") is True
        samples = [sub.get_update(timeout=10)["update"] for _ in range(3)]
        sub.close()
    stamps = [s["timestamp"] for s in samples]
    values = [s["update"][0]["val"] for s in samples]
    gaps = [(b - a) / 1e9 for a, b in itertools.pairwise(stamps)]
    assert gaps == pytest.approx([1.0, 1.0], abs=0.11)     # one simulated second apart
    assert values[0] < values[1] < values[2]


def test_once_and_poll(mixed_lab: Lab) -> None:
    path = "/interfaces/interface[name=Ethernet2]/state/counters/in-octets"
    with client(mixed_lab, OC) as gc:
        once = gc.subscribe2(subscribe={"mode": "once", "encoding": "proto",
                                        "subscription": [{"path": path}]})
        items = list(once)
        assert items[-1].get("sync_response") is True
        assert items[0]["update"]["update"][0]["val"] > 0
        poll = gc.subscribe2(subscribe={"mode": "poll", "encoding": "proto",
                                        "subscription": [{"path": path}]})
        a = poll.get_update(timeout=10)["update"]
        mixed_lab.wait_until(mixed_lab.sim_time() + 1.0, timeout=30)
        b = poll.get_update(timeout=10)["update"]
        poll.close()
    assert b["timestamp"] > a["timestamp"]
    assert b["update"][0]["val"] > a["update"][0]["val"]


def test_set_disables_a_port_in_the_simulation_and_on_change_reports_it(mixed_lab: Lab) -> None:
    status = "/interfaces/interface[name=Ethernet2]/state/oper-status"
    with client(mixed_lab, ARISTA) as gc, client(mixed_lab, OC) as spine:
        sub = _stream(gc, status, mode="on_change")
        assert sub.get_update(timeout=10)["update"]["update"][0]["val"] == "UP"
        resp = gc.set(update=[("/interfaces/interface[name=Ethernet2]/config/enabled", False)],
                      encoding="json_ietf")
        assert resp["response"][0]["op"] == "UPDATE"
        change = sub.get_update(timeout=10)["update"]["update"][0]
        assert change["val"] == "DOWN"
        admin = gc.get(path=["/interfaces/interface[name=Ethernet2]/state/admin-status"],
                       encoding="proto")
        assert next(iter(_updates(admin).values())) == "DOWN"
        # leaf1:Ethernet2 faces host2; leaf1:Ethernet3 is the uplink to spine1:Ethernet1
        gc.set(update=[("/interfaces/interface[name=Ethernet3]/config",
                        {"openconfig-interfaces:enabled": False})], encoding="json_ietf")
        far = spine.get(path=["/interfaces/interface[name=Ethernet1]/state"], encoding="proto")
        assert _updates(far)["interfaces/interface[name=Ethernet1]/state/oper-status"] == "DOWN"
        assert _updates(far)["interfaces/interface[name=Ethernet1]/state/admin-status"] == "UP"
        gc.set(update=[("/interfaces/interface[name=Ethernet2]/config/enabled", True),
                       ("/interfaces/interface[name=Ethernet3]/config/enabled", True)],
               encoding="json_ietf")
        assert sub.get_update(timeout=10)["update"]["update"][0]["val"] == "UP"
        sub.close()
        with pytest.raises(gNMIException):
            gc.set(update=[("/interfaces/interface[name=Ethernet99]/config/enabled", False)])
        with pytest.raises(gNMIException):
            gc.set(update=[("/system/config/hostname", "x")])


def test_sonic_set_through_config_db_and_stream(mixed_lab: Lab) -> None:
    with client(mixed_lab, SONIC) as gc:
        sub = gc.subscribe2(subscribe={"mode": "stream", "encoding": "json_ietf",
                                       "subscription": [{"path": "COUNTERS/Ethernet*",
                                                         "mode": "sample",
                                                         "sample_interval": 1_000_000_000}]},
                            target="COUNTERS_DB")
        sub.get_update(timeout=10)
        sample = sub.get_update(timeout=10)["update"]["update"][0]["val"]
        sub.close()
        assert "SAI_PORT_STAT_IF_OUT_OCTETS" in sample["Ethernet3"]
        gc.set(update=[("PORT/Ethernet4/admin_status", '"down"')], target="CONFIG_DB")
        st = gc.get(path=["PORT_TABLE/Ethernet4"], target="APPL_DB", encoding="json_ietf")
        assert next(iter(_updates(st).values()))["admin_status"] == "down"
        gc.set(update=[("PORT/Ethernet4", {"admin_status": "up"})], target="CONFIG_DB")
        st = gc.get(path=["PORT_TABLE/Ethernet4"], target="APPL_DB", encoding="json_ietf")
        assert next(iter(_updates(st).values()))["oper_status"] == "up"


@pytest.fixture(scope="module")
def tls_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    lab = Lab(make_scenario(duration_s=3600, fabric={"spines": 1, "leaves": 1,
                                                     "hosts_per_leaf": 2}),
              speed=20.0, out_dir=tmp_path_factory.mktemp("tls"), tls="mtls")
    lab.start()
    yield lab
    lab.stop()


def test_mutual_tls(tls_lab: Lab) -> None:
    entry = tls_lab.agents()["switches"][0]
    tls = entry["gnmi"]["tls"]
    assert all(Path(tls[k]).exists() for k in ("ca", "cert", "key"))
    host, port = entry["gnmi"]["address"].split(":")
    with gNMIclient(target=(host, int(port)), username="admin", password="admin",
                    path_root=tls["ca"], path_cert=tls["cert"], path_key=tls["key"]) as gc:
        resp = gc.get(path=["/interfaces/interface[name=Ethernet1]/state/oper-status"])
    assert next(iter(_updates(resp).values())) == "UP"
    refused = (gNMIException, grpc.FutureTimeoutError)
    with pytest.raises(refused), gNMIclient(   # a client without a certificate is refused
            target=(host, int(port)), username="admin", password="admin",
            path_cert=tls["ca"], gnmi_timeout=3) as gc:
        gc.capabilities()
    doc = json.loads((tls_lab.out_dir / "agents.json").read_text())
    assert doc["switches"][0]["gnmi"]["tls"] == tls


def test_server_only_tls(tmp_path: Path) -> None:
    sc = make_scenario(duration_s=3600, fabric={"spines": 1, "leaves": 1, "hosts_per_leaf": 2})
    with Lab(sc, speed=20.0, out_dir=tmp_path, tls="tls") as lab:
        entry = lab.agents()["switches"][0]
        host, port = entry["gnmi"]["address"].split(":")
        # pygnmi takes the CA as path_cert when it presents no certificate of its own
        with gNMIclient(target=(host, int(port)), username="admin", password="admin",
                        path_cert=entry["gnmi"]["tls"]["ca"]) as gc:
            caps = gc.capabilities()
        assert caps["gnmi_version"] == "0.8.0"
