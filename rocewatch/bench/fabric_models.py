"""Every switch's gNMI model made from one template per dialect and role, for ``bench fabric``.

The lab builds a :class:`lab.gnmi.dialects.SwitchModel` per switch: its table of leaf paths, their
kinds and where each value lives in the published snapshot. At the 24,576-GPU reference fabric
that is 10.8 million paths and minutes of start-up (``docs/lab.md``), the reason the lab serves
agents there only for a sample. Yet every switch of a role has the same ports under the same
names, in the same order, and its ports are a contiguous run of the wiring's port indices: its
table is its role's table with the snapshot indices moved by the distance between the two
switches' first ports (per-port and per-priority fields) and devices (device fields). So one
template is built per (dialect, role) and each switch gets a copy sharing the template's paths,
kinds and constants, with its own index: the same leaves the lab's own model would serve, checked
switch by switch by ``tests/rocewatch/test_bench_fabric.py``. SONiC's DB tables are built per
switch by the lab's own function (they are small).

``queues="active"`` serves only the queues and priorities that can carry traffic (the ones the
lab's published snapshot carries; the others are the one zero cell): about 26 series per port
instead of ~95, the sizing of the reference fabric in issue 12 (~30 per port). ``"all"`` serves
all eight, as the lab's agents do.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray
from pygnmi.spec.v080 import gnmi_pb2 as pb

from lab import counters as cf
from lab.counters import Layout
from lab.gnmi.dialects import PathError, SwitchModel
from lab.gnmi.leaves import LeafTable
from lab.gnmi.lldp import LldpState
from lab.gnmi.paths import PathT
from lab.gnmi.render import LeafSelection, Selection
from lab.gnmi.sonic import SonicTables, build_sonic_tables
from lab.lldp import LldpFabric
from lab.wiring import Wiring
from pipeline.errors import LabError

QUEUES = ("active", "all")


class SharedLeafTable(LeafTable):
    """A switch's leaf table that shares its template's paths, and the answers to ``select``
    (a path pattern's leaves are the same positions on every switch of the role)."""

    def __init__(self, template: LeafTable, index: NDArray[np.int64],
                 selected: dict[PathT, NDArray[np.int64]]) -> None:
        super().__init__(template.paths, template.kinds, index, template.consts)
        self.__dict__["path_bytes"] = template.path_bytes
        self._selected = selected

    def select(self, pattern: PathT) -> NDArray[np.int64]:
        found = self._selected.get(pattern)
        if found is None:
            found = self._selected[pattern] = super().select(pattern)
        return found


def _keep(table: LeafTable, rows: NDArray[np.bool_]) -> LeafTable:
    sel = np.flatnonzero(rows)
    return LeafTable(tuple(table.paths[i] for i in sel.tolist()), table.kinds[sel],
                     table.index[sel], tuple(table.consts[i] for i in sel.tolist()))


def active_sonic(tables: SonicTables, zero: int) -> SonicTables:
    """SONiC's tables without the fields of priorities and queues that never carry traffic."""
    counters = {p: tuple(f for f in fields if f[1] != zero)
                for p, fields in tables.counters.items()}
    # a queue with no field left stays, empty: the lab's resolver drops empty entries
    queues = {k: tuple(f for f in fields if f[1] != zero) for k, fields in tables.queues.items()}
    return dataclasses.replace(tables, counters=counters, queues=queues)


class SharedModel(SwitchModel):
    """A switch's model made from its role's template: its own leaf table (indices moved), port
    map, SONiC tables and LLDP state, everything else the template's. A subscription path that
    resolves to leaves (:class:`~lab.gnmi.render.LeafSelection`) is resolved once per template
    and served to each switch as a shallow copy with the switch's own indices: the prebuilt
    notification is shared, filled with a switch's values when it renders (grpc serialises a
    response as soon as the stream yields it, before any other stream runs), so a thousand
    targets cost one notification per template and path. Anything else (SONiC's DB documents,
    LLDP) is resolved per switch, as the lab does."""

    def __init__(self, template: SwitchModel, switch: str, table: LeafTable,
                 port_of: dict[str, int], sonic: SonicTables | None, lldp: LldpState | None,
                 resolved: dict[tuple[bytes, bytes, int], Any]) -> None:
        # a copy of the template's state, not a build: building is what this avoids
        self.__dict__.update(template.__dict__)
        self.switch = switch
        self.table = table
        self.port_of = port_of
        self.sonic = sonic
        if lldp is not None:
            self.lldp = lldp
        self._template = template
        self._resolved = resolved

    def resolve(self, prefix: pb.Path, path: pb.Path,
                encoding: int) -> tuple[Selection, PathT]:
        key = (prefix.SerializeToString(deterministic=True),
               path.SerializeToString(deterministic=True), encoding)
        if key not in self._resolved:
            try:
                sel, full = self._template.resolve(prefix, path, encoding)
            except PathError:
                self._resolved[key] = None
            else:
                self._resolved[key] = (sel, full) if isinstance(sel, LeafSelection) else None
        shared = self._resolved[key]
        if shared is None:
            return super().resolve(prefix, path, encoding)
        sel, full = shared
        mine = copy.copy(sel)
        mine.index = self.table.index[sel.sel]
        return mine, full


class FabricModels:
    """Templates per (dialect, role) and the models of the switches made from them."""

    def __init__(self, wiring: Wiring, layout: Layout, lldp: LldpFabric | None = None,
                 queues: str = "active",
                 snapshot: Callable[[], NDArray[np.float64]] | None = None,
                 epoch_ns: int = 0) -> None:
        if queues not in QUEUES:
            raise LabError(f"queues must be one of {QUEUES}, not {queues!r}")
        self.wiring = wiring
        self.layout = layout
        self.lldp = lldp
        self.queues = queues
        self.snapshot = snapshot
        self.epoch_ns = epoch_ns
        #: (dialect, role) → the template, its select answers and its resolved paths
        self._templates: dict[tuple[str, str], tuple[SwitchModel, dict[PathT, Any],
                                                     dict[tuple[bytes, bytes, int], Any]]] = {}

    def _role_key(self, switch: str) -> str:
        w = self.wiring
        ports = w.switch_ports[w.device_index(switch)].tolist()
        names = "|".join(w.port_name[p] for p in ports)
        return f"{w.topology.role(switch)}:{names}"

    def _first_port(self, switch: str) -> int:
        ports = self.wiring.switch_ports[self.wiring.device_index(switch)]
        if not len(ports) or not np.array_equal(ports, np.arange(ports[0], ports[0] + len(ports))):
            raise LabError(f"{switch}'s ports are not one contiguous run; it needs a model of "
                           f"its own")
        return int(ports[0])

    def _build(self, switch: str, dialect: str) -> SwitchModel:
        """The lab's own model of ``switch`` (with only the active queues when asked)."""
        extra: dict[str, Any] = {}
        if self.lldp is not None:
            extra = {"lldp": self.lldp, "snapshot": self.snapshot}
        model = SwitchModel(switch, dialect, self.wiring, self.layout, self.epoch_ns, **extra)
        if self.queues == "active":
            model.table = _keep(model.table, model.table.index != self.layout.zero_index)
            if model.sonic is not None:
                model.sonic = active_sonic(model.sonic, self.layout.zero_index)
        return model

    def model(self, switch: str, dialect: str) -> SwitchModel:
        """``switch``'s model in ``dialect``, made from its role's template."""
        key = (dialect, self._role_key(switch))
        if key not in self._templates:
            self._templates[key] = (self._build(switch, dialect), {}, {})
        template, selected, resolved = self._templates[key]
        if template.switch == switch:
            return template
        dp = self._first_port(switch) - self._first_port(template.switch)
        dd = self.wiring.device_index(switch) - self.wiring.device_index(template.switch)
        sonic = None
        if template.sonic is not None:
            tables = build_sonic_tables(switch, self.wiring, self.layout)
            sonic = (active_sonic(tables, self.layout.zero_index) if self.queues == "active"
                     else tables)
        return SharedModel(
            template, switch,
            SharedLeafTable(template.table, self.shift(template.table.index, dp, dd), selected),
            {name: port + dp for name, port in template.port_of.items()}, sonic,
            LldpState(self.lldp, switch, self.wiring) if self.lldp is not None else None,
            resolved)

    def shift(self, index: NDArray[np.int64], ports: int, devices: int) -> NDArray[np.int64]:
        """Snapshot indices of one switch moved to another ``ports`` ports and ``devices``
        devices further on (constants, -1, and the zero cell stay)."""
        lay = self.layout
        out = index.copy()
        out[(index >= lay.port_off) & (index < lay.prio_off)] += ports * cf.N_PORT_FIELDS
        out[(index >= lay.prio_off) & (index < lay.dev_off)] += (
            ports * lay.n_slots * cf.N_PRIO_FIELDS)
        out[(index >= lay.dev_off) & (index < lay.zero_index)] += devices * cf.N_DEVICE_FIELDS
        return out

    def reference(self, switch: str, dialect: str) -> SwitchModel:
        """The lab's own model of ``switch``, built from nothing (what the tests compare with)."""
        return self._build(switch, dialect)
