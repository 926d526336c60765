"""The SONiC dialect: Redis-DB style paths whose values are JSON maps of strings.

As sonic-gnmi serves them (notes/ecosystem-conventions.md §1.5): origin empty, the DB named in
``prefix.target``. Supported paths:

* ``COUNTERS_DB`` ``COUNTERS/<port>``: port counters, ``COUNTERS/<port>/Queues``: queue counters,
  ``COUNTERS/<port>/<FIELD>``: one field;
* ``APPL_DB`` ``PORT_TABLE/<port>``: oper/admin status, flap count, speed;
* ``CONFIG_DB`` ``PORT/<port>``: admin status (``PORT/<port>/admin_status`` is settable);
  the lossless buffer and PFC configuration: ``BUFFER_PROFILE/pg_lossless_profile`` (``xoff``,
  ``xon``, ``size``: the PG's XOFF and XON thresholds and its headroom, bytes; ``pool``),
  ``BUFFER_PG/<port>|3`` (``profile``), ``PORT_QOS_MAP/<port>`` (``pfc_enable``) and
  ``WRED_PROFILE/AZURE_LOSSLESS`` (ECN thresholds).

``<port>`` is a name (``Ethernet8``), ``Ethernet*`` or ``*``. A wildcard returns a map keyed by port
(``"Ethernet8"``) or port and queue (``"Ethernet8:3"``); a single port returns that port's field map
directly; a single field returns its value. Values are strings, and every value is sent as
``json_ietf_val`` whatever encoding was asked for, as sonic-gnmi does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from pygnmi.spec.v080 import gnmi_pb2 as pb

from lab import counters as cf
from lab.counters import Layout
from lab.gnmi.paths import PathT, to_pb
from lab.lldp import port_alias
from lab.wiring import N_PRIO, Wiring

DATABASES = ("COUNTERS_DB", "APPL_DB", "CONFIG_DB")

_PORT_FIELDS = (
    ("SAI_PORT_STAT_IF_IN_OCTETS", cf.P_IN_OCTETS),
    ("SAI_PORT_STAT_IF_OUT_OCTETS", cf.P_OUT_OCTETS),
    ("SAI_PORT_STAT_IF_IN_UCAST_PKTS", cf.P_IN_PKTS),
    ("SAI_PORT_STAT_IF_OUT_UCAST_PKTS", cf.P_OUT_PKTS),
    ("SAI_PORT_STAT_IF_IN_ERRORS", cf.P_IN_ERRORS),
    ("SAI_PORT_STAT_IF_OUT_ERRORS", cf.P_OUT_ERRORS),
    ("SAI_PORT_STAT_IF_IN_DISCARDS", cf.P_IN_DISCARDS),
    ("SAI_PORT_STAT_IF_OUT_DISCARDS", cf.P_OUT_DISCARDS),
    ("SAI_PORT_STAT_ETHER_STATS_CRC_ALIGN_ERRORS", cf.P_IN_FCS),
    ("SAI_PORT_STAT_IF_IN_FEC_SYMBOL_ERRORS", cf.P_IN_SYMBOL),
    ("SAI_PORT_STAT_IF_IN_FEC_CORRECTABLE_FRAMES", cf.P_FEC_CORR),
    ("SAI_PORT_STAT_IF_IN_FEC_NOT_CORRECTABLE_FRAMES", cf.P_FEC_UNCORR),
)
_PFC_FIELDS = (
    ("SAI_PORT_STAT_PFC_{p}_RX_PKTS", cf.Q_PFC_RX), ("SAI_PORT_STAT_PFC_{p}_TX_PKTS", cf.Q_PFC_TX),
    ("SAI_PORT_STAT_PFC_{p}_RX_PAUSE_DURATION_US", cf.Q_PFC_RX_US),
    ("SAI_PORT_STAT_PFC_{p}_TX_PAUSE_DURATION_US", cf.Q_PFC_TX_US),
)
_QUEUE_FIELDS = (
    ("SAI_QUEUE_STAT_PACKETS", cf.Q_TX_PKTS), ("SAI_QUEUE_STAT_BYTES", cf.Q_TX_OCTETS),
    ("SAI_QUEUE_STAT_DROPPED_PACKETS", cf.Q_DROPPED),
    ("SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS", cf.Q_ECN),
    ("SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES", cf.Q_OCCUPANCY),
    ("SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES", cf.Q_WATERMARK),
)


def json_update(prefix: pb.Path, path: pb.Path, body: bytes, ts_ns: int) -> pb.SubscribeResponse:
    """One notification carrying a JSON document at ``path`` (a table or a container)."""
    resp = pb.SubscribeResponse()
    resp.update.timestamp = ts_ns
    resp.update.prefix.CopyFrom(prefix)
    u = resp.update.update.add()
    u.path.CopyFrom(path)
    u.val.json_ietf_val = body
    return resp

@dataclass(frozen=True, eq=False)
class SonicTables:
    """Per switch: for each port, the snapshot index of every field of each DB table."""

    ports: tuple[str, ...]
    port_index: dict[str, int]          # name -> wiring port index
    counters: dict[str, tuple[tuple[str, int], ...]]
    queues: dict[str, tuple[tuple[str, int], ...]]    # "Ethernet8:3" -> fields
    status: dict[str, int]              # name -> snapshot index of oper status
    admin: dict[str, int]
    carrier: dict[str, int]
    speed_mbps: dict[str, int]
    device: dict[str, int]              # D_* field -> snapshot index (buffer configuration)


def build_sonic_tables(switch: str, wiring: Wiring, layout: Layout) -> SonicTables:
    ports = wiring.switch_ports[wiring.device_index(switch)].tolist()
    names = tuple(wiring.port_name[p] for p in ports)
    counters: dict[str, tuple[tuple[str, int], ...]] = {}
    queues: dict[str, tuple[tuple[str, int], ...]] = {}
    for p, name in zip(ports, names, strict=True):
        fields = [(f, layout.port_index(p, fld)) for f, fld in _PORT_FIELDS]
        for prio in range(N_PRIO):
            fields += [(f.format(p=prio), layout.prio_index(p, prio, fld))
                       for f, fld in _PFC_FIELDS]
        counters[name] = tuple(fields)
        for q in range(N_PRIO):
            queues[f"{name}:{q}"] = tuple((f, layout.prio_index(p, q, fld))
                                          for f, fld in _QUEUE_FIELDS)
    return SonicTables(
        ports=names, port_index=dict(zip(names, ports, strict=True)),
        counters=counters, queues=queues,
        status={n: layout.port_index(p, cf.P_OPER) for p, n in zip(ports, names, strict=True)},
        admin={n: layout.port_index(p, cf.P_ADMIN) for p, n in zip(ports, names, strict=True)},
        carrier={n: layout.port_index(p, cf.P_CARRIER) for p, n in zip(ports, names, strict=True)},
        speed_mbps={n: int(wiring.bps[p] / 1e6) for p, n in zip(ports, names, strict=True)},
        device={name: layout.dev_index(wiring.device_index(switch), fld)
                for name, fld in _DEVICE_FIELDS},
    )


BUFFER_PROFILE = "pg_lossless_profile"
WRED_PROFILE = "AZURE_LOSSLESS"
_DEVICE_FIELDS = (("xoff", cf.D_XOFF), ("xon", cf.D_XON), ("size", cf.D_HEADROOM),
                  ("green_min_threshold", cf.D_ECN_KMIN), ("green_max_threshold", cf.D_ECN_KMAX),
                  ("green_drop_probability", cf.D_ECN_PMAX))


def _config_tables(t: SonicTables, table: str, key: str) -> list[tuple[str, tuple[Field, ...]]]:
    """CONFIG_DB's buffer, PFC and ECN tables: ``key`` is a profile name, ``<port>`` or
    ``<port>|3`` (a wildcard ``*`` or ``Ethernet*`` selects ports)."""
    dev = t.device
    if table == "BUFFER_PROFILE" and key in ("*", BUFFER_PROFILE):
        return [(BUFFER_PROFILE, (("pool", -1, "ingress_lossless_pool"),
                                  ("xoff", dev["xoff"], None), ("xon", dev["xon"], None),
                                  ("size", dev["size"], None)))]
    if table == "WRED_PROFILE" and key in ("*", WRED_PROFILE):
        return [(WRED_PROFILE, (("ecn", -1, "ecn_all"), ("wred_green_enable", -1, "true"),
                                *((f, dev[f], None) for f in ("green_min_threshold",
                                                              "green_max_threshold",
                                                              "green_drop_probability"))))]
    if table == "PORT_QOS_MAP":
        return [(p, (("pfc_enable", -1, "3"),)) for p in port_match(key, t.ports)]
    if table == "BUFFER_PG":
        port, _, pg = key.partition("|")
        if pg not in ("", "*", "3"):
            return []
        return [(f"{p}|3", (("profile", -1, BUFFER_PROFILE),)) for p in port_match(port, t.ports)]
    return []


def port_match(pattern: str, names: tuple[str, ...]) -> list[str]:
    if pattern == "*":
        return list(names)
    if pattern.endswith("*"):
        return [n for n in names if n.startswith(pattern[:-1])]
    return [pattern] if pattern in names else []


class SonicSelection:
    """One DB path; renders to one update whose value is the JSON document."""

    def __init__(self, tables: SonicTables, db: str, path: PathT, prefix: pb.Path) -> None:
        self.tables = tables
        self.db = db
        self.path = path
        self.prefix = prefix
        names = [e[0] for e in path]
        self.items = _resolve(tables, db, names)
        self.wild = "*" in names[1] if len(names) > 1 else True
        self.single_field = (db == "COUNTERS_DB" and len(names) == 3 and names[2] != "Queues") or (
            db in ("APPL_DB", "CONFIG_DB") and len(names) == 3)
        self._last: bytes | None = None
        self._pb_path = to_pb(path)

    def __len__(self) -> int:
        return len(self.items)

    def document(self, snap: NDArray[np.float64]) -> bytes:
        doc: dict[str, dict[str, str]] = {}
        for key, fields in self.items:
            doc[key] = {f[0]: _render(f, snap) for f in fields}
        out: Mapping[str, object] = doc
        if self.single_field:
            out = {k: next(iter(v.values())) for k, v in doc.items()}
        if not self.wild and len(out) == 1:
            return json.dumps(next(iter(out.values()))).encode()
        return json.dumps(out).encode()

    def full(self, snap: NDArray[np.float64], ts_ns: int) -> pb.SubscribeResponse:
        body = self.document(snap)
        self._last = body
        return json_update(self.prefix, self._pb_path, body, ts_ns)

    def delta(self, snap: NDArray[np.float64], ts_ns: int) -> pb.SubscribeResponse | None:
        if self.document(snap) == self._last:
            return None
        return self.full(snap, ts_ns)


Field = tuple[str, int, str | None]   # (name, snapshot index or -1, constant value)


def _resolve(t: SonicTables, db: str, names: list[str]) -> list[tuple[str, tuple[Field, ...]]]:
    if len(names) < 2:
        return []
    table, port_pat = names[0], names[1]
    if db == "CONFIG_DB" and table != "PORT":
        found = _config_tables(t, table, port_pat)
        if len(names) == 3:
            found = [(k, tuple(f for f in v if f[0] == names[2])) for k, v in found]
        return [(k, v) for k, v in found if v]
    ports = port_match(port_pat, t.ports)
    out: list[tuple[str, tuple[Field, ...]]] = []
    if db == "COUNTERS_DB" and table == "COUNTERS":
        if len(names) == 2:
            out = [(p, tuple((f, i, None) for f, i in t.counters[p])) for p in ports]
        elif len(names) == 3 and names[2] == "Queues":
            out = [(f"{p}:{q}", tuple((f, i, None) for f, i in t.queues[f"{p}:{q}"]))
                   for p in ports for q in range(N_PRIO)]
        elif len(names) == 3:
            out = [(p, tuple((f, i, None) for f, i in t.counters[p] if f == names[2]))
                   for p in ports]
    elif (db, table) in (("APPL_DB", "PORT_TABLE"), ("CONFIG_DB", "PORT")):
        for p in ports:
            fields: list[Field] = [("admin_status", t.admin[p], None)]
            if db == "APPL_DB":
                fields += [("oper_status", t.status[p], None), ("flap_count", t.carrier[p], None)]
            fields += [("speed", -1, str(t.speed_mbps[p])), ("mtu", -1, "9100")]
            if db == "APPL_DB":
                fields += [("alias", -1, port_alias(p)),
                           ("index", -1, "".join(ch for ch in p if ch.isdigit()))]
            if len(names) == 3:
                fields = [f for f in fields if f[0] == names[2]]
            out.append((p, tuple(fields)))
    return [(k, v) for k, v in out if v]


def _render(field: Field, snap: NDArray[np.float64]) -> str:
    name, idx, const = field
    if const is not None:
        return const
    raw = float(snap[idx])
    if name in ("oper_status", "admin_status"):
        return "up" if round(raw) == 1 else "down"
    return str(int(max(raw, 0.0) + 0.5)) if name in _CONFIG_FIELDS else str(int(max(raw, 0.0)))


_CONFIG_FIELDS = {f for f, _ in _DEVICE_FIELDS}
