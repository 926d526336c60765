"""The leaves a simulated switch serves in the OpenConfig-style dialects, mapped onto the snapshot.

One :class:`LeafTable` per switch lists every leaf path the dialect exposes (see
``docs/telemetry-dialects.md``) with its kind and where its value lives in the snapshot vector, so
rendering a subscription is a numpy gather plus a protobuf fill. ``openconfig`` serves OpenConfig
interfaces, if-ethernet and qos with the Enterprise-SONiC ``openconfig-qos-ext`` PFC augment;
``arista`` serves the same interfaces and queues, plus ``instant-queue-len``, with PFC under the
EOS ``arista-intf-augments`` / ``arista-pfc-history-counters-augment`` paths.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from functools import cached_property

import numpy as np
from numpy.typing import NDArray

from lab import counters as cf
from lab.counters import Layout
from lab.gnmi.paths import Elem, PathT, matches, to_pb
from lab.wiring import N_PRIO, Wiring

MODULES = {"interfaces": "openconfig-interfaces", "qos": "openconfig-qos",
           "lldp": "openconfig-lldp"}

OPER_NAMES = {1: "UP", 2: "DOWN", 3: "TESTING", 4: "UNKNOWN", 5: "DORMANT", 6: "NOT_PRESENT",
              7: "LOWER_LAYER_DOWN"}


class Kind(IntEnum):
    COUNTER = 0     # counter64 from the snapshot
    GAUGE = 1       # uint64 gauge from the snapshot
    UINT = 2        # constant unsigned integer
    ENUM = 3        # oper/admin status from the snapshot, served as its OpenConfig name
    BOOL = 4        # true when the snapshot value is 1 (admin up)
    STRING = 5      # constant string
    TIMETICKS = 6   # simulated seconds in the snapshot, served as ns since the epoch
    FLAG = 7        # constant boolean


@dataclass(eq=False)
class LeafTable:
    paths: tuple[PathT, ...]
    kinds: NDArray[np.int8]
    index: NDArray[np.int64]          # snapshot index, -1 for constants
    consts: tuple[object, ...]

    def __len__(self) -> int:
        return len(self.paths)

    @cached_property
    def path_bytes(self) -> tuple[bytes, ...]:
        """Each leaf's path as a serialized gnmi.Path (built once, reused by every selection)."""
        return tuple(to_pb(p).SerializeToString() for p in self.paths)

    def select(self, pattern: PathT) -> NDArray[np.int64]:
        """Indices of the leaves under ``pattern``, in table order."""
        root = pattern[0][0] if pattern else "*"
        found = [i for i, p in enumerate(self.paths)
                 if (root in ("*", "...") or p[0][0] == root) and matches(pattern, p)]
        return np.asarray(found, dtype=np.int64)


class _Builder:
    def __init__(self, layout: Layout) -> None:
        self.lay = layout
        self.paths: list[PathT] = []
        self.kinds: list[int] = []
        self.index: list[int] = []
        self.consts: list[object] = []

    def add(self, path: PathT, kind: Kind, index: int = -1, const: object = None) -> None:
        self.paths.append(path)
        self.kinds.append(int(kind))
        self.index.append(index)
        self.consts.append(const)

    def table(self) -> LeafTable:
        return LeafTable(tuple(self.paths), np.asarray(self.kinds, dtype=np.int8),
                         np.asarray(self.index, dtype=np.int64), tuple(self.consts))


def _e(elem: str, **keys: str) -> Elem:
    return (elem, tuple(sorted((k.replace("_", "-"), v) for k, v in keys.items())))


_IF_COUNTERS = (
    ("in-octets", cf.P_IN_OCTETS), ("out-octets", cf.P_OUT_OCTETS), ("in-pkts", cf.P_IN_PKTS),
    ("out-pkts", cf.P_OUT_PKTS), ("in-unicast-pkts", cf.P_IN_PKTS),
    ("out-unicast-pkts", cf.P_OUT_PKTS), ("in-errors", cf.P_IN_ERRORS),
    ("out-errors", cf.P_OUT_ERRORS), ("in-discards", cf.P_IN_DISCARDS),
    ("out-discards", cf.P_OUT_DISCARDS), ("in-fcs-errors", cf.P_IN_FCS),
    ("carrier-transitions", cf.P_CARRIER),
)
_ETH_COUNTERS = (
    ("in-crc-errors", cf.P_IN_FCS), ("in-symbol-error", cf.P_IN_SYMBOL),
    ("fec-corrected-blocks", cf.P_FEC_CORR), ("fec-uncorrectable-blocks", cf.P_FEC_UNCORR),
)
_QUEUE_LEAVES = (
    ("transmit-pkts", cf.Q_TX_PKTS, Kind.COUNTER),
    ("transmit-octets", cf.Q_TX_OCTETS, Kind.COUNTER),
    ("dropped-pkts", cf.Q_DROPPED, Kind.COUNTER), ("ecn-marked-pkts", cf.Q_ECN, Kind.COUNTER),
    ("max-queue-len", cf.Q_WATERMARK, Kind.GAUGE),
)


def speed_identity(bps: float) -> str:
    gb = round(bps / 1e9)
    return f"openconfig-if-ethernet:SPEED_{gb}GB"


def build_leaf_table(dialect: str, switch: str, wiring: Wiring, layout: Layout) -> LeafTable:
    """Every leaf ``dialect`` serves on ``switch`` (dialects ``openconfig`` and ``arista``)."""
    b = _Builder(layout)
    ports = wiring.switch_ports[wiring.device_index(switch)].tolist()
    for p in ports:
        _interface(b, wiring, p, layout, arista=dialect == "arista")
    for p in ports:
        _qos(b, wiring, p, layout, dialect)
    _buffer_config(b, wiring.device_index(switch), layout)
    return b.table()


LOSSLESS_PROFILE = "lossless_pg"
ECN_PROFILE = "roce_ecn"
_BUFFER_LEAVES = (("xoff", cf.D_XOFF), ("xon", cf.D_XON), ("headroom", cf.D_HEADROOM))
_WRED_LEAVES = (("min-threshold", cf.D_ECN_KMIN), ("max-threshold", cf.D_ECN_KMAX),
                ("max-drop-probability-percent", cf.D_ECN_PMAX))


def _buffer_config(b: _Builder, device: int, lay: Layout) -> None:
    """The switch's lossless buffer profile (PG thresholds, bytes) and its ECN profile, as
    configuration (``config``) and as applied (``state``); see docs/telemetry-dialects.md."""
    prof = (_e("qos"), _e("buffer"), _e("buffer-profiles"),
            _e("buffer-profile", name=LOSSLESS_PROFILE))
    b.add((*prof, _e("name")), Kind.STRING, const=LOSSLESS_PROFILE)
    wred = (_e("qos"), _e("queue-management-profiles"),
            _e("queue-management-profile", name=ECN_PROFILE))
    b.add((*wred, _e("name")), Kind.STRING, const=ECN_PROFILE)
    for part in ("config", "state"):
        b.add((*prof, _e(part), _e("name")), Kind.STRING, const=LOSSLESS_PROFILE)
        b.add((*prof, _e(part), _e("pool")), Kind.STRING, const="ingress_lossless_pool")
        b.add((*prof, _e(part), _e("priority")), Kind.UINT, const=3)
        for leaf, fld in _BUFFER_LEAVES:
            b.add((*prof, _e(part), _e(leaf)), Kind.GAUGE, lay.dev_index(device, fld))
        uni = (*wred, _e("wred"), _e("uniform"), _e(part))
        b.add((*uni, _e("enable-ecn")), Kind.FLAG, const=True)
        for leaf, fld in _WRED_LEAVES:
            b.add((*uni, _e(leaf)), Kind.GAUGE, lay.dev_index(device, fld))


def _interface(b: _Builder, w: Wiring, p: int, lay: Layout, *, arista: bool) -> None:
    name = w.port_name[p]
    root = (_e("interfaces"), _e("interface", name=name))
    b.add((*root, _e("name")), Kind.STRING, const=name)
    b.add((*root, _e("config"), _e("name")), Kind.STRING, const=name)
    b.add((*root, _e("config"), _e("enabled")), Kind.BOOL, lay.port_index(p, cf.P_ADMIN))
    st = (*root, _e("state"))
    b.add((*st, _e("name")), Kind.STRING, const=name)
    b.add((*st, _e("ifindex")), Kind.UINT, const=int(w.port_number[p]))
    b.add((*st, _e("enabled")), Kind.BOOL, lay.port_index(p, cf.P_ADMIN))
    b.add((*st, _e("admin-status")), Kind.ENUM, lay.port_index(p, cf.P_ADMIN))
    b.add((*st, _e("oper-status")), Kind.ENUM, lay.port_index(p, cf.P_OPER))
    b.add((*st, _e("last-change")), Kind.TIMETICKS, lay.port_index(p, cf.P_LAST_CHANGE))
    for leaf, fld in _IF_COUNTERS:
        b.add((*st, _e("counters"), _e(leaf)), Kind.COUNTER, lay.port_index(p, fld))
    eth = (*root, _e("ethernet"), _e("state"))
    b.add((*eth, _e("port-speed")), Kind.STRING, const=speed_identity(float(w.bps[p])))
    for leaf, fld in _ETH_COUNTERS:
        b.add((*eth, _e("counters"), _e(leaf)), Kind.COUNTER, lay.port_index(p, fld))
    if arista:
        for prio in range(N_PRIO):
            pri = (*root, _e("ethernet"), _e("pfc"), _e("priorities"),
                   _e("priority", index=str(prio)))
            b.add((*pri, _e("index")), Kind.UINT, const=prio)
            b.add((*pri, _e("state"), _e("index")), Kind.UINT, const=prio)
            for leaf, fld in (("in-frames", cf.Q_PFC_RX), ("out-frames", cf.Q_PFC_TX),
                              ("pfc-on-total-rx-time", cf.Q_PFC_RX_US)):
                b.add((*pri, _e("state"), _e(leaf)), Kind.COUNTER, lay.prio_index(p, prio, fld))


def _qos(b: _Builder, w: Wiring, p: int, lay: Layout, dialect: str) -> None:
    name = w.port_name[p]
    root = (_e("qos"), _e("interfaces"), _e("interface", interface_id=name))
    b.add((*root, _e("interface-id")), Kind.STRING, const=name)
    b.add((*root, _e("state"), _e("interface-id")), Kind.STRING, const=name)
    for q in range(N_PRIO):
        qr = (*root, _e("output"), _e("queues"), _e("queue", name=str(q)))
        b.add((*qr, _e("name")), Kind.STRING, const=str(q))
        b.add((*qr, _e("state"), _e("name")), Kind.STRING, const=str(q))
        for leaf, fld, kind in _QUEUE_LEAVES:
            b.add((*qr, _e("state"), _e(leaf)), kind, lay.prio_index(p, q, fld))
        if dialect == "arista":
            b.add((*qr, _e("state"), _e("instant-queue-len")), Kind.GAUGE,
                  lay.prio_index(p, q, cf.Q_OCCUPANCY))
    if dialect == "openconfig":
        for prio in range(N_PRIO):
            pr = (*root, _e("pfc"), _e("pfc-priorities"), _e("pfc-priority", dot1p=str(prio)))
            b.add((*pr, _e("dot1p")), Kind.UINT, const=prio)
            b.add((*pr, _e("config"), _e("dot1p")), Kind.UINT, const=prio)
            b.add((*pr, _e("config"), _e("enable")), Kind.FLAG, const=prio == 3)
            b.add((*pr, _e("state"), _e("dot1p")), Kind.UINT, const=prio)
            for leaf, fld in (("pause-frames-rx", cf.Q_PFC_RX), ("pause-frames-tx", cf.Q_PFC_TX)):
                b.add((*pr, _e("state"), _e("statistics"), _e(leaf)), Kind.COUNTER,
                      lay.prio_index(p, prio, fld))


def interface_admin_paths(table: LeafTable) -> dict[str, int]:
    """Interface name -> snapshot index of its admin status (for Set)."""
    out: dict[str, int] = {}
    for path, idx in zip(table.paths, table.index.tolist(), strict=True):
        if len(path) == 4 and path[0][0] == "interfaces" and path[2][0] == "config" \
                and path[3][0] == "enabled":
            out[dict(path[1][1])["name"]] = idx
    return out
