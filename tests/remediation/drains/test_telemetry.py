"""The drain's telemetry in columns: status for every port, counters for watched ports only, error
totals through the rate rule (a wrap unwrapped, the counts since a restart kept), and whole-fabric
batches in one call."""

from __future__ import annotations

from pipeline.metrics import metric_id
from pipeline.model import FLAG_COUNTER32, FLAG_RESET, BatchBuilder, SampleBatch
from pipeline.topology.model import Port
from remediation.drains.telemetry import DOWN, UP, LinkTelemetry

NS = 1_000_000_000
A, B = Port("leaf1", "Ethernet1"), Port("spine1", "Ethernet3")


def poll(t: float, rows: list[tuple[Port, str, float, int]]) -> SampleBatch:
    b = BatchBuilder()
    for port, metric, value, flags in rows:
        b.add(round(t * NS), port.device, port.name, metric_id(metric), -1, value, flags)
    return b.build()


def test_error_totals_survive_wraps_and_restarts() -> None:
    tel = LinkTelemetry()
    tel.watch([A])
    c32 = FLAG_COUNTER32
    for t, value, flags in ((1, 2**32 - 10, c32), (2, 5, c32),  # wrapped: +15
                            (3, 25, c32),  # +20
                            (4, 7, c32 | FLAG_RESET),  # restarted: the 7 since count
                            (5, 9, c32)):  # +2
        tel.observe(poll(t, [(A, "if_in_fcs_errors", value, flags)]))
    assert tel.error_total(A) == 15 + 20 + 7 + 2


def test_status_for_every_port_counters_only_for_watched_ones() -> None:
    tel = LinkTelemetry()
    tel.watch([A])
    for t in (1, 2):
        tel.observe(poll(t, [(A, "if_oper_status", UP, 0), (B, "if_oper_status", DOWN, 0),
                             (A, "if_out_octets", t * 1e9, 0), (B, "if_out_octets", t * 2e9, 0),
                             (A, "if_in_fcs_errors", 10.0 * t, 0),
                             (B, "if_in_fcs_errors", 10.0 * t, 0)]))
    assert tel.status(A) == (UP, 0) and tel.status(B) == (DOWN, 0)
    assert tel.down_ports() == {B}
    assert tel.gbps(A) == (2 * NS, 1e9 * 8 / 1e9) and tel.gbps(B) is None
    assert tel.error_total(A) == 10.0 and tel.error_total(B) == 0.0
    assert tel.samples(A) == (2, 2 * NS)
    # an older status sample changes nothing once a newer one is known
    tel.observe(poll(1.5, [(A, "if_oper_status", DOWN, 0)]))
    assert tel.status(A) == (UP, 0)


def test_a_whole_fabric_batch_is_one_call() -> None:
    tel = LinkTelemetry()
    ports = [Port(f"leaf{i // 48}", f"Ethernet{i % 48}") for i in range(960)]
    tel.watch(ports[::2])
    for t in (1, 2, 3):
        tel.observe(poll(t, [(p, "if_in_octets", t * 1e8 * (i + 1), 0)
                             for i, p in enumerate(ports)]
                         + [(p, "if_oper_status", UP, 0) for p in ports]))
    assert all(tel.gbps(p) == (3 * NS, 1e8 * (i + 1) * 8 / 1e9)
               for i, p in enumerate(ports) if i % 2 == 0)
    assert all(tel.gbps(p) is None for p in ports[1::2])
    assert not tel.down_ports()
