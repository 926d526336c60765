"""The neighbors topic's codec: reports round-trip; a bad line is reported by number and the
others kept; nothing but DecodeError comes out of whatever a value holds."""

from __future__ import annotations

import pytest

from pipeline.errors import DecodeError
from pipeline.topology.neighbors import LocalPort, NeighborReport, RemoteEnd
from pipeline.wire.neighbors import decode_reports, encode_reports, report_key


def _report(device: str = "leaf1") -> NeighborReport:
    seen = RemoteEnd(chassis_id="02:72:77:00:00:00", chassis_id_type="MAC_ADDRESS",
                     port_id="etp3", port_id_type="LOCAL", system_name="spine1")
    return NeighborReport(device=device, ts_ns=1_700_000_000_000_000_000,
                          chassis_id="02:72:77:00:00:02", system_name=device, source="snmp",
                          ports=(LocalPort(name="Ethernet3", port_id="Ethernet3", oper_up=True,
                                           speed_bps=4e11, neighbors=(seen,)),
                                 LocalPort(name="Ethernet4", oper_up=False)))


def test_reports_round_trip_keyed_by_device() -> None:
    reports = [_report("leaf1"), _report("spine2")]
    decoded = decode_reports(encode_reports(reports))
    assert decoded.items == reports and decoded.bad == ()
    assert report_key(reports[1]) == b"spine2"


def test_a_bad_line_is_named_and_the_others_kept() -> None:
    good = encode_reports([_report()])
    value = b"\n".join([good, b"{not json", b'{"device": "x"}', b"[1]", b"", good])
    decoded = decode_reports(value)
    assert len(decoded.items) == 2
    assert [b.index for b in decoded.bad] == [1, 2, 3]
    assert "ts_ns" in decoded.bad[1].reason


@pytest.mark.parametrize("value", [None, b"", b"\n\n", b"\xff\xfe"])
def test_nothing_readable_is_a_decode_error(value: bytes | None) -> None:
    if value == b"\xff\xfe":
        assert decode_reports(value).items == []       # one unreadable line, reported
        return
    with pytest.raises(DecodeError):
        decode_reports(value)
