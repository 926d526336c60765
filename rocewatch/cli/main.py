"""The one command line, ``rocewatch``: roles and verbs.

::

    rocewatch up            the lab, every role and the dashboard on one machine (``make run``)
    rocewatch run           run roles of the platform against a config (``--role a,b``)
    rocewatch check-config  strict validation of a config file, plugins and cross-references
    rocewatch plugins       the registered collectors, detectors and actions
    rocewatch lab ...       the simulated fabric
    rocewatch scenario ...  run and score scenarios
    rocewatch replay ...    re-run detection over stored history or a Kafka topic
    rocewatch query ...     history through the read-side query layer
    rocewatch dashboard     the Streamlit dashboard over the configured API
    rocewatch bench ...     benchmarks that print numbers
    rocewatch topology ...  the fabric's topology from its devices (LLDP)

Errors derived from :class:`pipeline.errors.RocewatchError` print one line and exit non-zero;
anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import importlib
import logging
import sys
from typing import Any

import click

from pipeline import heap
from pipeline.errors import RocewatchError

#: verb → ("module:attribute" of its click command, imported only when used; one-line help)
LAZY: dict[str, tuple[str, str]] = {
    "up": ("rocewatch.up:up", "The lab, every role and the dashboard on one machine."),
    "lab": ("rocewatch.cli.lab:lab", "The simulated fabric: run it, show its topology."),
    "scenario": ("rocewatch.cli.scenario:scenario", "Run scenarios and score what was found."),
    "replay": ("rocewatch.cli.replay:replay", "Re-run detection over stored history or Kafka."),
    "query": ("rocewatch.cli.query:query", "History through the read-side query layer."),
    "dashboard": ("rocewatch.cli.dashboard:dashboard", "The Streamlit dashboard over the API."),
    "bench": ("rocewatch.cli.bench:bench", "Benchmarks that print numbers."),
    "store": ("rocewatch.cli.store:store", "Store schema and maintenance."),
    "targets": ("rocewatch.cli.targets:targets", "Validate targets files; make one from a lab."),
    "token": ("rocewatch.cli.token:token", "Mint API tokens (identities with roles)."),
    "topology": ("rocewatch.cli.topology:topology", "The fabric's topology from its devices."),
}


#: libraries whose INFO logs are per-request or per-job noise
QUIET_LOGGERS = ("apscheduler", "pygnmi", "httpx", "httpcore", "uvicorn.access", "kafka")


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *LAZY])

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in LAZY:
            module, _, attr = LAZY[name][0].partition(":")
            command: click.Command = getattr(importlib.import_module(module), attr)
            return command
        return super().get_command(ctx, name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, LAZY[name][1]) for name in LAZY]
        for name in super().list_commands(ctx):
            cmd = super().get_command(ctx, name)
            if cmd is not None:
                rows.append((name, cmd.get_short_help_str(80)))
        with formatter.section("Commands"):
            formatter.write_dl(sorted(rows))


@click.group(cls=LazyGroup)
@click.option("-v", "--verbose", count=True, help="More log output (-vv for debug).")
def cli(verbose: int) -> None:
    """rocewatch: telemetry, fault isolation and guarded remediation for RoCE fabrics."""
    level = logging.WARNING - 10 * verbose
    logging.basicConfig(level=max(level, logging.DEBUG),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if verbose < 2:  # chatty libraries: their INFO lines say nothing an operator needs
        for name in QUIET_LOGGERS:
            logging.getLogger(name).setLevel(logging.WARNING)


config_option = click.option("-c", "--config", "config_path", type=click.Path(dir_okay=False),
                             envvar="ROCEWATCH_CONFIG", help="YAML config file.")


@cli.command("check-config")
@config_option
@click.option("--role", "roles", multiple=True,
              help="Roles this process will run (repeat, or separate with commas).")
def check_config(config_path: str | None, roles: tuple[str, ...]) -> None:
    """Validate a config file strictly: keys, values, plugin options, cross-references, and
    every file it names (the same check ``run`` makes before it starts)."""
    from rocewatch.app import parse_roles
    from rocewatch.settings import check, load_settings

    settings = load_settings(config_path)
    for line in check(settings, parse_roles(roles)):
        click.echo(f"ok  {line}")
    click.echo(f"{config_path or '(defaults)'}: valid")


@cli.command("run")
@config_option
@click.option("--role", "roles", multiple=True,
              help="collect, ingest, detect, remediate, api (repeat, or separate with commas: "
                   "--role collect,ingest; default: all).")
def run(config_path: str | None, roles: tuple[str, ...]) -> None:
    """Run roles of the platform until interrupted (after the checks of ``check-config``)."""
    from rocewatch.app import ALL_ROLES, parse_roles, run_roles
    from rocewatch.settings import load_settings

    logging.getLogger().setLevel(min(logging.getLogger().level, logging.INFO))
    run_roles(load_settings(config_path), parse_roles(roles) or ALL_ROLES)


@cli.command("plugins")
def plugins() -> None:
    """List the registered plugins of every group."""
    from pipeline.registry import GROUPS, Registry

    for group in GROUPS:
        registry: Registry[Any] = Registry(group)
        click.echo(f"{group}: {', '.join(registry.names()) or '(none)'}")


def main() -> None:
    heap.enable()  # a rocewatch process runs long: the cycle collector's policy for it
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except RocewatchError as exc:
        click.echo(f"rocewatch: {exc}", err=True)
        sys.exit(exc.exit_code)
