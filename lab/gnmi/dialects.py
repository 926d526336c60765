"""What one switch's gNMI target serves, by dialect, and how a request path resolves against it.

``openconfig`` and ``arista`` resolve every path against the switch's :class:`LeafTable`
(origin ``openconfig`` or empty; a ``prefix.target`` is accepted and echoed). ``sonic`` resolves
paths under a DB ``prefix.target`` (``COUNTERS_DB``, ``APPL_DB``, ``CONFIG_DB``) against the DB
tables, and OpenConfig paths against a small table of interface status and config leaves (what
SONiC's translib serves for the drain workflow: ``config/enabled``, ``state/admin-status``,
``state/oper-status``); its counters are only in the DBs. Given the fabric's LLDP state, a switch
also serves its LLDP neighbours (:mod:`lab.gnmi.lldp`): OpenConfig ``/lldp`` on ``openconfig`` and
``arista``, ``APPL_DB`` ``LLDP_ENTRY_TABLE`` and ``LLDP_LOC_CHASSIS`` on ``sonic``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray
from pygnmi.spec.v080 import gnmi_pb2 as pb

from lab.counters import Layout
from lab.gnmi import paths as gpath
from lab.gnmi.leaves import LeafTable, build_leaf_table
from lab.gnmi.lldp import SONIC_LLDP_TABLES, LldpState, OcLldpSelection, SonicLldpSelection
from lab.gnmi.render import LeafSelection, Selection
from lab.gnmi.sonic import DATABASES, SonicSelection, SonicTables, build_sonic_tables
from lab.lldp import LldpFabric
from lab.wiring import Wiring

_MODELS = {
    "openconfig": [("openconfig-interfaces", "OpenConfig working group", "3.8.1"),
                   ("openconfig-if-ethernet", "OpenConfig working group", "2.18.0"),
                   ("openconfig-qos", "OpenConfig working group", "2.2.0"),
                   ("openconfig-qos-ext", "Dell EMC / Broadcom (Enterprise SONiC)", "0.1.0"),
                   ("openconfig-lldp", "OpenConfig working group", "0.2.1")],
    "arista": [("openconfig-interfaces", "OpenConfig working group", "3.8.1"),
               ("openconfig-if-ethernet", "OpenConfig working group", "2.18.0"),
               ("openconfig-qos", "OpenConfig working group", "2.2.0"),
               ("arista-intf-augments", "Arista Networks, Inc.", "4.36.1"),
               ("arista-pfc-history-counters-augment", "Arista Networks, Inc.", "4.36.1"),
               ("openconfig-lldp", "OpenConfig working group", "0.2.1")],
    "sonic": [("sonic-db", "SONiC", "1.0"),
              ("openconfig-interfaces", "OpenConfig working group", "3.8.1")],
}
_SONIC_OC_LEAVES = {("name",), ("config", "name"), ("config", "enabled"), ("state", "name"),
                    ("state", "ifindex"), ("state", "enabled"), ("state", "admin-status"),
                    ("state", "oper-status"), ("state", "last-change")}


class PathError(Exception):
    """A request path this target does not serve; ``code`` is the gRPC status name."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class SwitchModel:
    def __init__(self, switch: str, dialect: str, wiring: Wiring, layout: Layout,
                 epoch_ns: int, lldp: LldpFabric | None = None,
                 snapshot: Callable[[], NDArray[np.float64]] | None = None) -> None:
        self.switch = switch
        self.dialect = dialect
        self.epoch_ns = epoch_ns
        table = build_leaf_table("arista" if dialect == "arista" else "openconfig", switch,
                                 wiring, layout)
        if dialect == "sonic":
            keep = [i for i, p in enumerate(table.paths)
                    if p[0][0] == "interfaces" and tuple(e[0] for e in p[2:]) in _SONIC_OC_LEAVES]
            sel = np.asarray(keep, dtype=np.int64)
            table = LeafTable(tuple(table.paths[i] for i in keep), table.kinds[sel],
                              table.index[sel], tuple(table.consts[i] for i in keep))
        self.table = table
        self.sonic: SonicTables | None = (build_sonic_tables(switch, wiring, layout)
                                          if dialect == "sonic" else None)
        ports = wiring.switch_ports[wiring.device_index(switch)].tolist()
        self.port_of: dict[str, int] = {wiring.port_name[p]: int(p) for p in ports}
        #: the switch's LLDP state, and the latest snapshot (what a path resolves against)
        self.lldp = LldpState(lldp, switch, wiring) if lldp is not None else None
        self._snapshot = snapshot

    def known_target(self, prefix: pb.Path) -> bool:
        """Whether a request's ``prefix.target`` names something this switch serves (any target
        on OpenConfig dialects, where it is only echoed; a DB on SONiC)."""
        return self.sonic is None or not prefix.target or prefix.target in DATABASES

    def models(self) -> list[pb.ModelData]:
        return [pb.ModelData(name=n, organization=o, version=v)
                for n, o, v in _MODELS[self.dialect]]

    def resolve(self, prefix: pb.Path, path: pb.Path,
                encoding: int) -> tuple[Selection, gpath.PathT]:
        """The selection a request path names, and the full path it was resolved as."""
        origin = path.origin or prefix.origin
        target = prefix.target
        full = _strip_modules(gpath.from_pb(prefix) + gpath.from_pb(path))
        echo = pb.Path(origin=origin, target=target)
        if self.sonic is not None and target in DATABASES:
            if origin not in ("", "sonic-db"):
                raise PathError("INVALID_ARGUMENT", f"origin {origin!r} with target {target}")
            names = [e[0] for e in full]
            if target == "APPL_DB" and names and names[0] in SONIC_LLDP_TABLES \
                    and self.lldp is not None:
                l_sel = SonicLldpSelection(self.lldp, names, full, echo, self._snap())
                if not len(l_sel):
                    raise PathError("NOT_FOUND", f"{target} has nothing at {gpath.to_text(full)}")
                return l_sel, full
            s_sel = SonicSelection(self.sonic, target, full, echo)
            if not len(s_sel):
                raise PathError("NOT_FOUND", f"{target} has nothing at {gpath.to_text(full)}")
            return s_sel, full
        if self.sonic is not None and target and target not in DATABASES:
            raise PathError("NOT_FOUND", f"unknown target DB {target!r}; one of {DATABASES}")
        if origin not in ("", "openconfig"):
            raise PathError("INVALID_ARGUMENT", f"unsupported origin {origin!r}")
        if full and full[0][0] == "lldp" and self.lldp is not None and self.sonic is None:
            o_sel = OcLldpSelection(self.lldp, self.dialect, full, encoding, echo, self._snap())
            if not len(o_sel):
                raise PathError("NOT_FOUND", f"no data at {gpath.to_text(full)} on "
                                             f"{self.switch} (dialect {self.dialect})")
            return o_sel, full
        idx = self.table.select(full)
        if not idx.size:
            raise PathError("NOT_FOUND", f"no data at {gpath.to_text(full)} on {self.switch} "
                                         f"(dialect {self.dialect})")
        return LeafSelection(self.table, idx, encoding, echo, self.epoch_ns), full


    def _snap(self) -> NDArray[np.float64]:
        if self._snapshot is None:
            raise PathError("UNAVAILABLE", f"{self.switch} has no snapshot to serve LLDP from")
        return self._snapshot()


def _strip_modules(path: gpath.PathT) -> gpath.PathT:
    """``openconfig-interfaces:interfaces`` -> ``interfaces`` (module-qualified names)."""
    return tuple((name.split(":", 1)[1] if ":" in name else name, keys) for name, keys in path)
