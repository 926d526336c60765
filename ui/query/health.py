"""Health rolled up the fabric's hierarchy: entity → switch → group (zone, aggregation tier).

The rule, once:

* an entity that is not ok (:func:`ui.query.status.entity_statuses`) counts on every switch it
  touches: a switch itself, both ends of a link, a host's leaf, a port's switch;
* a switch's level is the worst of the entities on it; a group's is the worst of its switches;
* a group's problems are the distinct entities on its switches (a link between the aggregation
  tier and a zone counts in both); its worst are the first of them in the status order (worst
  first, root causes before symptoms);
* groups are listed worst first (then by more problems, then in topology order).

Maintenance (a drained link, an isolated host) is counted per switch and group beside the levels:
it is expected, not a level.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ui.query.fabric_index import FabricIndex, Group
from ui.query.views import LEVELS, Drained, EntityStatus, GroupHealth

OK = LEVELS.index("ok")
#: at most this many worst entities per group
WORST_PER_GROUP = 3


@dataclass(frozen=True)
class Rolled:
    """Per switch of an index: its level (an index into LEVELS), its worst entity, how many
    entities on it are not ok and how many are in maintenance."""

    level: NDArray[np.int8]
    worst: list[EntityStatus | None]
    problems: NDArray[np.int32]
    drained: NDArray[np.int32]
    #: per switch, the positions (in the statuses given) of the entities on it
    members: list[list[int]]
    statuses: Sequence[EntityStatus]
    #: per switch, the targets in maintenance on it
    held: list[list[str]]


def roll_up(index: FabricIndex, statuses: Sequence[EntityStatus],
            drained: Sequence[Drained] = ()) -> Rolled:
    """``statuses`` must be in the status order (worst first)."""
    n = len(index.switches)
    level = np.full(n, OK, np.int8)
    worst: list[EntityStatus | None] = [None] * n
    problems = np.zeros(n, np.int32)
    members: list[list[int]] = [[] for _ in range(n)]
    for pos, status in enumerate(statuses):
        rank = LEVELS.index(status.level)
        for s in index.switches_of(status.entity):
            problems[s] += 1
            members[s].append(pos)
            if worst[s] is None:  # the first is the worst: statuses come worst first
                level[s], worst[s] = rank, status
    held: list[list[str]] = [[] for _ in range(n)]
    for d in drained:
        for s in index.switches_of(d.target):
            held[s].append(d.target)
    return Rolled(level, worst, problems, np.array([len(h) for h in held], np.int32), members,
                  statuses, held)


def group_health(index: FabricIndex, group: Group, rolled: Rolled) -> GroupHealth:
    idx = np.asarray(group.switches, np.int64)
    levels = rolled.level[idx] if len(idx) else np.array([OK], np.int8)
    seen: dict[int, None] = {}
    for s in group.switches:
        for pos in rolled.members[s]:
            seen.setdefault(pos, None)
    order = sorted(seen)
    roles: dict[str, int] = {}
    for s in group.switches:
        roles[index.roles[s]] = roles.get(index.roles[s], 0) + 1
    counts = np.bincount(levels.astype(np.int64), minlength=len(LEVELS)) if len(idx) else \
        np.zeros(len(LEVELS), np.int64)
    drained = len({t for s in group.switches for t in rolled.held[s]})
    return GroupHealth(
        id=group.id, kind=group.kind,
        level=LEVELS[int(levels.min())], switches=len(group.switches), roles=roles,
        hosts=group.hosts, levels={LEVELS[i]: int(c) for i, c in enumerate(counts) if c},
        problems=len(order), drained=drained,
        worst=[rolled.statuses[p] for p in order[:WORST_PER_GROUP]])


def groups_worst_first(index: FabricIndex, rolled: Rolled) -> list[GroupHealth]:
    found = [(group_health(index, g, rolled), i) for i, g in enumerate(index.groups)]
    found.sort(key=lambda gi: (LEVELS.index(gi[0].level), -gi[0].problems, gi[1]))
    return [g for g, _ in found]
