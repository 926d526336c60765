"""A scenario's fault entries validated: the target each kind takes, its params, a deadlock's cycle.

The kinds and what each targets are the scenario format's (``shared/scenarios/README.md``); each
failure is a :class:`~pipeline.errors.ConfigError` naming the key path.
"""

from __future__ import annotations

from typing import Any

from lab.scenario.checks import as_int, as_list, as_mapping, as_num, check_keys
from lab.scenario.spec import DIRECTIONS, SIDES, FaultSpec
from pipeline.errors import ConfigError
from pipeline.kinds import (
    FAULT_BUFFER_MISCONFIG,
    FAULT_ECMP_COLLISION,
    FAULT_INCAST,
    FAULT_KINDS,
    FAULT_LINK_CORRUPTION,
    FAULT_LINK_FLAP,
    FAULT_LLDP_NEIGHBOR_DROP,
    FAULT_MISWIRED_CABLE,
    FAULT_OPTICS_DEGRADE,
    FAULT_PFC_DEADLOCK,
    FAULT_PFC_STORM,
    FAULT_SLOW_RECEIVER,
    HOST_FAULTS,
    LINK_FAULTS,
    TOPOLOGY_FAULTS,
)
from pipeline.topology.model import Topology


def parse_fault(data: Any, path: str, topo: Topology, duration: float) -> FaultSpec:
    """One entry of ``faults``, validated (``path`` names it: ``faults[2]``)."""
    m = as_mapping(data, path)
    check_keys(m, path, required={"kind", "target", "at_s"}, optional={"until_s", "params"})
    kind = m["kind"]
    if kind not in FAULT_KINDS:
        raise ConfigError(f"unknown fault kind {kind!r}; one of {', '.join(FAULT_KINDS)}",
                          f"{path}.kind")
    target = m["target"]
    if kind == FAULT_PFC_DEADLOCK and isinstance(target, list):
        # the format's table names a deadlock's target "links": the cycle itself may be given
        # here, written as the comma-joined cycle (the form the platform reports it in)
        cycle_given = _cycle(target, f"{path}.target", topo)
        params_in = m.get("params") or {}
        if isinstance(params_in, dict) and "cycle" in params_in and \
                set(as_list(params_in["cycle"], f"{path}.params.cycle")) != set(cycle_given):
            raise ConfigError("the target's links and params.cycle name different cycles",
                              f"{path}.target")
        m = {**m, "params": {**(params_in if isinstance(params_in, dict) else {}),
                             "cycle": list(cycle_given)}}
        target = ",".join(cycle_given)
    if not isinstance(target, str) or not target:
        raise ConfigError("must be a string naming the fault's target", f"{path}.target")
    at_s = as_num(m["at_s"], f"{path}.at_s", lo=0, hi=duration, hi_open=True)
    until_s: float | None = None
    if m.get("until_s") is not None:
        until_s = as_num(m["until_s"], f"{path}.until_s", lo=at_s, lo_open=True, hi=duration)
    params_raw = m.get("params") or {}
    params = as_mapping(params_raw, f"{path}.params")
    ppath = f"{path}.params"
    checked: dict[str, Any]
    if kind in HOST_FAULTS:
        _target_host(target, f"{path}.target", topo)
    elif kind in LINK_FAULTS:
        _target_link(target, f"{path}.target", topo)
    elif kind in TOPOLOGY_FAULTS:
        _target_switch_link(target, f"{path}.target", topo)
    elif kind == FAULT_ECMP_COLLISION and target not in topo.leaves and not (
            target in topo.spines and topo.agg_uplinks(target)):
        where = "a leaf, or a spine with aggregation uplinks," if topo.aggs else "a leaf"
        raise ConfigError(f"{kind} targets {where} not {target!r}", f"{path}.target")
    elif kind == FAULT_BUFFER_MISCONFIG and target not in topo.switches:
        raise ConfigError(f"{kind} targets a switch, not {target!r}", f"{path}.target")
    if kind == FAULT_PFC_STORM:
        check_keys(params, ppath, required=set(), optional={"priority"})
        checked = {"priority": as_int(params.get("priority", 3), f"{ppath}.priority", lo=0,
                                         hi=7)}
    elif kind == FAULT_INCAST:
        check_keys(params, ppath, required={"fan_in"}, optional=set())
        checked = {"fan_in": as_int(params["fan_in"], f"{ppath}.fan_in", lo=1,
                                  hi=max(1, len(topo.hosts) - 1))}
    elif kind == FAULT_SLOW_RECEIVER:
        check_keys(params, ppath, required={"drain_fraction"}, optional=set())
        checked = {"drain_fraction": as_num(params["drain_fraction"], f"{ppath}.drain_fraction",
                                          lo=0, lo_open=True, hi=1, hi_open=True)}
    elif kind == FAULT_LINK_CORRUPTION:
        check_keys(params, ppath, required={"rate"}, optional={"direction"})
        direction = params.get("direction", "both")
        if direction not in DIRECTIONS:
            raise ConfigError(f"direction must be one of {', '.join(DIRECTIONS)}",
                              f"{ppath}.direction")
        checked = {"rate": as_num(params["rate"], f"{ppath}.rate", lo=0, lo_open=True, hi=1),
                   "direction": direction}
    elif kind == FAULT_LINK_FLAP:
        check_keys(params, ppath, required={"period_s", "down_s"}, optional=set())
        period = as_num(params["period_s"], f"{ppath}.period_s", lo=0, lo_open=True)
        down = as_num(params["down_s"], f"{ppath}.down_s", lo=0, lo_open=True, hi=period,
                    hi_open=True)
        checked = {"period_s": period, "down_s": down}
    elif kind == FAULT_OPTICS_DEGRADE:
        check_keys(params, ppath, required={"start_rate", "end_rate"}, optional=set())
        start = as_num(params["start_rate"], f"{ppath}.start_rate", lo=0, lo_open=True, hi=1)
        end = as_num(params["end_rate"], f"{ppath}.end_rate", lo=start, hi=1)
        checked = {"start_rate": start, "end_rate": end}
    elif kind == FAULT_ECMP_COLLISION:
        check_keys(params, ppath, required={"flows"}, optional=set())
        checked = {"flows": as_int(params["flows"], f"{ppath}.flows", lo=1, hi=100000)}
    elif kind == FAULT_BUFFER_MISCONFIG:
        check_keys(params, ppath, required={"xoff_fraction"}, optional=set())
        checked = {"xoff_fraction": as_num(params["xoff_fraction"], f"{ppath}.xoff_fraction",
                                         lo=0, lo_open=True, hi=1, hi_open=True)}
    elif kind == FAULT_PFC_DEADLOCK:
        check_keys(params, ppath, required={"cycle"}, optional=set())
        cycle = _cycle(params["cycle"], f"{ppath}.cycle", topo)
        if "," in target:
            if set(target.split(",")) != set(cycle):
                raise ConfigError(f"the target names links that are not the cycle {list(cycle)}",
                                  f"{path}.target")
        elif target not in cycle:
            raise ConfigError(f"the target must be one of the cycle's links {list(cycle)}",
                              f"{path}.target")
        checked = {"cycle": cycle}
    elif kind == FAULT_MISWIRED_CABLE:
        check_keys(params, ppath, required={"swap_with"}, optional=set())
        other = params["swap_with"]
        _target_switch_link(other, f"{ppath}.swap_with", topo)
        if other == target:
            raise ConfigError("a cable cannot be swapped with itself", f"{ppath}.swap_with")
        checked = {"swap_with": other}
    elif kind == FAULT_LLDP_NEIGHBOR_DROP:
        check_keys(params, ppath, required=set(), optional={"side"})
        side = params.get("side", "both")
        if side not in SIDES:
            raise ConfigError(f"side must be one of {', '.join(SIDES)}", f"{ppath}.side")
        checked = {"side": side}
    else:  # link_down
        check_keys(params, ppath, required=set(), optional=set())
        checked = {}
    return FaultSpec(kind, target, at_s, until_s, checked)


def _target_host(target: str, path: str, topo: Topology) -> None:
    if target not in topo.host_by_name:
        raise ConfigError(f"this fault targets a host; {target!r} is not one", path)


def _target_link(target: str, path: str, topo: Topology) -> None:
    if target not in topo.link_by_id and target not in topo.host_by_name:
        raise ConfigError(
            f"this fault targets a link (like leaf2~spine1, leaf2~spine1#2, agg2~z3-spine1 or a "
            f"host's link host5); {target!r} is not one", path)


def _target_switch_link(target: Any, path: str, topo: Topology) -> None:
    if not isinstance(target, str) or target not in topo.link_by_id:
        raise ConfigError(
            f"this fault targets a switch-to-switch link (like leaf2~spine1, leaf2~spine1#2 or "
            f"agg2~z3-spine1); {target!r} is not one", path)


def _cycle(data: Any, path: str, topo: Topology) -> tuple[str, ...]:
    items = as_list(data, path)
    if len(items) < 2:
        raise ConfigError("a cycle needs at least two links", path)
    ends: list[tuple[str, str]] = []
    for i, lid in enumerate(items):
        link = topo.link_by_id.get(lid) if isinstance(lid, str) else None
        if link is None:
            raise ConfigError(f"{lid!r} is not a switch-to-switch link", f"{path}[{i}]")
        ends.append((link.a.device, link.b.device))
    if len(set(items)) != len(items):
        raise ConfigError("a link appears twice in the cycle", path)
    if orient_cycle(ends) is None:
        raise ConfigError(
            "the links do not form a closed cycle (each link must continue from the switch where "
            "the previous one ends, and the last must end where the first starts)", path)
    return tuple(items)


def orient_cycle(ends: list[tuple[str, str]]) -> list[tuple[str, str]] | None:
    """Direct each link (from, to) so the links form a closed walk, or None if they cannot."""
    for first in (ends[0], ends[0][::-1]):
        walk = [first]
        for a, b in ends[1:]:
            here = walk[-1][1]
            if a == here:
                walk.append((a, b))
            elif b == here:
                walk.append((b, a))
            else:
                break
        else:
            if walk[-1][1] == walk[0][0]:
                return walk
    return None
