"""The metric catalog: codes are wire-stable, names unique."""

from __future__ import annotations

import pytest

from pipeline.errors import ConfigError
from pipeline.metrics import CATALOG, IS_COUNTER, Kind, metric, metric_id

# A metric's position is its wire code: this prefix may only ever grow at the end.
FROZEN_PREFIX = [
    "if_in_octets", "if_out_octets", "if_in_pkts", "if_out_pkts", "if_in_errors",
    "if_out_errors", "if_in_discards", "if_out_discards", "if_in_fcs_errors",
    "if_in_symbol_errors", "if_carrier_transitions", "if_oper_status", "if_admin_status",
    "if_speed", "pfc_rx_frames", "pfc_tx_frames", "pfc_rx_pause_us", "pfc_tx_pause_us",
    "queue_tx_pkts", "queue_tx_octets", "queue_dropped_pkts", "queue_ecn_marked_pkts",
    "queue_occupancy_bytes", "queue_watermark_bytes", "fec_corrected_blocks",
    "fec_uncorrectable_blocks", "collector_up", "collector_expected", "collector_received",
    "collector_errors", "counter_reset", "if_last_change",
]


def test_codes_are_append_only() -> None:
    assert [m.name for m in CATALOG[: len(FROZEN_PREFIX)]] == FROZEN_PREFIX


def test_names_are_unique_and_kinds_consistent() -> None:
    names = [m.name for m in CATALOG]
    assert len(names) == len(set(names))
    for i, m in enumerate(CATALOG):
        assert IS_COUNTER[i] == (m.kind is Kind.COUNTER)
        if m.name.startswith("pfc_"):
            assert m.qualifier == "priority"
        if m.name.startswith("queue_"):
            assert m.qualifier == "queue"


def test_lookup() -> None:
    assert CATALOG[metric_id("pfc_rx_frames")].unit == "frames"
    assert metric("queue_occupancy_bytes").kind is Kind.GAUGE
    with pytest.raises(ConfigError, match="unknown metric"):
        metric_id("pfc_rx_framez")
