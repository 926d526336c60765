"""Reading a scenario file (format 1): strict YAML, and validation of every field.

An unknown key or a bad value raises :class:`~pipeline.errors.ConfigError` naming the key path
(``faults[2].params.fan_in``); the fault entries are checked by :mod:`lab.scenario.fault_checks`.

Optional top-level fields and their defaults: ``sample_interval_s`` 1, ``routing`` ``ecmp``,
``traffic`` none, ``faults`` none. In ``fabric``: ``uplinks_per_pair`` 1, ``link_gbps`` and
``host_gbps`` 400, ``agents`` all gNMI, ``profiles`` ``[openconfig]``. In a traffic entry: ``hosts``
``all``, ``load`` 1.0, ``qps_per_flow`` 1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from lab.scenario.checks import as_int, as_list, as_mapping, as_num, check_keys
from lab.scenario.fault_checks import parse_fault
from lab.scenario.spec import (
    PATTERNS,
    PROFILES,
    ROUTING_MODES,
    AgentMix,
    FabricSpec,
    Scenario,
    TrafficSpec,
    build_topology,
)
from pipeline.errors import ConfigError
from pipeline.topology.model import Topology, parse_zone

# Sanity bounds: a clear error beats an out-of-memory simulation (the 24,576-GPU reference fabric
# of 8 zones x 96 leaves x 32 hosts fits).
_MAX_SWITCHES_PER_TIER = 512
_MAX_ZONES = 64
_MAX_HOSTS = 65536


class _StrictLoader(yaml.SafeLoader):
    """A YAML loader that refuses duplicate mapping keys (PyYAML keeps the last one silently)."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    out: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node)
        if isinstance(key, (list, dict, set)):  # YAML allows "? [a, b]"; no scenario key is one
            raise ConfigError(f"a key must be a name, not {key!r} (line "
                              f"{key_node.start_mark.line + 1})")
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
    topo = build_topology(fabric.shape)
    routing = root.get("routing", "ecmp")
    if routing not in ROUTING_MODES:
        raise ConfigError(f"unknown routing {routing!r}; one of {', '.join(ROUTING_MODES)}",
                          "routing")
    traffic_raw = root.get("traffic") or []
    traffic = tuple(_traffic(t, f"traffic[{i}]", topo)
                    for i, t in enumerate(as_list(traffic_raw, "traffic")))
    faults_raw = root.get("faults") or []
    faults = tuple(parse_fault(f, f"faults[{i}]", topo, duration)
                   for i, f in enumerate(as_list(faults_raw, "faults")))
    return Scenario(name=name, seed=seed, duration_s=duration, sample_interval_s=interval,
                    fabric=fabric, routing=routing, traffic=traffic, faults=faults, source=source)


def _fabric(data: Any, path: str) -> FabricSpec:
    m = as_mapping(data, path)
    check_keys(m, path, required={"spines", "leaves", "hosts_per_leaf"},
          optional={"uplinks_per_pair", "link_gbps", "host_gbps", "agents", "profiles",
                    "zones", "aggs", "agg_uplinks_per_spine", "agg_gbps"})
    spines = as_int(m["spines"], f"{path}.spines", lo=1, hi=_MAX_SWITCHES_PER_TIER)
    leaves = as_int(m["leaves"], f"{path}.leaves", lo=1, hi=_MAX_SWITCHES_PER_TIER)
    hpl = as_int(m["hosts_per_leaf"], f"{path}.hosts_per_leaf", lo=0, hi=_MAX_HOSTS)
    zones = as_int(m.get("zones", 1), f"{path}.zones", lo=1, hi=_MAX_ZONES)
    if zones * leaves * hpl > _MAX_HOSTS:
        raise ConfigError(f"{zones * leaves * hpl} hosts is more than this lab simulates "
                          f"({_MAX_HOSTS})", f"{path}.hosts_per_leaf")
    aggs = 0
    if "aggs" in m:
        aggs = as_int(m["aggs"], f"{path}.aggs", lo=1, hi=_MAX_SWITCHES_PER_TIER)
    elif zones > 1:
        raise ConfigError(f"{zones} zones need aggregation switches to join them", f"{path}.aggs")
    for key in ("agg_uplinks_per_spine", "agg_gbps"):
        if key in m and not aggs:
            raise ConfigError("describes the aggregation tier: give aggs too", f"{path}.{key}")
    agg_upp = as_int(m.get("agg_uplinks_per_spine", 1), f"{path}.agg_uplinks_per_spine", lo=1,
                     hi=16)
    agg_gbps = (as_num(m["agg_gbps"], f"{path}.agg_gbps", lo=0, lo_open=True, hi=1.6e4)
                if "agg_gbps" in m else None)
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
    return FabricSpec(spines, leaves, hpl, upp, link_gbps, host_gbps, agents, profiles, zones,
                      aggs, agg_upp, agg_gbps)


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
        zone = parse_zone(data)
        if zone is not None and zone in topo.zones and len(topo.zones) > 1:
            return tuple(h.name for h in topo.zone_hosts(zone))
        raise ConfigError(f"{data!r} is neither 'all', a leaf, a zone (z1..), nor a list of "
                          "hosts", path)
    items = as_list(data, path)
    if not items:
        raise ConfigError("must list at least one host", path)
    known = set(names)
    seen: set[str] = set()
    for i, h in enumerate(items):
        if not isinstance(h, str) or h not in known:
            raise ConfigError(f"unknown host {h!r} (hosts are host1..host{len(names)})",
                              f"{path}[{i}]")
        if h in seen:
            raise ConfigError(f"host {h!r} is listed twice", f"{path}[{i}]")
        seen.add(h)
    return tuple(items)
