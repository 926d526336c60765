"""Traffic: the scenario's collective patterns and fault-injected senders as RoCE flows.

A *flow* is one RDMA connection between two hosts: a 5-tuple (src IP, dst IP, UDP, a source port
fixed per connection, destination port 4791) and ``qps_per_flow`` queue pairs. NCCL spreads a
flow's messages round-robin over its QPs, so each QP carries an equal share; each (flow, QP) pair is
an *entry* that routing places on a path. Because the UDP source port is fixed per connection, a
5-tuple hash sees one key per flow however many QPs it has, while E-ECMP (hashing the destination
QP too) sees one key per QP: the low-entropy effect the Meta RoCE paper describes.

Patterns (rates are offered at ``load`` x host line rate):

* ``allreduce``: NCCL ring; ranks ordered by (position under the leaf, leaf), so that consecutive
  ranks sit on different leaves and every ring hop crosses the spine tier; rank r sends to r+1.
* ``alltoall``: every host sends to every other, its rate split evenly.
* ``uniform``: every host sends to ``min(4, n-1)`` destinations drawn uniformly from the seed.
* ``incast``: the first listed host receives; every other host sends to it.
* ``none``: nothing.

All RDMA traffic rides priority 3 (lossless, ECN-capable). Offered rates wander slowly (a per-flow
AR(1) factor redrawn every simulated second, a few percent), as real collectives never offer a
perfectly flat rate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from lab.scenario.spec import Scenario
from lab.wiring import FloatArray, IntArray, Wiring
from pipeline.kinds import FAULT_INCAST

ROCE_PRIORITY = 3
ROCE_DPORT = 4791
_JITTER_SIGMA = 0.03
_JITTER_MEMORY = 0.8


@dataclass(frozen=True, eq=False)
class FlowTable:
    src: IntArray          # host index
    dst: IntArray
    prio: IntArray
    bps: FloatArray        # offered bits/s while active
    qps: IntArray
    sport: IntArray
    start_s: FloatArray
    end_s: FloatArray      # inf for the scenario's own traffic
    origin: tuple[str, ...]  # "traffic[0]" or "faults[2]"

    def __len__(self) -> int:
        return len(self.src)


@dataclass(frozen=True, eq=False)
class EntryTable:
    """One row per (flow, queue pair)."""

    flow: IntArray
    qp: IntArray           # 0..qps-1 within its flow
    dst_qpn: IntArray      # the destination QP number (24 bit) E-ECMP hashes on
    src: IntArray
    dst: IntArray
    src_leaf: IntArray
    dst_leaf: IntArray
    prio: IntArray
    share: FloatArray      # fraction of its flow's rate (1 / qps)

    def __len__(self) -> int:
        return len(self.flow)


def host_ip(host: int | IntArray) -> IntArray:
    """IPv4 address (as an integer) of host index ``host``: 10.0.0.0 + index + 1."""
    return np.asarray((10 << 24) + np.asarray(host, dtype=np.int64) + 1, dtype=np.int64)


def ring_order(hosts: list[int], host_leaf: IntArray) -> list[int]:
    """Order ranks so consecutive ranks sit under different leaves where possible."""
    position: dict[int, int] = {}
    seen: dict[int, int] = {}
    for h in hosts:
        leaf = int(host_leaf[h])
        position[h] = seen.get(leaf, 0)
        seen[leaf] = position[h] + 1
    return sorted(hosts, key=lambda h: (position[h], int(host_leaf[h]), h))


def build_flows(scenario: Scenario, wiring: Wiring) -> FlowTable:
    """Every flow the scenario can ever run, fault-injected senders included."""
    host_idx = {name: i for i, name in enumerate(wiring.hosts)}
    host_bps = scenario.fabric.host_gbps * 1e9
    rows: list[tuple[int, int, float, int, float, float, str]] = []
    for ti, spec in enumerate(scenario.traffic):
        hosts = [host_idx[h] for h in spec.hosts]
        rate = spec.load * host_bps
        origin = f"traffic[{ti}]"
        pairs: list[tuple[int, int, float]] = []
        if spec.pattern == "allreduce":
            ring = ring_order(hosts, wiring.host_leaf)
            pairs = [(ring[r], ring[(r + 1) % len(ring)], rate) for r in range(len(ring))]
        elif spec.pattern == "alltoall":
            share = rate / (len(hosts) - 1)
            pairs = [(s, d, share) for s in hosts for d in hosts if s != d]
        elif spec.pattern == "uniform":
            rng = np.random.default_rng([scenario.seed, 11, ti])
            k = min(4, len(hosts) - 1)
            for s in hosts:
                others = [d for d in hosts if d != s]
                for d in rng.choice(others, size=k, replace=False).tolist():
                    pairs.append((s, int(d), rate / k))
        elif spec.pattern == "incast":
            sink = hosts[0]
            pairs = [(s, sink, rate) for s in hosts[1:]]
        rows.extend((s, d, r, spec.qps_per_flow, 0.0, np.inf, origin) for s, d, r in pairs)
    incast_qps = max((t.qps_per_flow for t in scenario.traffic), default=1)
    for fi, fault in enumerate(scenario.faults):
        if fault.kind != FAULT_INCAST:
            continue
        target = host_idx[fault.target]
        rng = np.random.default_rng([scenario.seed, 13, fi])
        others = [h for h in range(len(wiring.hosts)) if h != target]
        fan_in = min(int(fault.params["fan_in"]), len(others))
        senders = sorted(rng.choice(others, size=fan_in, replace=False).tolist())
        end = fault.end_s(scenario.duration_s)
        rows.extend((int(s), target, host_bps, incast_qps, fault.at_s, end, f"faults[{fi}]")
                    for s in senders)
    rng = np.random.default_rng([scenario.seed, 17])
    n = len(rows)
    sport = 49152 + rng.integers(0, 16384, size=n)
    return FlowTable(
        src=np.asarray([r[0] for r in rows], dtype=np.int64),
        dst=np.asarray([r[1] for r in rows], dtype=np.int64),
        prio=np.full(n, ROCE_PRIORITY, dtype=np.int64),
        bps=np.asarray([r[2] for r in rows], dtype=np.float64),
        qps=np.asarray([r[3] for r in rows], dtype=np.int64),
        sport=np.asarray(sport, dtype=np.int64),
        start_s=np.asarray([r[4] for r in rows], dtype=np.float64),
        end_s=np.asarray([r[5] for r in rows], dtype=np.float64),
        origin=tuple(r[6] for r in rows),
    )


def build_entries(flows: FlowTable, wiring: Wiring, seed: int) -> EntryTable:
    flow = np.repeat(np.arange(len(flows), dtype=np.int64), flows.qps)
    starts = np.cumsum(flows.qps) - flows.qps
    qp = np.arange(len(flow), dtype=np.int64) - np.repeat(starts, flows.qps)
    rng = np.random.default_rng([seed, 19])
    src = flows.src[flow]
    dst = flows.dst[flow]
    return EntryTable(
        flow=flow, qp=qp, dst_qpn=rng.integers(1, 1 << 24, size=len(flow), dtype=np.int64),
        src=src, dst=dst, src_leaf=wiring.host_leaf[src], dst_leaf=wiring.host_leaf[dst],
        prio=flows.prio[flow], share=1.0 / flows.qps[flow].astype(np.float64),
    )


class DemandJitter:
    """Per-flow multiplicative rate factors, one AR(1) draw per flow per simulated second."""

    def __init__(self, n_flows: int, seed: int) -> None:
        self._rng = np.random.default_rng([seed, 23])
        self._second = -1
        self.factor: NDArray[np.float64] = np.ones(n_flows)

    def at(self, t: float) -> NDArray[np.float64]:
        second = int(t)
        while self._second < second:
            eps = self._rng.standard_normal(len(self.factor))
            self.factor = np.clip(1.0 + _JITTER_MEMORY * (self.factor - 1.0) + _JITTER_SIGMA * eps,
                                  0.8, 1.2)
            self._second += 1
        return self.factor
