"""The fabric's topology as data: switches by tier and zone, host ports, links, and lookups.

Naming follows the scenario format (``shared/scenarios/README.md``; the rules live in
:mod:`pipeline.topology.names`): two tiers ``spine1..``, ``leaf1..``; three tiers (AI zones joined
by an aggregation tier) ``z3-leaf2``, ``z3-spine1``, ``agg1..``; hosts ``host1..`` numbered zone by
zone, leaf by leaf; switch ports ``Ethernet1..`` with a switch's downward ports first, then its
uplinks; a link is its two switch names sorted and joined by ``~`` (``leaf2~spine1``,
``agg2~z3-spine1``), the k-th parallel link of a pair adds ``#k`` for k >= 2; a host's link is
named by the host. This module is the one data type the lab and the platform share; a fabric's
compact description (:class:`~pipeline.topology.shape.FabricShape`) builds it, and what a tier or
a zone can carry is in :mod:`pipeline.topology.capacity`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from pipeline.errors import ConfigError
from pipeline.topology.names import (
    AGG,
    HOST,
    LEAF,
    SPINE,
    TIER_OF_ROLE,
    link_id,
    natural_key,
    parallel_index,
    parse_name,
    parse_zone,
    port_number,
)
from pipeline.topology.shape import FabricShape

# the lab imports the shared topology through this module only (tests/rocewatch/test_layering.py)
__all__ = ["AGG", "HOST", "LEAF", "SPINE", "FabricShape", "Host", "Link", "Port", "Topology",
           "link_id", "natural_key", "parallel_index", "parse_name", "parse_zone", "port_number",
           "spine_leaf"]


@dataclass(frozen=True, order=True)
class Port:
    """One switch port, ``device:name``."""

    device: str
    name: str

    def __str__(self) -> str:
        return f"{self.device}:{self.name}"

    @classmethod
    def parse(cls, text: str) -> Port:
        device, sep, name = text.partition(":")
        if not sep or not device or not name:
            raise ConfigError(f"not a port (want device:port): {text!r}")
        return cls(device, name)


@dataclass(frozen=True)
class Link:
    """A switch-to-switch link; ``a`` is on the switch whose name sorts first."""

    id: str
    a: Port
    b: Port
    gbps: float

    def ends(self) -> tuple[Port, Port]:
        return (self.a, self.b)

    def other(self, port: Port) -> Port:
        return self.b if port == self.a else self.a


@dataclass(frozen=True)
class Host:
    """A host NIC and the leaf port it plugs into; its link is named by the host."""

    name: str
    port: Port
    gbps: float


@dataclass(frozen=True)
class Attached:
    """What one ``device:port`` label is plugged into: a fabric link, with the port at its other
    end (``far``, and its label), or a host (``far`` None)."""

    what: Link | Host
    far: Port | None = None
    far_label: str = ""


@dataclass(frozen=True)
class Topology:
    """A Clos fabric of two tiers (leaves, spines) or three (AI zones of leaves and spines,
    joined by aggregation switches): its switches, hosts and links, with lookups."""

    spines: tuple[str, ...]
    leaves: tuple[str, ...]
    hosts: tuple[Host, ...]
    links: tuple[Link, ...]
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    aggs: tuple[str, ...] = ()
    shape: FabricShape | None = field(default=None, compare=False, hash=False)
    #: zones given explicitly (a discovered fabric whose names carry none: inventory labels)
    zone_of: dict[str, int] = field(default_factory=dict, compare=False, hash=False)

    # ------------------------------------------------------------------ switches, tiers, zones

    @property
    def switches(self) -> tuple[str, ...]:
        """Every switch in topology order: aggregation switches, spines, leaves."""
        return self.aggs + self.spines + self.leaves

    @property
    def tiers(self) -> int:
        return 3 if self.aggs else 2

    @cached_property
    def _role(self) -> dict[str, str]:
        role = {s: SPINE for s in self.spines}
        role.update({leaf: LEAF for leaf in self.leaves})
        role.update({a: AGG for a in self.aggs})
        role.update({h.name: HOST for h in self.hosts})
        return role

    def role(self, device: str) -> str | None:
        """``leaf``, ``spine``, ``agg`` or ``host`` (None for a name not in the fabric)."""
        return self._role.get(device)

    def tier(self, device: str) -> int | None:
        """0 host, 1 leaf, 2 spine, 3 aggregation (None for a name not in the fabric)."""
        role = self._role.get(device)
        return None if role is None else TIER_OF_ROLE[role]

    @cached_property
    def _zone(self) -> dict[str, int]:
        zone: dict[str, int] = {}
        for sw in self.spines + self.leaves:
            parsed = parse_name(sw)
            named = parsed.zone if parsed is not None and parsed.zone is not None else None
            zone[sw] = self.zone_of.get(sw) or named or 1
        for h in self.hosts:
            zone[h.name] = zone.get(h.port.device, 1)
        return zone

    def zone(self, device: str) -> int | None:
        """The AI zone (1-based) of a leaf, spine or host; None for aggregation switches. A
        fabric without zone names is zone 1."""
        return self._zone.get(device)

    @cached_property
    def zones(self) -> tuple[int, ...]:
        return tuple(sorted({self._zone[s] for s in self.spines + self.leaves}))

    def zone_switches(self, zone: int) -> tuple[str, ...]:
        """The spines and leaves of one zone, in topology order."""
        return tuple(s for s in self.spines + self.leaves if self._zone[s] == zone)

    def zone_hosts(self, zone: int) -> tuple[Host, ...]:
        return tuple(h for h in self.hosts if self._zone[h.name] == zone)

    # ------------------------------------------------------------------ ports and links

    @cached_property
    def _by_port(self) -> dict[Port, Link | Host]:
        index: dict[Port, Link | Host] = {}
        for link in self.links:
            index[link.a] = link
            index[link.b] = link
        for host in self.hosts:
            index[host.port] = host
        return index

    @cached_property
    def _device_ports(self) -> dict[str, list[Port]]:
        out: dict[str, list[Port]] = {}
        for port in self._by_port:
            out.setdefault(port.device, []).append(port)
        for ports in out.values():
            ports.sort(key=lambda p: port_number(p.name))
        return out

    @cached_property
    def _device_links(self) -> dict[str, list[Link]]:
        out: dict[str, list[Link]] = {}
        for link in self.links:
            out.setdefault(link.a.device, []).append(link)
            out.setdefault(link.b.device, []).append(link)
        return out

    @cached_property
    def _leaf_hosts(self) -> dict[str, list[Host]]:
        out: dict[str, list[Host]] = {}
        for h in self.hosts:
            out.setdefault(h.port.device, []).append(h)
        return out

    @cached_property
    def link_by_id(self) -> dict[str, Link]:
        return {link.id: link for link in self.links}

    @cached_property
    def host_by_name(self) -> dict[str, Host]:
        return {host.name: host for host in self.hosts}

    @cached_property
    def _host_at(self) -> dict[str, int]:
        return {str(host.port): i for i, host in enumerate(self.hosts)}

    def hosts_at(self, labels: Iterable[str]) -> list[Host]:
        """The hosts plugged into the given ``device:port`` labels, in topology order (labels of
        other ports are passed over): a lookup of the few ports that matter, not a walk of every
        host."""
        index = self._host_at
        return [self.hosts[i] for i in sorted({index[lab] for lab in labels if lab in index})]

    @property
    def n_switch_ports(self) -> int:
        """Connected switch ports: both ends of every fabric link and each host's leaf port."""
        return 2 * len(self.links) + len(self.hosts)

    @cached_property
    def _by_label(self) -> dict[str, Attached]:
        out: dict[str, Attached] = {}
        for link in self.links:
            out[str(link.a)] = Attached(link, link.b, str(link.b))
            out[str(link.b)] = Attached(link, link.a, str(link.a))
        for host in self.hosts:
            out[str(host.port)] = Attached(host)
        return out

    def attached(self, label: str) -> Attached | None:
        """What the switch port ``device:port`` is plugged into, by its label (None for an
        unused port or a label that names no port): for hot paths that hold labels, without
        parsing them."""
        return self._by_label.get(label)

    def attachment(self, port: Port) -> Link | Host | None:
        """The link or host on a switch port, or None for an unused port."""
        return self._by_port.get(port)

    def peer(self, port: Port) -> Port | None:
        """The switch port at the other end of a fabric link (None for host ports)."""
        att = self._by_port.get(port)
        return att.other(port) if isinstance(att, Link) else None

    def entity_of(self, port: Port) -> str:
        """The name of what a port belongs to: a link id, a host, or the port itself."""
        att = self._by_port.get(port)
        if isinstance(att, Link):
            return att.id
        if isinstance(att, Host):
            return att.name
        return str(port)

    def ports(self, device: str) -> list[Port]:
        """Every connected port of a switch, in port order."""
        return list(self._device_ports.get(device, ()))

    def uplinks(self, device: str) -> list[Link]:
        """Every fabric link of a switch (a leaf's are its uplinks), in topology order."""
        return list(self._device_links.get(device, ()))

    def up_links(self, switch: str) -> list[Link]:
        """The links from a switch to the tier above it (a spine's: its aggregation uplinks)."""
        tier = self.tier(switch) or 0
        return [ln for ln in self._device_links.get(switch, ())
                if (self.tier(_far(ln, switch)) or 0) > tier]

    def down_links(self, switch: str) -> list[Link]:
        """The links from a switch to the tier below it (host links are not fabric links)."""
        tier = self.tier(switch) or 0
        return [ln for ln in self._device_links.get(switch, ())
                if (self.tier(_far(ln, switch)) or 0) < tier]

    def agg_uplinks(self, spine: str) -> list[Link]:
        """A spine's links to the aggregation tier (none in a two-tier fabric)."""
        return [ln for ln in self._device_links.get(spine, ())
                if self._role.get(_far(ln, spine)) == AGG]

    def host_ports(self, leaf: str) -> list[Host]:
        return list(self._leaf_hosts.get(leaf, ()))

    @cached_property
    def _leaf_host_labels(self) -> dict[str, frozenset[str]]:
        return {leaf: frozenset(str(h.port) for h in hosts)
                for leaf, hosts in self._leaf_hosts.items()}

    def host_labels(self, leaf: str) -> frozenset[str]:
        """The ``device:port`` labels of the leaf's host ports (for hot paths that hold
        labels)."""
        return self._leaf_host_labels.get(leaf, frozenset())

    def links_between(self, dev_a: str, dev_b: str) -> list[Link]:
        """The parallel links of a switch pair, ``#1`` first."""
        return [ln for ln in self._device_links.get(dev_a, ()) if _far(ln, dev_a) == dev_b]

    # ------------------------------------------------------------------ JSON

    def to_json(self) -> dict[str, Any]:
        """The report form: links with both ends, hosts with their leaf port; a three-tier fabric
        adds its aggregation switches and, when it has one, its compact shape."""
        out: dict[str, Any] = {"spines": list(self.spines), "leaves": list(self.leaves)}
        if self.aggs:
            out["aggs"] = list(self.aggs)
        out["links"] = [{"id": ln.id, "a": str(ln.a), "b": str(ln.b), "gbps": ln.gbps}
                        for ln in self.links]
        out["hosts"] = [{"name": h.name, "port": str(h.port), "gbps": h.gbps} for h in self.hosts]
        if self.aggs and self.shape is not None:
            out["shape"] = self.shape.to_json()
        if self.zone_of:
            out["zone_of"] = dict(self.zone_of)
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Topology:
        """The :meth:`to_json` form back; ``{"shape": {...}}`` alone builds the fabric it
        describes. Missing ``spines``/``leaves``/``aggs`` lists are inferred from the names."""
        try:
            shape = FabricShape.from_json(data["shape"]) if data.get("shape") else None
            if shape is not None and "links" not in data:
                return shape.build()
            links = tuple(
                Link(d["id"], Port.parse(d["a"]), Port.parse(d["b"]), float(d.get("gbps", 0)))
                for d in data["links"]
            )
            hosts = tuple(
                Host(d["name"], Port.parse(d["port"]), float(d.get("gbps", 0)))
                for d in data["hosts"]
            )
            devices = {p.device for ln in links for p in ln.ends()}
            spines = tuple(data.get("spines") or _named(devices, SPINE))
            leaves = tuple(data.get("leaves") or sorted({h.port.device for h in hosts},
                                                        key=natural_key))
            aggs = tuple(data.get("aggs") or _named(devices, AGG))
            zone_of = {str(k): int(v) for k, v in (data.get("zone_of") or {}).items()}
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise ConfigError(f"topology JSON is missing or mistypes {exc}") from exc
        return cls(spines=spines, leaves=leaves, hosts=hosts, links=links, aggs=aggs, shape=shape,
                   zone_of=zone_of)

    @classmethod
    def load(cls, path: str | Path) -> Topology:
        try:
            return cls.from_json(json.loads(Path(path).read_text()))
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigError(f"cannot read topology {path}: {exc}") from exc


def _far(link: Link, device: str) -> str:
    return link.b.device if link.a.device == device else link.a.device


def _named(devices: set[str], role: str) -> list[str]:
    found = []
    for d in devices:
        parsed = parse_name(d)
        if (parsed.role == role) if parsed is not None else d.startswith(role):
            found.append(d)
    return sorted(found, key=natural_key)


def spine_leaf(
    spines: int,
    leaves: int,
    hosts_per_leaf: int,
    uplinks_per_pair: int = 1,
    link_gbps: float = 400.0,
    host_gbps: float = 400.0,
) -> Topology:
    """Build a two-tier Clos with the shared naming and port numbering."""
    return FabricShape(spines, leaves, hosts_per_leaf, uplinks_per_pair, link_gbps,
                       host_gbps).build()
