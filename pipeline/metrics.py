"""The metric catalog: the canonical names every stage uses, with unit, kind and qualifier.

Collector profiles map vendor paths and OIDs onto these names; detectors, the store and queries
know only these. A metric's position in :data:`CATALOG` is its wire code in a ``SampleBatch``, so
new metrics are appended, never inserted or reordered (a test guards the order).

``qualifier`` says what the sample's ``qual`` column holds: a PFC ``priority`` (0-7), an egress
``queue`` index, or nothing (``-1``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import numpy as np
from numpy.typing import NDArray

from pipeline.errors import ConfigError


class Kind(StrEnum):
    COUNTER = "counter"
    GAUGE = "gauge"


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str
    kind: Kind
    qualifier: str | None
    help: str


_C, _G = Kind.COUNTER, Kind.GAUGE

CATALOG: tuple[Metric, ...] = (
    Metric("if_in_octets", "bytes", _C, None, "octets received"),
    Metric("if_out_octets", "bytes", _C, None, "octets sent"),
    Metric("if_in_pkts", "packets", _C, None, "packets received"),
    Metric("if_out_pkts", "packets", _C, None, "packets sent"),
    Metric("if_in_errors", "packets", _C, None, "inbound packets with errors"),
    Metric("if_out_errors", "packets", _C, None, "outbound packets with errors"),
    Metric("if_in_discards", "packets", _C, None, "inbound packets discarded"),
    Metric("if_out_discards", "packets", _C, None, "outbound packets discarded"),
    Metric("if_in_fcs_errors", "frames", _C, None, "frames received with a bad FCS"),
    Metric("if_in_symbol_errors", "symbols", _C, None, "PCS symbol errors received"),
    Metric("if_carrier_transitions", "transitions", _C, None, "carrier (link state) changes"),
    Metric("if_oper_status", "enum", _G, None, "1 up, 2 down (IF-MIB ifOperStatus values)"),
    Metric("if_admin_status", "enum", _G, None, "1 up, 2 down (IF-MIB ifAdminStatus values)"),
    Metric("if_speed", "bits/s", _G, None, "negotiated port speed"),
    Metric("pfc_rx_frames", "frames", _C, "priority", "PFC pause frames received"),
    Metric("pfc_tx_frames", "frames", _C, "priority", "PFC pause frames sent"),
    Metric("pfc_rx_pause_us", "microseconds", _C, "priority", "time paused by received PFC"),
    Metric("pfc_tx_pause_us", "microseconds", _C, "priority", "time pausing the peer"),
    Metric("queue_tx_pkts", "packets", _C, "queue", "packets sent from an egress queue"),
    Metric("queue_tx_octets", "bytes", _C, "queue", "octets sent from an egress queue"),
    Metric("queue_dropped_pkts", "packets", _C, "queue", "packets dropped at an egress queue"),
    Metric("queue_ecn_marked_pkts", "packets", _C, "queue", "packets ECN-marked (CE) at a queue"),
    Metric("queue_occupancy_bytes", "bytes", _G, "queue", "current egress queue occupancy"),
    Metric("queue_watermark_bytes", "bytes", _G, "queue", "peak queue occupancy since last read"),
    Metric("fec_corrected_blocks", "blocks", _C, None, "FEC blocks corrected"),
    Metric("fec_uncorrectable_blocks", "blocks", _C, None, "FEC blocks not correctable"),
    Metric("collector_up", "bool", _G, None, "1 while the collector's session to a target is up"),
    Metric("collector_expected", "samples", _G, None, "samples a target should send per interval"),
    Metric("collector_received", "samples", _G, None, "samples a target sent in the interval"),
    Metric("collector_errors", "errors", _C, None, "decode or protocol errors from a target"),
    Metric("counter_reset", "bool", _G, None, "1 when the device's counters restarted (reboot)"),
    Metric("if_last_change", "seconds", _G, None,
           "device uptime at the port's last oper-status change (IF-MIB ifLastChange)"),
    # configuration, read on a slow cadence (device-level rows; collectors.gnmi.buffer_config)
    Metric("pfc_xoff_bytes", "bytes", _G, "priority",
           "configured XOFF threshold of the priority's lossless priority group"),
    Metric("pfc_xon_bytes", "bytes", _G, "priority",
           "configured XON threshold of the priority's lossless priority group"),
    Metric("pfc_headroom_bytes", "bytes", _G, "priority",
           "configured headroom of the priority's lossless priority group"),
    Metric("ecn_kmin_bytes", "bytes", _G, "queue", "configured ECN (RED) marking threshold Kmin"),
    Metric("ecn_kmax_bytes", "bytes", _G, "queue", "configured ECN (RED) full-marking Kmax"),
)

METRIC_ID: dict[str, int] = {m.name: i for i, m in enumerate(CATALOG)}

#: ``IS_COUNTER[code]`` is True for counters; index it with a batch's metric codes.
IS_COUNTER: NDArray[np.bool_] = np.array([m.kind is Kind.COUNTER for m in CATALOG], dtype=bool)


def metric_id(name: str) -> int:
    """The wire code of a canonical metric name."""
    try:
        return METRIC_ID[name]
    except KeyError:
        raise ConfigError(f"unknown metric {name!r}; known: {', '.join(METRIC_ID)}") from None


def metric(name: str) -> Metric:
    return CATALOG[metric_id(name)]
