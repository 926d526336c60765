"""Scenario files (format 1): loading, strict validation, and the ground truth they imply.

The format is specified in ``shared/scenarios/README.md``. Every field is validated here; an unknown
key or a bad value raises :class:`~pipeline.errors.ConfigError` naming the key path
(``faults[2].params.fan_in``). A validated :class:`Scenario` is immutable and picklable, so the
simulation process can rebuild the identical fabric from it (same seed, same run).

Optional top-level fields and their defaults: ``sample_interval_s`` 1, ``routing`` ``ecmp``,
``traffic`` none, ``faults`` none. In ``fabric``: ``uplinks_per_pair`` 1, ``link_gbps`` and
``host_gbps`` 400, ``agents`` all gNMI, ``profiles`` ``[openconfig]``. In a traffic entry: ``hosts``
``all``, ``load`` 1.0, ``qps_per_flow`` 1.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from lab.scenario.checks import as_int, as_list, as_mapping, as_num, check_keys
from pipeline.errors import ConfigError
from pipeline.topology.model import Topology, spine_leaf

ROUTING_MODES = ("ecmp", "eecmp", "pinned", "te")
PATTERNS = ("allreduce", "alltoall", "uniform", "incast", "none")
PROFILES = ("openconfig", "arista", "sonic")
DIRECTIONS = ("a_to_b", "b_to_a", "both")
FAULT_KINDS = (
    "pfc_storm",
    "incast",
    "slow_receiver",
    "link_corruption",
    "link_flap",
    "optics_degrade",
    "ecmp_collision",
    "buffer_misconfig",
    "pfc_deadlock",
    "link_down",
)

# Sanity bounds: a clear error beats an out-of-memory simulation.
_MAX_SWITCHES_PER_TIER = 512
_MAX_HOSTS = 16384


@dataclass(frozen=True)
class AgentMix:
    """Fractions of switches reached over gNMI and over SNMP (they sum to 1)."""

    gnmi: float = 1.0
    snmp: float = 0.0


@dataclass(frozen=True)
class FabricSpec:
    spines: int
    leaves: int
    hosts_per_leaf: int
    uplinks_per_pair: int = 1
    link_gbps: float = 400.0
    host_gbps: float = 400.0
    agents: AgentMix = AgentMix()
    profiles: tuple[str, ...] = ("openconfig",)


@dataclass(frozen=True)
class TrafficSpec:
    """One superposed traffic entry; ``hosts`` is resolved to host names in rank order given."""

    pattern: str
    hosts: tuple[str, ...]
    load: float = 1.0
    qps_per_flow: int = 1


@dataclass(frozen=True)
class FaultSpec:
    kind: str
    target: str
    at_s: float
    until_s: float | None
    params: Mapping[str, Any] = field(default_factory=dict)

    def end_s(self, duration_s: float) -> float:
        return self.until_s if self.until_s is not None else duration_s

    def active(self, t: float, duration_s: float) -> bool:
        # a little slack: simulated time is a multiple of a float step
        return self.at_s - 1e-9 <= t < self.end_s(duration_s) - 1e-9


@dataclass(frozen=True)
class Scenario:
    name: str
    seed: int
    duration_s: float
    sample_interval_s: float
    fabric: FabricSpec
    routing: str
    traffic: tuple[TrafficSpec, ...]
    faults: tuple[FaultSpec, ...]
    source: str = ""

    def topology(self) -> Topology:
        f = self.fabric
        return spine_leaf(f.spines, f.leaves, f.hosts_per_leaf, f.uplinks_per_pair,
                          f.link_gbps, f.host_gbps)

    def truth(self) -> list[dict[str, Any]]:
        """The injected faults as the run report's ``truth`` entries."""
        return [
            {"kind": f.kind, "target": f.target, "start_s": f.at_s,
             "end_s": f.end_s(self.duration_s)}
            for f in self.faults
        ]


# --------------------------------------------------------------------------------------------
# loading


class _StrictLoader(yaml.SafeLoader):
    """A YAML loader that refuses duplicate mapping keys (PyYAML keeps the last one silently)."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    out: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node)
        if key in out:
            raise ConfigError(f"duplicate key {key!r} (line {key_node.start_mark.line + 1})")
        out[key] = loader.construct_object(value_node)
    return out


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario file."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise ConfigError(f"cannot read scenario {p}: {exc}") from exc
    try:
        data = yaml.load(text, Loader=_StrictLoader)
    except yaml.YAMLError as exc:
        raise ConfigError(f"scenario {p} is not valid YAML: {exc}") from exc
    return parse_scenario(data, source=str(p))


def parse_scenario(data: Any, source: str = "") -> Scenario:
    """Validate a scenario already parsed into Python values."""
    root = as_mapping(data, "")
    check_keys(root, "", required={"format", "name", "seed", "duration_s", "fabric"},
          optional={"sample_interval_s", "routing", "traffic", "faults"})
    fmt = root["format"]
    if fmt != 1 or isinstance(fmt, bool):
        raise ConfigError(f"unsupported scenario format {fmt!r}; this lab reads format 1", "format")
    name = root["name"]
    if not isinstance(name, str) or not name.strip():
        raise ConfigError("must be a non-empty string", "name")
    seed = as_int(root["seed"], "seed", lo=0)
    duration = as_num(root["duration_s"], "duration_s", lo=0, lo_open=True)
    interval = as_num(root.get("sample_interval_s", 1), "sample_interval_s", lo=0, lo_open=True,
                    hi=duration)
    fabric = _fabric(root["fabric"], "fabric")
    topo = spine_leaf(fabric.spines, fabric.leaves, fabric.hosts_per_leaf,
                      fabric.uplinks_per_pair, fabric.link_gbps, fabric.host_gbps)
    routing = root.get("routing", "ecmp")
    if routing not in ROUTING_MODES:
        raise ConfigError(f"unknown routing {routing!r}; one of {', '.join(ROUTING_MODES)}",
                          "routing")
    traffic_raw = root.get("traffic") or []
    traffic = tuple(_traffic(t, f"traffic[{i}]", topo)
                    for i, t in enumerate(as_list(traffic_raw, "traffic")))
    faults_raw = root.get("faults") or []
    faults = tuple(_fault(f, f"faults[{i}]", topo, duration)
                   for i, f in enumerate(as_list(faults_raw, "faults")))
    return Scenario(name=name, seed=seed, duration_s=duration, sample_interval_s=interval,
                    fabric=fabric, routing=routing, traffic=traffic, faults=faults, source=source)


# --------------------------------------------------------------------------------------------
# sections


def _fabric(data: Any, path: str) -> FabricSpec:
    m = as_mapping(data, path)
    check_keys(m, path, required={"spines", "leaves", "hosts_per_leaf"},
          optional={"uplinks_per_pair", "link_gbps", "host_gbps", "agents", "profiles"})
    spines = as_int(m["spines"], f"{path}.spines", lo=1, hi=_MAX_SWITCHES_PER_TIER)
    leaves = as_int(m["leaves"], f"{path}.leaves", lo=1, hi=_MAX_SWITCHES_PER_TIER)
    hpl = as_int(m["hosts_per_leaf"], f"{path}.hosts_per_leaf", lo=0, hi=_MAX_HOSTS)
    if leaves * hpl > _MAX_HOSTS:
        raise ConfigError(f"{leaves * hpl} hosts is more than this lab simulates ({_MAX_HOSTS})",
                          f"{path}.hosts_per_leaf")
    upp = as_int(m.get("uplinks_per_pair", 1), f"{path}.uplinks_per_pair", lo=1, hi=16)
    link_gbps = as_num(m.get("link_gbps", 400), f"{path}.link_gbps", lo=0, lo_open=True, hi=1.6e4)
    host_gbps = as_num(m.get("host_gbps", 400), f"{path}.host_gbps", lo=0, lo_open=True, hi=1.6e4)
    agents = _agents(m.get("agents"), f"{path}.agents")
    profiles: tuple[str, ...] = ("openconfig",)
    if "profiles" in m:
        items = as_list(m["profiles"], f"{path}.profiles")
        if not items:
            raise ConfigError("must list at least one profile", f"{path}.profiles")
        for i, prof in enumerate(items):
            if prof not in PROFILES:
                raise ConfigError(f"unknown profile {prof!r}; one of {', '.join(PROFILES)}",
                                  f"{path}.profiles[{i}]")
        profiles = tuple(items)
    return FabricSpec(spines, leaves, hpl, upp, link_gbps, host_gbps, agents, profiles)


def _agents(data: Any, path: str) -> AgentMix:
    if data is None:
        return AgentMix()
    m = as_mapping(data, path)
    check_keys(m, path, required=set(), optional={"gnmi", "snmp"})
    if not m:
        raise ConfigError("give gnmi and/or snmp fractions", path)
    gnmi = as_num(m["gnmi"], f"{path}.gnmi", lo=0, hi=1) if "gnmi" in m else None
    snmp = as_num(m["snmp"], f"{path}.snmp", lo=0, hi=1) if "snmp" in m else None
    if gnmi is None:
        gnmi = 1.0 - float(snmp or 0.0)
    if snmp is None:
        snmp = 1.0 - gnmi
    if abs(gnmi + snmp - 1.0) > 1e-9:
        raise ConfigError(f"gnmi + snmp must be 1 (got {gnmi} + {snmp})", path)
    return AgentMix(float(gnmi), float(snmp))


def _traffic(data: Any, path: str, topo: Topology) -> TrafficSpec:
    m = as_mapping(data, path)
    check_keys(m, path, required={"pattern"}, optional={"hosts", "load", "qps_per_flow"})
    pattern = m["pattern"]
    if pattern not in PATTERNS:
        raise ConfigError(f"unknown pattern {pattern!r}; one of {', '.join(PATTERNS)}",
                          f"{path}.pattern")
    hosts = _hosts(m.get("hosts", "all"), f"{path}.hosts", topo)
    load = as_num(m.get("load", 1.0), f"{path}.load", lo=0, lo_open=True, hi=1)
    qps = as_int(m.get("qps_per_flow", 1), f"{path}.qps_per_flow", lo=1, hi=64)
    need = 0 if pattern == "none" else 2
    if len(hosts) < need:
        raise ConfigError(f"pattern {pattern} needs at least {need} hosts, got {len(hosts)}",
                          f"{path}.hosts")
    return TrafficSpec(pattern, hosts, load, qps)


def _hosts(data: Any, path: str, topo: Topology) -> tuple[str, ...]:
    names = [h.name for h in topo.hosts]
    if data == "all":
        return tuple(names)
    if isinstance(data, str):
        if data in topo.leaves:
            return tuple(h.name for h in topo.host_ports(data))
        raise ConfigError(f"{data!r} is neither 'all', a leaf, nor a list of hosts", path)
    items = as_list(data, path)
    if not items:
        raise ConfigError("must list at least one host", path)
    known = set(names)
    seen: set[str] = set()
    for i, h in enumerate(items):
        if h not in known:
            raise ConfigError(f"unknown host {h!r} (hosts are host1..host{len(names)})",
                              f"{path}[{i}]")
        if h in seen:
            raise ConfigError(f"host {h!r} is listed twice", f"{path}[{i}]")
        seen.add(h)
    return tuple(items)


def _fault(data: Any, path: str, topo: Topology, duration: float) -> FaultSpec:
    m = as_mapping(data, path)
    check_keys(m, path, required={"kind", "target", "at_s"}, optional={"until_s", "params"})
    kind = m["kind"]
    if kind not in FAULT_KINDS:
        raise ConfigError(f"unknown fault kind {kind!r}; one of {', '.join(FAULT_KINDS)}",
                          f"{path}.kind")
    target = m["target"]
    if kind == "pfc_deadlock" and isinstance(target, list):
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
    if kind in ("pfc_storm", "incast", "slow_receiver"):
        _target_host(target, f"{path}.target", topo)
    elif kind in ("link_corruption", "link_flap", "optics_degrade", "link_down"):
        _target_link(target, f"{path}.target", topo)
    elif kind == "ecmp_collision" and target not in topo.leaves:
        raise ConfigError(f"{kind} targets a leaf, not {target!r}", f"{path}.target")
    elif kind == "buffer_misconfig" and target not in topo.switches:
        raise ConfigError(f"{kind} targets a switch, not {target!r}", f"{path}.target")
    if kind == "pfc_storm":
        check_keys(params, ppath, required=set(), optional={"priority"})
        checked = {"priority": as_int(params.get("priority", 3), f"{ppath}.priority", lo=0,
                                         hi=7)}
    elif kind == "incast":
        check_keys(params, ppath, required={"fan_in"}, optional=set())
        checked = {"fan_in": as_int(params["fan_in"], f"{ppath}.fan_in", lo=1,
                                  hi=max(1, len(topo.hosts) - 1))}
    elif kind == "slow_receiver":
        check_keys(params, ppath, required={"drain_fraction"}, optional=set())
        checked = {"drain_fraction": as_num(params["drain_fraction"], f"{ppath}.drain_fraction",
                                          lo=0, lo_open=True, hi=1, hi_open=True)}
    elif kind == "link_corruption":
        check_keys(params, ppath, required={"rate"}, optional={"direction"})
        direction = params.get("direction", "both")
        if direction not in DIRECTIONS:
            raise ConfigError(f"direction must be one of {', '.join(DIRECTIONS)}",
                              f"{ppath}.direction")
        checked = {"rate": as_num(params["rate"], f"{ppath}.rate", lo=0, lo_open=True, hi=1),
                   "direction": direction}
    elif kind == "link_flap":
        check_keys(params, ppath, required={"period_s", "down_s"}, optional=set())
        period = as_num(params["period_s"], f"{ppath}.period_s", lo=0, lo_open=True)
        down = as_num(params["down_s"], f"{ppath}.down_s", lo=0, lo_open=True, hi=period,
                    hi_open=True)
        checked = {"period_s": period, "down_s": down}
    elif kind == "optics_degrade":
        check_keys(params, ppath, required={"start_rate", "end_rate"}, optional=set())
        start = as_num(params["start_rate"], f"{ppath}.start_rate", lo=0, lo_open=True, hi=1)
        end = as_num(params["end_rate"], f"{ppath}.end_rate", lo=start, hi=1)
        checked = {"start_rate": start, "end_rate": end}
    elif kind == "ecmp_collision":
        check_keys(params, ppath, required={"flows"}, optional=set())
        checked = {"flows": as_int(params["flows"], f"{ppath}.flows", lo=1, hi=100000)}
    elif kind == "buffer_misconfig":
        check_keys(params, ppath, required={"xoff_fraction"}, optional=set())
        checked = {"xoff_fraction": as_num(params["xoff_fraction"], f"{ppath}.xoff_fraction",
                                         lo=0, lo_open=True, hi=1, hi_open=True)}
    elif kind == "pfc_deadlock":
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
            f"this fault targets a link (like leaf2~spine1, leaf2~spine1#2, or a host's link "
            f"host5); {target!r} is not one", path)


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
