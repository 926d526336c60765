"""The dashboard's port drill-down: one port's PFC pauses per priority, pause time, FCS and
symbol errors, ECN marks, utilisation and queue depth, read in one ``/v1/series`` request."""

from __future__ import annotations

from dataclasses import dataclass

import altair as alt
import pandas as pd
import streamlit as st

from ui.dashboard.reads import Reads
from ui.query.views import PortHealth, SeriesResult, SeriesSet

RANGES = ("5m", "15m", "1h", "6h", "24h", "7d")
#: about 100-180 points per chart (a chart is ~450 px wide), within the API's point budget;
#: whole minutes from 6h on, so the API can read the rollups
STEPS = {"5m": "2s", "15m": "10s", "1h": "30s", "6h": "2m", "24h": "10m", "7d": "1h"}


@dataclass(frozen=True)
class Panel:
    title: str
    unit: str
    metrics: tuple[str, ...]
    scale: float = 1.0


PANELS: tuple[Panel, ...] = (
    Panel("PFC pause frames (per priority)", "frames/s", ("pfc_rx_frames", "pfc_tx_frames")),
    Panel("Time paused by PFC", "% of time", ("pfc_rx_pause_us", "pfc_tx_pause_us"), 1e-4),
    Panel("FCS / symbol / input errors", "per s",
          ("if_in_fcs_errors", "if_in_symbol_errors", "if_in_errors", "if_in_discards")),
    Panel("ECN-marked packets (per queue)", "packets/s", ("queue_ecn_marked_pkts",)),
    Panel("Throughput", "Gbit/s", ("if_in_octets", "if_out_octets"), 8e-9),
    Panel("Queue depth (max per step)", "bytes", ("queue_occupancy_bytes",
                                                   "queue_watermark_bytes")),
)
_SHORT = {"pfc_rx_frames": "rx", "pfc_tx_frames": "tx", "pfc_rx_pause_us": "rx paused",
          "pfc_tx_pause_us": "tx pausing", "if_in_octets": "in", "if_out_octets": "out",
          "queue_occupancy_bytes": "occupancy", "queue_watermark_bytes": "watermark",
          "queue_ecn_marked_pkts": "ecn marked", "if_in_fcs_errors": "fcs",
          "if_in_symbol_errors": "symbol", "if_in_errors": "input errors",
          "if_in_discards": "input discards"}


def port_choices(ports: list[PortHealth]) -> dict[str, str]:
    """A switch's connected ports (in port order, as ``/v1/fabric?switch=`` lists them) → a
    label naming what they reach."""
    found: dict[str, str] = {}
    for p in ports:
        name = p.port.split(":", 1)[1]
        found[name] = f"{name} → {p.peer}" + (f" ({p.entity})" if p.entity != p.peer else "")
    return found


def frame(results: list[SeriesResult], panel: Panel) -> pd.DataFrame:
    rows: list[dict[str, object]] = []
    for res in results:
        if res.metric not in panel.metrics:
            continue
        name = _SHORT.get(res.metric, res.metric.removeprefix("if_in_").replace("_", " "))
        prefix = "p" if res.qualifier == "priority" else "q"
        for s in res.series:
            label = name if s.qual is None else f"{name} {prefix}{s.qual}"
            rows.extend({"time": pd.Timestamp(t, unit="ns", tz="UTC"), "series": label,
                         "value": None if v is None else v * panel.scale}
                        for t, v in s.points)
    return pd.DataFrame(rows, columns=["time", "series", "value"])


def chart(data: pd.DataFrame, panel: Panel) -> alt.Chart:
    lines = alt.Chart(data, title=panel.title).mark_line(point=False, strokeWidth=2)
    made: alt.Chart = lines.encode(
        x=alt.X("time:T", title=None, axis=alt.Axis(format="%H:%M:%S")),
        y=alt.Y("value:Q", title=panel.unit),
        color=alt.Color("series:N", legend=alt.Legend(orient="bottom", title=None)),
        tooltip=[alt.Tooltip("time:T", format="%H:%M:%S"), "series:N",
                 alt.Tooltip("value:Q", format=",.3~f")],
    ).properties(height=170)
    return made


def drill_down(reads: Reads, device: str, port: str, label: str,
               span: str) -> SeriesSet | None:
    # one request: counters come back as rates, the queue-depth gauges as their max per step
    answer = reads.series(device, port, [m for p in PANELS for m in p.metrics],
                           start=f"now-{span}", step=STEPS.get(span), agg="max")
    results = answer.results
    points = sum(1 for r in results for s in r.series for _, v in s.points if v is not None)
    st.caption(f"{device}:{label} — last {span} of fabric time, step "
               f"{results[0].step_ns / 1e9:g}s, from {results[0].source}")
    if points == 0:
        st.warning(f"No data for {device}:{port} in the last {span}: the switch may not report "
                   f"this port, or telemetry stopped.")
        return None
    cols = st.columns(2)
    for i, panel in enumerate(PANELS):
        data = frame(results, panel)
        with cols[i % 2]:
            if data["value"].notna().any():
                st.altair_chart(chart(data, panel), width="stretch", height=260)
            else:
                st.caption(f"{panel.title}: not reported by this port")
    return answer
