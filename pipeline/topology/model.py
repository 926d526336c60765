"""The fabric's topology as data: switches, host ports, links, and the names everyone shares.

Naming follows the scenario format (``shared/scenarios/README.md``): switches ``spine1..``,
``leaf1..``; hosts ``host1..`` numbered leaf by leaf; switch ports ``Ethernet1..`` with a leaf's
host-facing ports first, then its uplinks; a link is its two switch names sorted and joined by ``~``
(``leaf2~spine1``), the k-th parallel link of a pair adds ``#k`` for k >= 2; a host's link is named
by the host. This module is the one data type the lab and the platform share.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from pipeline.errors import ConfigError


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
class Topology:
    """A spine-leaf fabric: its switches, hosts and links, with lookups by port."""

    spines: tuple[str, ...]
    leaves: tuple[str, ...]
    hosts: tuple[Host, ...]
    links: tuple[Link, ...]
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def switches(self) -> tuple[str, ...]:
        return self.spines + self.leaves

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
    def link_by_id(self) -> dict[str, Link]:
        return {link.id: link for link in self.links}

    @cached_property
    def host_by_name(self) -> dict[str, Host]:
        return {host.name: host for host in self.hosts}

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
        found = [p for p in self._by_port if p.device == device]
        return sorted(found, key=lambda p: _port_number(p.name))

    def uplinks(self, leaf: str) -> list[Link]:
        return [link for link in self.links if leaf in (link.a.device, link.b.device)]

    def host_ports(self, leaf: str) -> list[Host]:
        return [h for h in self.hosts if h.port.device == leaf]

    def to_json(self) -> dict[str, Any]:
        """The report form: links with both ends, hosts with their leaf port."""
        return {
            "spines": list(self.spines),
            "leaves": list(self.leaves),
            "links": [
                {"id": ln.id, "a": str(ln.a), "b": str(ln.b), "gbps": ln.gbps} for ln in self.links
            ],
            "hosts": [{"name": h.name, "port": str(h.port), "gbps": h.gbps} for h in self.hosts],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Topology:
        try:
            links = tuple(
                Link(d["id"], Port.parse(d["a"]), Port.parse(d["b"]), float(d.get("gbps", 0)))
                for d in data["links"]
            )
            hosts = tuple(
                Host(d["name"], Port.parse(d["port"]), float(d.get("gbps", 0)))
                for d in data["hosts"]
            )
            spines = tuple(data.get("spines") or sorted({p.device for ln in links for p in ln.ends()
                                                          if p.device.startswith("spine")}))
            leaves = tuple(data.get("leaves") or sorted({h.port.device for h in hosts}))
        except (KeyError, TypeError) as exc:
            raise ConfigError(f"topology JSON is missing or mistypes {exc}") from exc
        return cls(spines=spines, leaves=leaves, hosts=hosts, links=links)

    @classmethod
    def load(cls, path: str | Path) -> Topology:
        try:
            return cls.from_json(json.loads(Path(path).read_text()))
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigError(f"cannot read topology {path}: {exc}") from exc


def _port_number(name: str) -> int:
    digits = "".join(ch for ch in name if ch.isdigit())
    return int(digits) if digits else 0


def link_id(dev_a: str, dev_b: str, k: int = 1) -> str:
    """The shared name of the k-th parallel link between two switches."""
    first, second = sorted((dev_a, dev_b))
    return f"{first}~{second}" + (f"#{k}" if k >= 2 else "")


def spine_leaf(
    spines: int,
    leaves: int,
    hosts_per_leaf: int,
    uplinks_per_pair: int = 1,
    link_gbps: float = 400.0,
    host_gbps: float = 400.0,
) -> Topology:
    """Build a two-tier Clos with the shared naming and port numbering."""
    if min(spines, leaves, uplinks_per_pair) < 1 or hosts_per_leaf < 0:
        raise ConfigError("a fabric needs at least one spine, one leaf and one uplink per pair")
    spine_names = tuple(f"spine{s}" for s in range(1, spines + 1))
    leaf_names = tuple(f"leaf{n}" for n in range(1, leaves + 1))
    hosts: list[Host] = []
    links: list[Link] = []
    for li, leaf in enumerate(leaf_names):
        for h in range(hosts_per_leaf):
            name = f"host{li * hosts_per_leaf + h + 1}"
            hosts.append(Host(name, Port(leaf, f"Ethernet{h + 1}"), host_gbps))
        for si, spine in enumerate(spine_names):
            for k in range(1, uplinks_per_pair + 1):
                leaf_port = Port(leaf, f"Ethernet{hosts_per_leaf + si * uplinks_per_pair + k}")
                spine_port = Port(spine, f"Ethernet{li * uplinks_per_pair + k}")
                a, b = sorted((leaf_port, spine_port), key=lambda p: p.device)
                links.append(Link(link_id(leaf, spine, k), a, b, link_gbps))
    return Topology(spines=spine_names, leaves=leaf_names, hosts=tuple(hosts), links=tuple(links))
