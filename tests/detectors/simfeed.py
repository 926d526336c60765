"""Feed the detection chain straight from the lab's simulation, without agents or collectors.

For detector tests and calibration: the lab's :class:`~lab.sim.simulation.Simulation` is stepped in
process and, every sample interval, each switch's counters become one ``SampleBatch`` holding only
the metrics its vendor profile serves (``docs/telemetry-dialects.md``). The real path (agents,
collectors, bus) is exercised by the end-to-end tests; this is the fast inner loop.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from lab import counters as lab_counters
from lab.inventory import plan_agents
from lab.scenario.spec import Scenario
from lab.sim.simulation import Simulation
from pipeline.metrics import metric_id
from pipeline.model import FLAG_COUNTER32, Alert, BatchBuilder, SampleBatch

EPOCH_NS = 1_700_000_000 * 10**9

_PORT_FIELD = {
    "if_in_octets": "P_IN_OCTETS", "if_out_octets": "P_OUT_OCTETS", "if_in_pkts": "P_IN_PKTS",
    "if_out_pkts": "P_OUT_PKTS", "if_in_errors": "P_IN_ERRORS", "if_out_errors": "P_OUT_ERRORS",
    "if_in_discards": "P_IN_DISCARDS", "if_out_discards": "P_OUT_DISCARDS",
    "if_in_fcs_errors": "P_IN_FCS", "if_in_symbol_errors": "P_IN_SYMBOL",
    "fec_corrected_blocks": "P_FEC_CORR", "fec_uncorrectable_blocks": "P_FEC_UNCORR",
    "if_carrier_transitions": "P_CARRIER", "if_oper_status": "P_OPER",
    "if_admin_status": "P_ADMIN", "if_last_change": "P_LAST_CHANGE", "if_speed": "P_SPEED",
}
_PRIO_FIELD = {
    "pfc_rx_frames": "Q_PFC_RX", "pfc_tx_frames": "Q_PFC_TX", "pfc_rx_pause_us": "Q_PFC_RX_US",
    "pfc_tx_pause_us": "Q_PFC_TX_US", "queue_tx_pkts": "Q_TX_PKTS",
    "queue_tx_octets": "Q_TX_OCTETS", "queue_dropped_pkts": "Q_DROPPED",
    "queue_ecn_marked_pkts": "Q_ECN", "queue_occupancy_bytes": "Q_OCCUPANCY",
    "queue_watermark_bytes": "Q_WATERMARK",
}
#: the lossless buffer and ECN thresholds a gNMI switch serves as configuration (the
#: ``gnmi_buffer_config`` collector reads them every ``CONFIG_EVERY`` intervals); SNMP serves none
_CONFIG_FIELD = {"pfc_xoff_bytes": "D_XOFF", "pfc_xon_bytes": "D_XON",
                 "pfc_headroom_bytes": "D_HEADROOM", "ecn_kmin_bytes": "D_ECN_KMIN",
                 "ecn_kmax_bytes": "D_ECN_KMAX"}
CONFIG_EVERY = 1
_PORT = {m: getattr(lab_counters, f) for m, f in _PORT_FIELD.items()}
_PRIO = {m: getattr(lab_counters, f) for m, f in _PRIO_FIELD.items()}
_OC_PORT = ("if_in_octets", "if_out_octets", "if_in_pkts", "if_out_pkts", "if_in_errors",
            "if_out_errors", "if_in_discards", "if_out_discards", "if_in_fcs_errors",
            "if_carrier_transitions", "if_oper_status", "if_admin_status", "if_in_symbol_errors",
            "fec_corrected_blocks", "fec_uncorrectable_blocks")
_OC_PRIO = ("queue_tx_pkts", "queue_tx_octets", "queue_dropped_pkts", "queue_ecn_marked_pkts",
            "queue_watermark_bytes", "pfc_rx_frames", "pfc_tx_frames")
PROFILES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "openconfig": (_OC_PORT, _OC_PRIO),
    "arista": (_OC_PORT, (*_OC_PRIO, "pfc_rx_pause_us", "queue_occupancy_bytes")),
    "sonic": (_OC_PORT, (*_OC_PRIO, "pfc_rx_pause_us", "pfc_tx_pause_us",
                         "queue_occupancy_bytes")),
    "snmp": (("if_in_octets", "if_out_octets", "if_in_pkts", "if_out_pkts", "if_speed",
              "if_admin_status", "if_oper_status", "if_last_change", "if_in_discards",
              "if_in_errors", "if_out_discards", "if_out_errors", "if_in_fcs_errors",
              "if_in_symbol_errors"),
             ("pfc_tx_frames", "pfc_rx_frames", "pfc_rx_pause_us", "pfc_tx_pause_us",
              "queue_tx_pkts", "queue_tx_octets", "queue_dropped_pkts")),
}
_COUNTER32 = {"if_in_discards", "if_in_errors", "if_out_discards", "if_out_errors"}


@dataclass
class SimFeed:
    scenario: Scenario
    profiles: dict[str, str] = field(default_factory=dict)
    #: per switch, when in each interval it is sampled (a share of the interval, rounded to the
    #: lab's statistics tick): on the real path every agent keeps the phase its session started
    #: with, so switches are sampled at different moments; none given, all at the boundary
    phases: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.sim = Simulation(self.scenario)
        # the lab's own assignment of agents and dialects, so a switch speaks here what it
        # speaks on the real path
        for plan in plan_agents(self.scenario):
            self.profiles.setdefault(plan.switch, plan.profile)

    def config(self, t: float, only: tuple[str, ...] = ()) -> list[SampleBatch]:
        """The buffer configuration every gNMI switch (or those ``only``) serves at ``t``
        (device-level rows)."""
        w = self.sim.wiring
        dev = self.sim.counters.device
        ts = EPOCH_NS + round(t * 1e9)
        out = []
        lossless = self.sim.buffers.lossless
        for sw in only or w.switches:
            if self.profiles[sw] == "snmp":
                continue
            d = w.device_index(sw)
            b = BatchBuilder()
            for metric, fld in _CONFIG_FIELD.items():
                for prio in lossless:
                    b.add(ts, sw, "", metric_id(metric), prio,
                          float(dev[d, getattr(lab_counters, fld)]))
            out.append(b.build())
        return out

    def batches(self, t: float, only: tuple[str, ...] = ()) -> list[SampleBatch]:
        """One batch per switch (or per switch of ``only``) from the counters at simulated time
        ``t`` (built in columns)."""
        w = self.sim.wiring
        c = self.sim.counters
        ts = EPOCH_NS + round(t * 1e9)
        out = []
        for d, sw in enumerate(w.switches):
            if only and sw not in only:
                continue
            profile = self.profiles[sw]
            port_metrics, prio_metrics = PROFILES[profile]
            ports = w.switch_ports[d]
            names = tuple(w.port_name[p] for p in ports.tolist())
            n = ports.size
            cols: dict[str, list[np.ndarray]] = {k: [] for k in
                                                 ("port", "metric", "qual", "value", "flags")}
            for m in port_metrics:
                v = c.port[ports, _PORT[m]].astype(np.float64)
                flags = np.zeros(n, np.uint8)
                if m not in ("if_oper_status", "if_admin_status", "if_speed", "if_last_change"):
                    v = np.floor(v)
                    if profile == "snmp" and m in _COUNTER32:
                        v = np.mod(v, 2.0**32)
                        flags[:] = FLAG_COUNTER32
                cols["port"].append(np.arange(n))
                cols["metric"].append(np.full(n, metric_id(m)))
                cols["qual"].append(np.full(n, -1))
                cols["value"].append(v)
                cols["flags"].append(flags)
            for m in prio_metrics:
                v = c.prio[ports, :, _PRIO[m]].astype(np.float64).ravel()
                if m not in ("queue_occupancy_bytes", "queue_watermark_bytes"):
                    v = np.floor(v)
                cols["port"].append(np.repeat(np.arange(n), 8))
                cols["metric"].append(np.full(n * 8, metric_id(m)))
                cols["qual"].append(np.tile(np.arange(8), n))
                cols["value"].append(v)
                cols["flags"].append(np.zeros(n * 8, np.uint8))
            rows = sum(a.size for a in cols["value"])
            out.append(SampleBatch(
                np.full(rows, ts, np.int64), np.zeros(rows, np.int32),
                np.concatenate(cols["port"]).astype(np.int32),
                np.concatenate(cols["metric"]).astype(np.uint16),
                np.concatenate(cols["qual"]).astype(np.int16),
                np.concatenate(cols["value"]).astype(np.float64),
                np.concatenate(cols["flags"]).astype(np.uint8), (sw,), names))
        return out

    def run(self, until_s: float | None = None) -> Iterator[tuple[float, list[SampleBatch]]]:
        """Yield (t, batches) every sample interval, stepping the simulation in between."""
        end = self.scenario.duration_s if until_s is None else until_s
        if self.phases:
            yield from self._phased(end)
            return
        k = 0
        while True:
            t = k * self.scenario.sample_interval_s
            if t > end + 1e-9:
                return
            self.sim.run_until(t)
            yield t, self.batches(t) + (self.config(t) if k % CONFIG_EVERY == 0 else [])
            k += 1

    def _phased(self, end: float) -> Iterator[tuple[float, list[SampleBatch]]]:
        """Each switch at its own phase of the interval, in time order."""
        interval = self.scenario.sample_interval_s
        tick = 0.1
        offset = {sw: round(self.phases.get(sw, 0.0) * interval / tick) * tick % interval
                  for sw in self.sim.wiring.switches}
        k = 0
        while k * interval <= end + 1e-9:
            at: dict[float, list[str]] = {}
            for sw, off in offset.items():
                at.setdefault(round(k * interval + off, 9), []).append(sw)
            for t in sorted(at):
                if t > end + 1e-9:
                    return
                self.sim.run_until(t)
                only = tuple(at[t])
                yield t, self.batches(t, only) + (self.config(t, only)
                                                  if k % CONFIG_EVERY == 0 else [])
            k += 1


def run_chain(feed: SimFeed, chain: object, until_s: float | None = None) -> list[Alert]:
    """Every alert state change the chain publishes over the run."""
    out: list[Alert] = []
    for _t, batches in feed.run(until_s):
        out.extend(chain.observe(batches))  # type: ignore[attr-defined]
    return out
