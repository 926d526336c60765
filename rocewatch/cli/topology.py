"""``rocewatch topology ...``: the fabric's topology as its devices describe it over LLDP.

``discover`` reads every gNMI and SNMP target of the config's collectors once
(:mod:`collectors.neighbors`), builds the topology (:mod:`pipeline.topology.discover`: roles from
the targets' ``labels.role`` or their names, zones from ``labels.pod`` (``z3`` or ``3``) or their
names) and writes it as the topology JSON ``settings.topology`` reads (``Topology.to_json``). What
did not fit (unreadable targets, links one end does not show, sightings the far end contradicts,
devices with no role) is said on stderr; with a declared topology in the config, so is every
mismatch (:mod:`pipeline.topology.drift`), and ``--check`` makes any of them an error.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from collectors.base import CollectorOptions, load_targets
from collectors.neighbors import read_all
from pipeline.errors import ConfigError
from pipeline.inventory import Target
from pipeline.registry import Registry
from pipeline.topology.discover import Hints, discover, resolve
from pipeline.topology.drift import compare
from pipeline.topology.model import Topology
from pipeline.topology.names import parse_zone

PROTOCOLS = ("gnmi", "snmp")


@click.group()
def topology() -> None:
    """The fabric's topology from its devices (LLDP)."""


def _targets(config_path: str | None) -> tuple[list[Target], dict[str, str], tuple[str, ...],
                                               str]:
    from rocewatch.settings import load_settings

    settings = load_settings(config_path)
    registry: Registry[object] = Registry("rocewatch.collectors")
    found: dict[str, Target] = {}
    env: dict[str, str] = {}
    dirs: tuple[str, ...] = ()
    for i, spec in enumerate(settings.collectors):
        if spec.type not in PROTOCOLS:
            continue
        options = registry.options(spec, f"collectors[{i}]")
        assert isinstance(options, CollectorOptions)
        targets, spec_env = load_targets(options, spec.type)
        env.update(spec_env)
        dirs += tuple(options.profile_dirs)
        for t in targets:
            found.setdefault(t.name, t)
    if not found:
        raise ConfigError("no gNMI or SNMP targets: the config's collectors name none",
                          "collectors")
    return list(found.values()), env, dirs, settings.topology


def _hints(targets: list[Target]) -> Hints:
    zones: dict[str, int] = {}
    for t in targets:
        pod = t.labels.pod
        zone = parse_zone(pod) if pod else None
        if zone is None and pod.isdigit():
            zone = int(pod)
        if zone is not None:
            zones[t.name] = zone
    return Hints(roles={t.name: t.labels.role for t in targets if t.labels.role}, zones=zones)


@topology.command()
@click.option("-c", "--config", "config_path", type=click.Path(dir_okay=False),
              envvar="ROCEWATCH_CONFIG", help="YAML config file (its collectors' targets).")
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="Write the topology JSON here (default: stdout).")
@click.option("--timeout", "timeout_s", type=float, default=10.0, show_default=True,
              help="Seconds one device's read may take.")
@click.option("--check", is_flag=True,
              help="Fail when the devices disagree with the config's declared topology.")
def discover_cmd(config_path: str | None, output: str | None, timeout_s: float,
                 check: bool) -> None:
    """Read every target's LLDP neighbours once and write the topology they describe."""
    targets, env, dirs, declared_path = _targets(config_path)
    read = read_all(targets, env, dirs, timeout_s)
    found = discover(read.reports, _hints(targets))
    topo = found.topology
    text = json.dumps(topo.to_json(), indent=1)
    if output:
        Path(output).write_text(text + "\n")
    else:
        click.echo(text)
    click.echo(f"discovered from {len(read.reports)} of {len(targets)} devices: "
               f"{len(topo.switches)} switches, {len(topo.links)} links, {len(topo.hosts)} hosts",
               err=True)
    for name, why in sorted(read.failed.items()):
        click.echo(f"  unreadable: {name}: {why}", err=True)
    for what, items in (("seen by one end only", found.one_sided),
                        ("contradicted by the far end", found.conflicts),
                        ("no role (label or name)", found.unplaced)):
        for item in items:
            click.echo(f"  {what}: {item}", err=True)
    problems = len(read.failed)
    if declared_path:
        mismatches = compare(Topology.load(declared_path), resolve(read.reports))
        for m in mismatches:
            click.echo(f"  mismatch ({m.kind}): {m.summary}", err=True)
        problems += len(mismatches)
    if check and problems:
        raise ConfigError(f"{problems} problem(s) between the devices and the declared topology")


discover_cmd.name = "discover"
