"""The gNMI decode path on constructed SubscribeResponses, for every profile's value forms."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from pygnmi.spec.v080 import gnmi_pb2 as pb

from collectors.clocks import DeviceClock
from collectors.gnmi.decode import GnmiDecoder
from collectors.gnmi.mapping import PathMapper
from collectors.health import ErrorTally, TargetHealth
from collectors.profile import GnmiProfile, load_profile
from pipeline.wire.samples import decode_batch, encode_batch
from tests.collectors.gnmi_target import notification

T0 = 1_800_000_000_000_000_000


def decoder(profile: str, device: str = "sw1") -> GnmiDecoder:
    loaded = load_profile(profile)
    assert isinstance(loaded, GnmiProfile)
    health = TargetHealth(device, "gnmi", "x:1", profile, 1.0, DeviceClock())
    return GnmiDecoder(device, PathMapper(loaded), health, ErrorTally("test"))


def rows(dec: GnmiDecoder) -> list[tuple[Any, ...]]:
    batch = dec.take()
    assert batch is not None
    batch = decode_batch(encode_batch(batch))  # what the bus carries, checked by the codec
    return list(batch.rows())


def j(value: Any) -> pb.TypedValue:
    return pb.TypedValue(json_ietf_val=json.dumps(value).encode())


def test_openconfig_proto_and_json_ietf_forms() -> None:
    dec = decoder("openconfig")
    base = "/interfaces/interface[name=Ethernet3]"
    dec.feed(notification(T0, [
        (f"{base}/state/counters/in-octets", pb.TypedValue(uint_val=123)),
        (f"{base}/state/counters/out-octets", j("18446744073709551615")),  # 2**64-1 as RFC 7951
        (f"{base}/state/oper-status", pb.TypedValue(string_val="DOWN")),
        (f"{base}/state/admin-status", j("openconfig-interfaces:UP")),
        (f"{base}/ethernet/state/counters/in-symbol-error", pb.TypedValue(int_val=7)),
        ("/qos/interfaces/interface[interface-id=Ethernet3]/output/queues/queue[name=3]/state/"
         "max-queue-len", pb.TypedValue(double_val=4096.0)),
        ("/qos/interfaces/interface[interface-id=Ethernet3]/pfc/pfc-priorities/"
         "pfc-priority[dot1p=5]/state/statistics/pause-frames-rx", j(99)),
        (f"{base}/state/counters/in-unicast-pkts", pb.TypedValue(uint_val=1)),  # ignored sibling
    ]), 0.0)
    got = {(r[2], r[3], r[4]): r[5] for r in rows(dec)}
    assert got == {
        ("Ethernet3", "if_in_octets", -1): 123, ("Ethernet3", "if_out_octets", -1): 2.0**64,
        ("Ethernet3", "if_oper_status", -1): 2, ("Ethernet3", "if_admin_status", -1): 1,
        ("Ethernet3", "if_in_symbol_errors", -1): 7,
        ("Ethernet3", "queue_watermark_bytes", 3): 4096, ("Ethernet3", "pfc_rx_frames", 5): 99,
    }
    assert dec.health.errors == {}


def test_container_json_values_are_expanded() -> None:
    dec = decoder("arista")
    dec.feed(notification(T0, [
        ("/interfaces/interface[name=Ethernet1]/state/counters",
         j({"openconfig-interfaces:in-octets": "10", "out-octets": "20", "in-unicast-pkts": "3"})),
        ("/interfaces/interface[name=Ethernet1]/ethernet/pfc/priorities/priority[index=3]/state",
         j({"in-frames": "4", "out-frames": "5", "pfc-on-total-rx-time": "600", "index": 3})),
    ]), 0.0)
    got = {(r[3], r[4]): r[5] for r in rows(dec)}
    assert got == {("if_in_octets", -1): 10, ("if_out_octets", -1): 20,
                   ("pfc_rx_frames", 3): 4, ("pfc_tx_frames", 3): 5, ("pfc_rx_pause_us", 3): 600}


def test_sonic_database_maps() -> None:
    dec = decoder("sonic")
    counters = {f"Ethernet{p}": {"SAI_PORT_STAT_IF_IN_OCTETS": str(1000 * p),
                                 "SAI_PORT_STAT_PFC_3_RX_PKTS": "7",
                                 "SAI_PORT_STAT_PFC_3_RX_PAUSE_DURATION_US": "250",
                                 "SAI_PORT_STAT_SOMETHING_NEW": "1"} for p in (1, 2)}
    queues = {"Ethernet1:3": {"SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS": "11",
                              "SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES": "8192"}}
    ports = {"Ethernet2": {"oper_status": "down", "admin_status": "up", "flap_count": "3",
                           "speed": "400000", "mtu": "9100"}}
    dec.feed(notification(T0, [("COUNTERS/Ethernet*", j(counters))], origin="",
                          target="COUNTERS_DB"), 0.0)
    dec.feed(notification(T0 + 1, [("COUNTERS/Ethernet*/Queues", j(queues))], origin="",
                          target="COUNTERS_DB"), 0.0)
    dec.feed(notification(T0 + 2, [("PORT_TABLE/Ethernet*", j(ports))], origin="",
                          target="APPL_DB"), 0.0)
    got = {(r[2], r[3], r[4]): r[5] for r in rows(dec)}
    assert got == {
        ("Ethernet1", "if_in_octets", -1): 1000, ("Ethernet2", "if_in_octets", -1): 2000,
        ("Ethernet1", "pfc_rx_frames", 3): 7, ("Ethernet2", "pfc_rx_frames", 3): 7,
        ("Ethernet1", "pfc_rx_pause_us", 3): 250, ("Ethernet2", "pfc_rx_pause_us", 3): 250,
        ("Ethernet1", "queue_ecn_marked_pkts", 3): 11,
        ("Ethernet1", "queue_occupancy_bytes", 3): 8192,
        ("Ethernet2", "if_oper_status", -1): 2, ("Ethernet2", "if_admin_status", -1): 1,
        ("Ethernet2", "if_carrier_transitions", -1): 3, ("Ethernet2", "if_speed", -1): 400e9,
    }
    # a real COUNTERS_DB hash has many SAI stats the catalog does not carry: the profile ignores
    # them rather than counting each one as an unknown path
    assert dec.health.errors == {}
    dec.feed(notification(T0 + 3, [("COUNTERS/Ethernet*/Pfcwd", j({"Ethernet1:3": {"X": "1"}}))],
                          origin="", target="COUNTERS_DB"), 0.0)
    assert dec.health.errors == {"unknown_path": 1}


def test_cumulus_switch_priority_and_queue_paths() -> None:
    dec = decoder("cumulus")
    qos = "/qos/interfaces/interface[interface-id=swp7]"
    dec.feed(notification(T0, [
        (f"{qos}/switch-priority[priority=3]/state/counters/in-pause-pkts", j("12")),
        (f"{qos}/switch-priority[priority=3]/state/out-pause-duration", j("3400")),
        (f"{qos}/switch-priority[priority=3]/state/counters/some-new-leaf", j("1")),
        (f"{qos}/output/queues/queue[name=3]/state/instant-queue-len", j("65536")),
        (f"{qos}/output/queues/queue[name=3]/state/no-buffer-uc-dropped-pkts", j("5")),
        (f"{qos}/output/queues/queue[name=3]/state/wred-dropped-pkts", j("9")),
    ]), 0.0)
    got = {(r[2], r[3], r[4]): r[5] for r in rows(dec)}
    assert got == {("swp7", "pfc_rx_frames", 3): 12, ("swp7", "pfc_tx_pause_us", 3): 3400,
                   ("swp7", "queue_occupancy_bytes", 3): 65536,
                   ("swp7", "queue_dropped_pkts", 3): 5}
    assert dec.health.errors == {}


def test_deletes_drop_expected_series_and_mark_ports_not_present() -> None:
    dec = decoder("openconfig")
    base = "/interfaces/interface[name=Ethernet{}]/state"
    dec.feed(notification(T0, [(f"{base.format(p)}/counters/in-octets", j(str(p)))
                               for p in (1, 2)]
                          + [(f"{base.format(2)}/oper-status", j("UP"))]), 0.0)
    rows(dec)
    assert dec.health.expected == 2  # the two SAMPLE series (oper-status is ON_CHANGE)
    dec.feed(notification(T0 + 5, [], deletes=("/interfaces/interface[name=Ethernet2]",)), 0.0)
    got = rows(dec)
    assert [(r[0], r[2], r[3], r[5]) for r in got] == [
        (T0 + 5, "Ethernet2", "if_oper_status", 6.0)]
    assert dec.health.expected == 1 and dec.health.deletes_total == 1


def test_a_falling_counter_is_passed_through_for_the_rate_rule() -> None:
    dec = decoder("openconfig")
    path = "/interfaces/interface[name=Ethernet{}]/state/counters/in-octets"
    for i, (a, b) in enumerate([(100, 5), (200, 6), (50, 7)]):
        dec.feed(notification(T0 + i, [(path.format(1), j(str(a))), (path.format(2), j(str(b)))]),
                 0.0)
    assert [(r[2], r[5], r[6]) for r in rows(dec)] == [
        ("Ethernet1", 100, 0), ("Ethernet2", 5, 0), ("Ethernet1", 200, 0), ("Ethernet2", 6, 0),
        ("Ethernet1", 50, 0), ("Ethernet2", 7, 0)]


def test_a_reconnected_streams_initial_repeat_of_the_last_interval_is_dropped() -> None:
    """The first update of a new subscription right after an outage would add an interval of a
    fraction of the cadence; status values of the same initial set are the state now, kept."""
    dec = decoder("openconfig")
    counter = "/interfaces/interface[name=Ethernet1]/state/counters/in-octets"
    status = "/interfaces/interface[name=Ethernet1]/state/oper-status"
    s = 1_000_000_000
    dec.begin_session()
    dec.feed(notification(T0, [(counter, j("10"))]), 0.0, initial=True)  # first session: kept
    dec.feed(notification(T0 + s, [(counter, j("20"))]), 1.0)
    dec.begin_session()  # reconnected 0.3 s after the last sample
    dec.feed(notification(T0 + 13 * s // 10, [(counter, j("23")), (status, j("DOWN"))]), 1.3,
             initial=True)
    dec.feed(notification(T0 + 23 * s // 10, [(counter, j("33"))]), 2.3)
    dec.begin_session()  # reconnected a whole interval later: the initial value is news
    dec.feed(notification(T0 + 33 * s // 10 + s, [(counter, j("53"))]), 4.3, initial=True)
    got = [(r[0], r[3], r[5]) for r in rows(dec)]
    assert got == [(T0, "if_in_octets", 10), (T0 + s, "if_in_octets", 20),
                   (T0 + 13 * s // 10, "if_oper_status", 2),
                   (T0 + 23 * s // 10, "if_in_octets", 33),
                   (T0 + 43 * s // 10, "if_in_octets", 53)]
    assert dec.repeats_dropped == 1


def test_shared_mapper_keeps_devices_apart() -> None:
    loaded = load_profile("openconfig")
    assert isinstance(loaded, GnmiProfile)
    mapper = PathMapper(loaded)
    decoders = [GnmiDecoder(name, mapper, TargetHealth(name, "gnmi", "x:1", "openconfig", 1.0,
                                                       DeviceClock()), ErrorTally("t"))
                for name in ("a", "b")]
    path = "/interfaces/interface[name=Ethernet1]/state/counters/in-octets"
    decoders[0].feed(notification(T0, [(path, j("5"))]), 0.0)
    decoders[1].feed(notification(T0, [(path, j("9"))]), 0.0)
    batches = [d.take() for d in decoders]
    assert [b.devices for b in batches if b is not None] == [("a",), ("b",)]
    assert [float(b.value[0]) for b in batches if b is not None] == [5.0, 9.0]


@pytest.mark.parametrize("value", [pb.TypedValue(double_val=float("nan")), j(-5),
                                   j([1, 2]), j(None), pb.TypedValue(leaflist_val={})])
def test_wrong_types_are_dropped_and_counted(value: pb.TypedValue) -> None:
    dec = decoder("openconfig")
    base = "/interfaces/interface[name=Ethernet1]/state/counters"
    dec.feed(notification(T0, [(f"{base}/in-octets", value), (f"{base}/out-octets", j("8"))]),
             0.0)
    got = rows(dec)
    assert [(r[3], r[5]) for r in got] == [("if_out_octets", 8)]
    assert dec.health.errors == {"wrong_type": 1}
    assert np.isfinite([r[5] for r in got]).all()
