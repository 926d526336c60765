"""LLDP over gNMI: OpenConfig ``/lldp`` (the ``openconfig`` and ``arista`` dialects) and SONiC's
``APPL_DB`` tables, rendered from the fabric's LLDP state (:mod:`lab.lldp`) at each snapshot.

OpenConfig (``openconfig-lldp``): ``/lldp/config/enabled``, ``/lldp/state/{enabled, hello-timer,
chassis-id, chassis-id-type, system-name, system-description}``; per switch port
``/lldp/interfaces/interface[name]/{name, config/{name, enabled}, state/{name, enabled}}``; and per
neighbour ``.../neighbors/neighbor[id]/{id, state/{id, chassis-id, chassis-id-type, system-name,
system-description, port-id, port-id-type, port-description, ttl, age, last-update}}``. The
neighbour list key is "a system generated identifier": ``<chassis-id>_<port-id>`` on the
``openconfig`` dialect, a number per interface (``1``) on ``arista``. Neighbours come and go, so
an ON_CHANGE subscription gets ``delete`` paths for the ones that went.

SONiC (``APPL_DB``, as lldp_syncd writes it): ``LLDP_ENTRY_TABLE/<port>`` holds one field map per
port that has a neighbour (``lldp_rem_chassis_id_subtype``, ``lldp_rem_chassis_id``,
``lldp_rem_port_id_subtype``, ``lldp_rem_port_id``, ``lldp_rem_port_desc``, ``lldp_rem_sys_name``,
``lldp_rem_sys_desc``, ``lldp_rem_time_mark``, ``lldp_rem_index``, capability maps); subtypes
are LLDP-MIB numbers as strings. ``LLDP_LOC_CHASSIS`` holds the switch's own chassis id and name.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from numpy.typing import NDArray
from pygnmi.spec.v080 import gnmi_pb2 as pb

from lab import counters as cf
from lab.gnmi.jsontree import assemble
from lab.gnmi.paths import PathT, has_wildcard, matches, to_pb
from lab.gnmi.sonic import json_update, port_match
from lab.lldp import (
    CAPS_BRIDGE_ROUTER,
    CAPS_STATION,
    CHASSIS_SUBTYPE,
    PORT_SUBTYPE,
    TTL_S,
    TX_INTERVAL_S,
    Advert,
    LldpFabric,
    Seen,
)
from lab.wiring import Wiring

F64 = NDArray[np.float64]
#: a leaf's value and how it is typed: ``str``, ``bool``, ``u16`` (bare in JSON), ``u64`` and
#: ``i64`` (strings in JSON_IETF, RFC 7951)
Value = tuple[str, Any]
ARISTA = "arista"
#: what a switch's and a host's capability maps say, as lldp_syncd writes them
_CAPS = {"switch": CAPS_BRIDGE_ROUTER.hex(" "), "host": CAPS_STATION.hex(" ")}


def _e(elem: str, **keys: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    return (elem, tuple(sorted(keys.items())))


class LldpState:
    """One switch's LLDP state in a snapshot, the way every selection reads it."""

    def __init__(self, fabric: LldpFabric, switch: str, wiring: Wiring) -> None:
        self.fabric = fabric
        self.switch = switch
        self.device = wiring.device_index(switch)
        self.ports = wiring.switch_ports[self.device].tolist()
        self.names = {p: wiring.port_name[p] for p in self.ports}
        self._key_tick = -1
        self._key: tuple[tuple[int, Advert], ...] = ()

    def seen(self, snap: F64) -> dict[int, Seen]:
        return self.fabric.neighbors(self.switch, snap)

    def seen_key(self, snap: F64) -> tuple[tuple[int, Advert], ...]:
        """Who each port shows in this snapshot, comparable (once per snapshot tick, however
        many selections ask)."""
        tick = int(snap[cf.H_TICK])
        if tick != self._key_tick:
            self._key = tuple(sorted((p, nb.advert) for p, nb in self.seen(snap).items()))
            self._key_tick = tick
        return self._key

    def local(self) -> Advert:
        return self.fabric.adverts[self.ports[0]] if self.ports else Advert(
            self.fabric.chassis(self.device), "MAC_ADDRESS", self.switch,
            self.fabric.description(self.device), "", "LOCAL", "")


# -- OpenConfig ----------------------------------------------------------------------------------


def oc_leaves(state: LldpState, dialect: str, snap: F64) -> list[tuple[PathT, Value]]:
    """Every ``/lldp`` leaf of one switch in this snapshot, in a stable order."""
    local = state.local()
    root = (_e("lldp"),)
    out: list[tuple[PathT, Value]] = [((*root, _e("config"), _e("enabled")), ("bool", True))]
    st = (*root, _e("state"))
    out += [((*st, _e("enabled")), ("bool", True)),
            ((*st, _e("hello-timer")), ("u64", TX_INTERVAL_S)),
            ((*st, _e("chassis-id")), ("str", local.chassis_id)),
            ((*st, _e("chassis-id-type")), ("str", local.chassis_id_type)),
            ((*st, _e("system-name")), ("str", state.switch)),
            ((*st, _e("system-description")), ("str", local.system_description))]
    t = float(snap[cf.H_TIME])
    seen = state.seen(snap)
    for p in state.ports:
        name = state.names[p]
        intf = (*root, _e("interfaces"), _e("interface", name=name))
        out += [((*intf, _e("name")), ("str", name)),
                ((*intf, _e("config"), _e("name")), ("str", name)),
                ((*intf, _e("config"), _e("enabled")), ("bool", True)),
                ((*intf, _e("state"), _e("name")), ("str", name)),
                ((*intf, _e("state"), _e("enabled")), ("bool", True))]
        nb = seen.get(p)
        if nb is None:
            continue
        a = nb.advert
        nid = "1" if dialect == ARISTA else f"{a.chassis_id}_{a.port_id}"
        base = (*intf, _e("neighbors"), _e("neighbor", id=nid))
        age = max(t - nb.since_s, 0.0)
        ns = (*base, _e("state"))
        out += [((*base, _e("id")), ("str", nid)),
                ((*ns, _e("id")), ("str", nid)),
                ((*ns, _e("chassis-id")), ("str", a.chassis_id)),
                ((*ns, _e("chassis-id-type")), ("str", a.chassis_id_type)),
                ((*ns, _e("system-name")), ("str", a.system_name)),
                ((*ns, _e("system-description")), ("str", a.system_description)),
                ((*ns, _e("port-id")), ("str", a.port_id)),
                ((*ns, _e("port-id-type")), ("str", a.port_id_type)),
                ((*ns, _e("port-description")), ("str", a.port_description)),
                ((*ns, _e("ttl")), ("u16", TTL_S)),
                ((*ns, _e("age")), ("u64", int(age))),
                ((*ns, _e("last-update")), ("i64", int(age) % TX_INTERVAL_S))]
    return out


def _json_value(value: Value, ietf: bool) -> Any:
    kind, v = value
    if kind in ("u64", "i64"):
        return str(int(v)) if ietf else int(v)
    return v


def _set(val: pb.TypedValue, value: Value, enc: int) -> None:
    kind, v = value
    if enc == pb.PROTO:
        if kind == "bool":
            val.bool_val = bool(v)
        elif kind in ("u16", "u64"):
            val.uint_val = int(v)
        elif kind == "i64":
            val.int_val = int(v)
        else:
            val.string_val = str(v)
        return
    body = json.dumps(_json_value(value, enc == pb.JSON_IETF)).encode()
    if enc == pb.JSON_IETF:
        val.json_ietf_val = body
    else:
        val.json_val = body


#: the ``/lldp`` leaves that move with time alone (a neighbour's age)
_TIMED = frozenset({"age", "last-update"})
#: the ``/lldp`` leaves that do not: a path ending in one of them never selects a timed leaf
_UNTIMED = frozenset({"id", "name", "enabled", "hello-timer", "chassis-id", "chassis-id-type",
                      "system-name", "system-description", "port-id", "port-id-type",
                      "port-description", "ttl"})


class OcLldpSelection:
    """The ``/lldp`` leaves a request path names, on one switch; the leaves change with the
    snapshot (neighbours appear and go), so a render selects them again, unless the selection
    holds no timed leaf and no port's neighbour changed (an ON_CHANGE check at every snapshot
    is then one comparison, as a switch's own change notification is)."""

    def __init__(self, state: LldpState, dialect: str, pattern: PathT, encoding: int,
                 prefix: pb.Path, snap: F64) -> None:
        self.state = state
        self.dialect = dialect
        self.pattern = pattern
        self.encoding = encoding
        self.prefix = prefix
        self.only = ""          # "config" or "state": a Get of one data type
        self._last: dict[PathT, Value] | None = None
        last = pattern[-1][0] if pattern else ""
        self._timed = last in _TIMED or last not in _UNTIMED
        self._neighbors: tuple[tuple[int, Advert], ...] | None = None
        self._count = len(self._select(snap))

    def __len__(self) -> int:
        return self._count

    def restrict(self, part: str) -> OcLldpSelection:
        self.only = part
        return self

    def _select(self, snap: F64) -> dict[PathT, Value]:
        out = {}
        for path, value in oc_leaves(self.state, self.dialect, snap):
            if matches(self.pattern, path) and (
                    not self.only or any(e[0] == self.only for e in path)):
                out[path] = value
        return out

    def _note(self, leaves: dict[PathT, Value], ts_ns: int,
              deleted: list[PathT] | None = None) -> pb.SubscribeResponse:
        resp = pb.SubscribeResponse()
        resp.update.timestamp = ts_ns
        resp.update.prefix.CopyFrom(self.prefix)
        for path, value in leaves.items():
            u = resp.update.update.add()
            u.path.CopyFrom(to_pb(path))
            _set(u.val, value, self.encoding)
        for path in deleted or ():
            resp.update.delete.append(to_pb(path))
        return resp

    def full(self, snap: F64, ts_ns: int) -> pb.SubscribeResponse:
        leaves = self._select(snap)
        self._last = leaves
        self._neighbors = self.state.seen_key(snap)
        return self._note(leaves, ts_ns)

    def delta(self, snap: F64, ts_ns: int) -> pb.SubscribeResponse | None:
        """What changed since the last render: new or changed leaves, and the paths of the
        leaves that went (a neighbour that disappeared)."""
        if self._last is None:
            return self.full(snap, ts_ns)
        neighbors = self.state.seen_key(snap)
        if not self._timed and neighbors == self._neighbors:
            return None
        self._neighbors = neighbors
        leaves = self._select(snap)
        changed = {p: v for p, v in leaves.items() if self._last.get(p) != v}
        gone = [p for p in self._last if p not in leaves]
        self._last = leaves
        if not changed and not gone:
            return None
        return self._note(changed, ts_ns, gone)

    def tree(self, snap: F64, ts_ns: int) -> pb.Notification | None:
        """A Get's answer as one JSON tree of the requested container (None for a path with
        wildcards or a PROTO request: those get one update per leaf)."""
        if self.encoding == pb.PROTO or has_wildcard(self.pattern):
            return None
        ietf = self.encoding == pb.JSON_IETF
        value = assemble(self.pattern, [(p, _json_value(v, ietf))
                                        for p, v in self._select(snap).items()])
        note = pb.Notification(timestamp=ts_ns, prefix=self.prefix)
        u = note.update.add(path=to_pb(self.pattern))
        body = json.dumps(value).encode()
        if ietf:
            u.val.json_ietf_val = body
        else:
            u.val.json_val = body
        return note


# -- SONiC ---------------------------------------------------------------------------------------

LLDP_ENTRY_TABLE = "LLDP_ENTRY_TABLE"
LLDP_LOC_CHASSIS = "LLDP_LOC_CHASSIS"
SONIC_LLDP_TABLES = (LLDP_ENTRY_TABLE, LLDP_LOC_CHASSIS)


def sonic_entry(nb: Seen, t: float) -> dict[str, str]:
    """One port's ``LLDP_ENTRY_TABLE`` fields."""
    a = nb.advert
    caps = _CAPS["host" if a.station else "switch"]
    return {"lldp_rem_chassis_id_subtype": str(CHASSIS_SUBTYPE[a.chassis_id_type]),
            "lldp_rem_chassis_id": a.chassis_id,
            "lldp_rem_port_id_subtype": str(PORT_SUBTYPE[a.port_id_type]),
            "lldp_rem_port_id": a.port_id, "lldp_rem_port_desc": a.port_description,
            "lldp_rem_sys_name": a.system_name, "lldp_rem_sys_desc": a.system_description,
            "lldp_rem_time_mark": str(int(max(t - nb.since_s, 0.0))), "lldp_rem_index": "1",
            "lldp_rem_sys_cap_supported": caps, "lldp_rem_sys_cap_enabled": caps,
            "lldp_rem_man_addr": ""}


class SonicLldpSelection:
    """One ``APPL_DB`` LLDP path; renders one update whose value is the JSON document (strings),
    sent as ``json_ietf_val`` as sonic-gnmi does."""

    def __init__(self, state: LldpState, names: list[str], path: PathT, prefix: pb.Path,
                 snap: F64) -> None:
        self.state = state
        self.names = names
        self.prefix = prefix
        self._pb_path = to_pb(path)
        self._last: bytes | None = None
        self.wild = len(names) >= 2 and "*" in names[1]
        self._count = 1 if self.wild else len(self._doc(snap))

    def __len__(self) -> int:
        return self._count

    def _doc(self, snap: F64) -> dict[str, Any]:
        names = self.names
        st = self.state
        if names[0] == LLDP_LOC_CHASSIS:
            local = st.local()
            doc: dict[str, Any] = {
                "lldp_loc_chassis_id_subtype": str(CHASSIS_SUBTYPE[local.chassis_id_type]),
                "lldp_loc_chassis_id": local.chassis_id, "lldp_loc_sys_name": st.switch,
                "lldp_loc_sys_desc": local.system_description, "lldp_loc_man_addr": "",
                "lldp_loc_sys_cap_supported": _CAPS["switch"],
                "lldp_loc_sys_cap_enabled": _CAPS["switch"]}
            if len(names) == 2:
                return {names[1]: doc[names[1]]} if names[1] in doc else {}
            return doc
        if len(names) < 2:
            return {}
        t = float(snap[cf.H_TIME])
        pattern = names[1]
        out: dict[str, Any] = {}
        for p, nb in st.seen(snap).items():
            port = st.names[p]
            if not port_match(pattern, (port,)):
                continue
            fields = sonic_entry(nb, t)
            if len(names) == 3:
                if names[2] not in fields:
                    continue
                out[port] = fields[names[2]]
            else:
                out[port] = fields
        return out

    def document(self, snap: F64) -> bytes:
        doc = self._doc(snap)
        if self.names[0] == LLDP_LOC_CHASSIS:
            value: Any = next(iter(doc.values()), "") if len(self.names) == 2 else doc
        elif not self.wild:
            value = next(iter(doc.values()), {})
        else:
            value = doc
        return json.dumps(value).encode()

    def full(self, snap: F64, ts_ns: int) -> pb.SubscribeResponse:
        body = self.document(snap)
        self._last = body
        return json_update(self.prefix, self._pb_path, body, ts_ns)

    def delta(self, snap: F64, ts_ns: int) -> pb.SubscribeResponse | None:
        if self.document(snap) == self._last:
            return None
        return self.full(snap, ts_ns)
