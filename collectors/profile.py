"""Vendor profiles: the data files that map a dialect's paths or OIDs onto catalog metrics.

A profile is a YAML file in ``collectors/profiles/`` (or a directory named in a collector's
options); its file name is its name. Adding a vendor is adding a file: nothing in the code lists
vendors. Two shapes exist, picked by ``protocol``:

* ``gnmi``: subscription groups, each a path template (``{port}`` / ``{qual}`` capture the port
  and the priority or queue, ``*`` matches anything), a SAMPLE or ON_CHANGE mode, and leaves,
  relative templates mapped to metrics. JSON values that hold maps (SONiC's COUNTERS_DB) continue
  the path with their keys, so ``{port}/SAI_PORT_STAT_IF_IN_OCTETS`` matches inside them.
* ``snmp``: table columns by numeric OID, with the table's index layout (``ifindex``,
  ``priority``, ``queue``, or any other name used to select rows).

Profiles are validated strictly when loaded; a metric must exist in the catalog and its qualifier
must be captured exactly when the catalog says the metric has one.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, model_validator

from pipeline.config import Strict, read_yaml, validate
from pipeline.errors import ConfigError
from pipeline.metrics import CATALOG, METRIC_ID

BUILTIN_DIR = Path(__file__).with_name("profiles")


def _leaf_shorthand(value: Any) -> Any:
    """``in-octets: if_in_octets`` is short for ``{metric: if_in_octets}``."""
    return {"metric": value} if isinstance(value, str) else value


class Leaf(Strict):
    """How one leaf becomes a sample: the metric, and how its value is read."""

    metric: str
    #: name of a table in the profile's ``enums`` that turns strings into numbers
    enum: str = ""
    #: multiply the value (Mb/s → b/s, TimeTicks → s)
    scale: float = 1.0
    #: the source is a 32-bit counter that wraps at 2**32
    counter32: bool = False

    @model_validator(mode="after")
    def _known_metric(self) -> Leaf:
        if self.metric not in METRIC_ID:
            raise ValueError(f"unknown metric {self.metric!r} (not in pipeline.metrics)")
        return self

    @property
    def metric_code(self) -> int:
        return METRIC_ID[self.metric]


LeafSpec = Annotated[Leaf, BeforeValidator(_leaf_shorthand)]


class GnmiGroup(Strict):
    """One subscription path and the leaves under it."""

    path: str
    mode: Literal["sample", "on_change"] = "sample"
    #: ``container`` subscribes to ``path``; ``leaves`` subscribes to each leaf on its own
    #: (ON_CHANGE status leaves must not drag their noisy siblings along)
    subscribe: Literal["container", "leaves"] = "container"
    #: ``prefix.target`` of the subscription (SONiC names the database here)
    target: str = ""
    #: overrides the profile's origin for this group
    origin: str | None = None
    leaves: dict[str, LeafSpec]


class LldpSource(Strict):
    """How a gNMI target's LLDP neighbours are read (:mod:`collectors.gnmi.lldp`)."""

    #: ``openconfig``: /lldp (OpenConfig, Arista EOS); ``sonic``: APPL_DB's LLDP tables;
    #: ``none``: not read
    dialect: Literal["openconfig", "sonic", "none"] = "openconfig"
    #: ``on_change``: a STREAM ON_CHANGE subscription, a report when the table changes (the
    #: default); ``get``: a Get per LLDP interval; ``once``: a ONCE subscription per LLDP
    #: interval (targets with neither ON_CHANGE for LLDP nor Get)
    rpc: Literal["on_change", "get", "once"] = "on_change"


class GnmiProfile(Strict):
    name: str
    protocol: Literal["gnmi"]
    description: str = ""
    origin: str = ""
    encoding: Literal["json_ietf", "json", "proto"] = "json_ietf"
    enums: dict[str, dict[str, int]] = Field(default_factory=dict)
    groups: tuple[GnmiGroup, ...]
    lldp: LldpSource = LldpSource()
    #: path templates that are known and deliberately not mapped (not counted as unknown)
    ignore: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _check(self) -> GnmiProfile:
        for group in self.groups:
            for rel, leaf in group.leaves.items():
                where = f"{group.path} → {rel or '.'}"
                if leaf.enum and leaf.enum not in self.enums:
                    raise ValueError(f"{where}: enum {leaf.enum!r} is not in enums")
                _check_captures(f"{group.path}/{rel}", leaf.metric, where)
        return self


class SnmpColumn(Strict):
    """One table column (or scalar) and the metric its rows carry."""

    oid: str = Field(pattern=r"^\d+(\.\d+)+$")
    #: the metric of every row; leave empty and use ``by`` when an index picks the metric
    metric: str = ""
    #: names of the index components after the column OID, in order
    index: tuple[str, ...] = ("ifindex",)
    #: rows are kept only when these index components have these values
    where: dict[str, int] = Field(default_factory=dict)
    #: ``{component: {value: metric}}``: an index component names the metric
    by: dict[str, dict[int, str]] = Field(default_factory=dict)
    #: the index value of queue 0 (CISCO-SWITCH-QOS-MIB counts queues from 1)
    queue_base: int = 0
    scale: float = 1.0
    #: walked only when the column of the same metric without ``fallback`` returned nothing
    fallback: bool = False

    @model_validator(mode="after")
    def _check(self) -> SnmpColumn:
        if bool(self.metric) == bool(self.by):
            raise ValueError(f"{self.oid}: give exactly one of metric or by")
        if "ifindex" not in self.index:
            raise ValueError(f"{self.oid}: index must contain ifindex")
        for comp in [*self.where, *self.by]:
            if comp not in self.index:
                raise ValueError(f"{self.oid}: {comp!r} is not an index component")
        for name in self.metrics():
            if name not in METRIC_ID:
                raise ValueError(f"{self.oid}: unknown metric {name!r}")
            qualifier = CATALOG[METRIC_ID[name]].qualifier
            has = {"priority", "queue"} & set(self.index)
            if (qualifier is None) != (not has) or (qualifier and qualifier not in has):
                raise ValueError(f"{self.oid}: metric {name} has qualifier {qualifier}, "
                                 f"the index gives {sorted(has) or 'none'}")
        return self

    def metrics(self) -> list[str]:
        return [self.metric] if self.metric else sorted({m for t in self.by.values()
                                                         for m in t.values()})


class SnmpSystem(Strict):
    sys_uptime: str = "1.3.6.1.2.1.1.3.0"
    hr_system_date: str = "1.3.6.1.2.1.25.1.2.0"
    if_name: str = "1.3.6.1.2.1.31.1.1.1.1"
    #: names the ports of a device without ifName
    if_descr: str = "1.3.6.1.2.1.2.2.1.2"


class SnmpProfile(Strict):
    name: str
    protocol: Literal["snmp"]
    description: str = ""
    system: SnmpSystem = SnmpSystem()
    columns: tuple[SnmpColumn, ...]


Profile = GnmiProfile | SnmpProfile


def _check_captures(template: str, metric: str, where: str) -> None:
    qualifier = CATALOG[METRIC_ID[metric]].qualifier
    if template.count("{port}") != 1:
        raise ValueError(f"{where}: the path must capture {{port}} exactly once")
    if (qualifier is None) == ("{qual}" in template):
        want = "capture {qual}" if qualifier else "not capture {qual}"
        raise ValueError(f"{where}: metric {metric} has qualifier {qualifier}; "
                         f"the path must {want}")


def profile_dirs(extra: tuple[str, ...] = ()) -> tuple[Path, ...]:
    """Where profiles are looked up: the given directories first, then the built-ins."""
    return (*(Path(d) for d in extra), BUILTIN_DIR)


def available(extra: tuple[str, ...] = ()) -> dict[str, Path]:
    """Profile name → file, the first directory that has a name winning."""
    found: dict[str, Path] = {}
    for directory in profile_dirs(extra):
        if directory.is_dir():
            for path in sorted(directory.glob("*.yaml")):
                found.setdefault(path.stem, path)
    return found


@cache
def _load_file(path: Path) -> Profile:
    data = read_yaml(path)
    proto = data.get("protocol")
    model: type[GnmiProfile] | type[SnmpProfile]
    if proto == "gnmi":
        model = GnmiProfile
    elif proto == "snmp":
        model = SnmpProfile
    else:
        raise ConfigError(f"protocol must be gnmi or snmp, not {proto!r}", f"{path}: protocol")
    profile = validate(model, data, str(path))
    if profile.name != path.stem:
        raise ConfigError(f"name {profile.name!r} must match the file name {path.stem!r}",
                          f"{path}: name")
    return profile


def load_profile(name: str, extra: tuple[str, ...] = ()) -> Profile:
    """Load and validate a profile by name; unknown names list the available ones."""
    files = available(extra)
    if name not in files:
        raise ConfigError(f"no profile named {name!r}; available: {', '.join(sorted(files))}")
    return _load_file(files[name])
