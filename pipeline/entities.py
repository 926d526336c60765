"""What kind of thing an alert's entity names: the one rule, for every stage that labels or shows
an entity (remediation's receivers label alerts with it, so an Alertmanager route can match
``entity_kind="link"``; the read side colours and counts by it).

Kinds: ``link`` (a fabric link, ``leaf2~spine1``), ``links`` (several, comma-joined: a
deadlock's cycle), ``host``, ``switch``, ``port`` (``leaf2:Ethernet5``), ``other`` (anything
else, e.g. ``remediation`` for the platform's own alerts). The topology decides when it knows
the name; otherwise the fabric's shared naming does (the scenario format's names: ``~`` joins a
link's switches, ``:`` a device and its port, ``host5``, ``leaf2``, ``z3-spine1``, ``agg4``).
"""

from __future__ import annotations

from typing import Literal

from pipeline.topology.model import Topology
from pipeline.topology.names import HOST, parse_name

EntityKind = Literal["link", "links", "host", "switch", "port", "other"]
KINDS: tuple[EntityKind, ...] = ("link", "links", "host", "switch", "port", "other")


def entity_kind(entity: str, topology: Topology | None = None) -> EntityKind:
    if topology is not None:
        if entity in topology.link_by_id:
            return "link"
        if entity in topology.host_by_name:
            return "host"
        if topology.role(entity) is not None:
            return "switch"
    if "," in entity:
        return "links"
    if "~" in entity:
        return "link"
    if ":" in entity:
        return "port"
    parsed = parse_name(entity)
    if parsed is not None:
        return "host" if parsed.role == HOST else "switch"
    return "other"
