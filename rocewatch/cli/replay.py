"""``rocewatch replay``: re-run detection and correlation over stored history or a Kafka topic.

::

    rocewatch replay -c rocewatch.yaml --last 30m                 # the store, the last 30 minutes
    rocewatch replay -c rocewatch.yaml --start 2026-11-30T10:00:00Z --end 2026-11-30T10:20:00Z
    rocewatch replay -c rocewatch.yaml --kafka rocewatch.samples  # a topic, from its start

It prints the incidents (root causes) it raises, when, on what, and what they explain; ``--json``
prints every alert state change as JSON lines instead, symptoms included with ``--symptoms``.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any

import click

from pipeline.errors import ConfigError
from pipeline.kinds import LINK_DOWN
from pipeline.model import Alert
from pipeline.topology.model import Topology


def parse_time(text: str) -> int:
    """RFC 3339 (``2026-11-30T10:00:00Z``) or Unix seconds, as ns since the epoch."""
    try:
        return int(float(text) * 1e9)
    except ValueError:
        pass
    try:
        stamp = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(f"not a time: {text!r} (write 2026-11-30T10:00:00Z or Unix "
                          "seconds)") from None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    return int(stamp.timestamp() * 1e9)


def _iso(ns: int | None) -> str:
    if ns is None:
        return "-"
    return datetime.fromtimestamp(ns / 1e9, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


@click.command("replay")
@click.option("-c", "--config", "config_path", type=click.Path(dir_okay=False),
              envvar="ROCEWATCH_CONFIG", help="YAML config (store, bus, detection, topology).")
@click.option("--topology", "topology_path", type=click.Path(dir_okay=False),
              help="Topology JSON (default: the config's topology).")
@click.option("--start", help="Start of the range (RFC 3339 or Unix seconds).")
@click.option("--end", help="End of the range (default: now).")
@click.option("--last", help="The range ending now: 30s, 15m, 2h ...")
@click.option("--device", "devices", multiple=True, help="Only these switches (repeat).")
@click.option("--kafka", "topic", help="Replay this Kafka topic from its start instead.")
@click.option("--json", "as_json", is_flag=True, help="Alert state changes as JSON lines.")
@click.option("--symptoms", is_flag=True, help="With --json: symptoms too.")
def replay(config_path: str | None, topology_path: str | None, start: str | None,
           end: str | None, last: str | None, devices: tuple[str, ...], topic: str | None,
           as_json: bool, symptoms: bool) -> None:
    """Re-run detectors and correlator over history, printing the incidents they raise."""
    from detectors.chain import DetectionChain
    from detectors.replay import store_batches, topic_batches
    from remediation.settings import parse_duration
    from rocewatch.settings import load_settings

    settings = load_settings(config_path)
    path = topology_path or settings.topology
    topology = Topology.load(path) if path else None
    if topology is None:
        click.echo("no topology (--topology or the config's topology): symptoms only, no "
                   "incidents", err=True)
    end_ns = parse_time(end) if end else time.time_ns()
    if last:
        start_ns = end_ns - int(parse_duration(last) * 1e9)
    elif start:
        start_ns = parse_time(start)
    elif not topic:
        raise click.UsageError("give --start, --last or --kafka")
    else:
        start_ns = 0
    chain = DetectionChain(settings.detection, topology)
    changes: list[Alert] = []
    if topic:
        from pipeline.bus.kafka import KafkaBus

        bus = KafkaBus(settings.bus)
        errors: list[str] = []
        try:
            for batch in topic_batches(bus, topic, end_ns=end_ns if end or last else None,
                                       decode_errors=errors):
                chosen = batch.take(_rows_of(batch, devices)) if devices else batch
                if len(chosen) and int(chosen.ts_ns.max()) >= start_ns:
                    changes.extend(chain.observe([chosen]))
        finally:
            bus.close()
        if errors:
            click.echo(f"skipped {len(errors)} undecodable messages ({errors[0]})", err=True)
    else:
        from pipeline.store.base import open_store

        store = open_store(settings.store)
        try:
            for batch in store_batches(store, start_ns, end_ns, devices=devices):
                changes.extend(chain.observe([batch]))
        finally:
            store.close()
    _print(changes, chain.stats.samples, as_json, symptoms)


def _rows_of(batch: Any, devices: tuple[str, ...]) -> Any:
    import numpy as np

    wanted = np.array([d in devices for d in batch.devices], bool)
    return wanted[batch.device] if len(batch.devices) else np.zeros(len(batch), bool)


def _print(changes: list[Alert], samples: int, as_json: bool, symptoms: bool) -> None:
    if as_json:
        for a in changes:
            if a.root_cause or symptoms:
                click.echo(a.model_dump_json())
        return
    incidents: dict[str, list[Alert]] = {}
    for a in changes:
        if a.root_cause or a.name == LINK_DOWN:
            incidents.setdefault(a.fingerprint, []).append(a)
    count = sum(1 for s in incidents.values() if s[-1].root_cause)
    click.echo(f"replayed {samples} samples: {count} incidents")
    for states in incidents.values():
        first, last = states[0], states[-1]
        if not last.root_cause:
            continue
        ended = f"resolved {_iso(last.ends_at_ns)}" if last.ends_at_ns else "still firing"
        click.echo(f"{_iso(first.updated_at_ns)}  {last.severity.value:8s} {last.name:16s} "
                   f"{last.entity}  confidence {last.confidence:.2f}  {ended}")
        if last.annotations.get("summary"):
            click.echo(f"    {last.annotations['summary']}")
        if last.ports:
            click.echo(f"    ports: {', '.join(last.ports)}")
        if last.explains:
            click.echo(f"    explains {len(last.explains)} symptoms")
        if last.evidence:
            click.echo("    evidence: " + json.dumps(last.evidence, sort_keys=True))
