"""The fabric's shared names, as the scenario format spells them (``shared/scenarios/README.md``).

Two tiers: switches ``spine1..``, ``leaf1..``. Three tiers (AI zones joined by an aggregation
tier): ``z3-leaf2`` and ``z3-spine1`` (zone 3), ``agg1..``; a fabric of one zone keeps the
two-tier names. Hosts are ``host1..`` numbered zone by zone, leaf by leaf; switch ports
``Ethernet1..``. A link is its two switch names sorted and joined by ``~`` (``leaf2~spine1``,
``agg2~z3-spine1``); the k-th parallel link of a pair adds ``#k`` for k >= 2; a host's link is
named by the host. A zone is named ``z3``.

Roles sit on tiers counted from the hosts: leaf 1, spine 2, aggregation 3 (a host is 0).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

LEAF, SPINE, AGG, HOST = "leaf", "spine", "agg", "host"
TIER_OF_ROLE = {HOST: 0, LEAF: 1, SPINE: 2, AGG: 3}

_SWITCH = re.compile(r"^(?:z(\d+)-)?(leaf|spine)(\d+)$")
_AGG = re.compile(r"^agg(\d+)$")
_HOST = re.compile(r"^host(\d+)$")
_ZONE = re.compile(r"^z(\d+)$")


@dataclass(frozen=True)
class Name:
    """A parsed device name: its role, zone (None: no zone prefix, or an aggregation switch) and
    its number within its role and zone."""

    role: str
    zone: int | None
    number: int

    @property
    def tier(self) -> int:
        return TIER_OF_ROLE[self.role]


def parse_name(name: str) -> Name | None:
    """The role, zone and number a device name spells, or None when it follows no rule."""
    m = _SWITCH.match(name)
    if m:
        return Name(m.group(2), int(m.group(1)) if m.group(1) else None, int(m.group(3)))
    m = _AGG.match(name)
    if m:
        return Name(AGG, None, int(m.group(1)))
    m = _HOST.match(name)
    if m:
        return Name(HOST, None, int(m.group(1)))
    return None


def natural_key(name: str) -> tuple[int, int, int, str]:
    """Sort key putting names in topology order: aggregation, spines, leaves; zone, then number
    (``z2-leaf10`` after ``z2-leaf9``); names that follow no rule last, alphabetically."""
    parsed = parse_name(name)
    if parsed is None:
        return (9, 0, 0, name)
    order = {AGG: 0, SPINE: 1, LEAF: 2, HOST: 3}[parsed.role]
    return (order, parsed.zone or 0, parsed.number, name)


def switch_name(role: str, number: int, zone: int | None = None) -> str:
    """``leaf2``, ``z3-spine1`` or ``agg4``; ``zone`` is given only in fabrics of several zones."""
    if role == AGG:
        return f"agg{number}"
    return f"z{zone}-{role}{number}" if zone is not None else f"{role}{number}"


def zone_name(zone: int) -> str:
    return f"z{zone}"


def parse_zone(name: str) -> int | None:
    """3 for ``z3``; None for anything else."""
    m = _ZONE.match(name)
    return int(m.group(1)) if m else None


def link_id(dev_a: str, dev_b: str, k: int = 1) -> str:
    """The shared name of the k-th parallel link between two switches."""
    first, second = sorted((dev_a, dev_b))
    return f"{first}~{second}" + (f"#{k}" if k >= 2 else "")


def parallel_index(link: str) -> int:
    """k of a link id's ``#k`` (1 when there is none)."""
    _, sep, k = link.partition("#")
    return int(k) if sep else 1


def port_number(port_name: str) -> int:
    """k of ``Ethernet<k>`` (0 when the name has no digits)."""
    if port_name.startswith("Ethernet") and port_name[8:].isdigit():
        return int(port_name[8:])
    digits = "".join(ch for ch in port_name if ch.isdigit())
    return int(digits) if digits else 0
