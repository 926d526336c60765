"""``rocewatch replay``: re-run detection and correlation over stored history or a Kafka topic.

::

    rocewatch replay -c rocewatch.yaml --since 30m                # the store, the last 30 minutes
    rocewatch replay -c rocewatch.yaml --start 2026-11-30T10:00:00Z --end 2026-11-30T10:20:00Z
    rocewatch replay -c rocewatch.yaml --kafka rocewatch.samples  # a topic, from its start

Times are read as everywhere else (:mod:`pipeline.times`, ``docs/time.md``): ``--since`` is a
duration back from now or an instant, ``--start``/``--end`` are instants, and "now" is the fabric's
clock, the newest sample's event time in the store (:class:`ui.query.clock.FabricClock`), exactly
what ``rocewatch query`` and the API take it to be. The range includes both ends, as the API's do.

It prints the range it replays (on stderr), then the incidents (root causes) it raises, when, on
what, and what they explain; ``--json`` prints every alert state change as JSON lines instead,
symptoms included with ``--symptoms``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import click

from pipeline.kinds import LINK_DOWN
from pipeline.model import Alert
from pipeline.store.base import Store
from pipeline.times import format_instant, is_relative, parse_instant, since_text
from pipeline.topology.model import Topology

TIME_HELP = "see docs/time.md"


def replay_range(since: str | None, start: str | None, end: str | None,
                 now: Callable[[], int], topic: bool = False) -> tuple[int, int | None]:
    """``[start_ns, end_ns]`` of a replay; ``now`` reads the fabric's clock, only when a time is
    relative or (from the store) no ``--end`` is given. A topic without ``--end`` is read to its
    end (None); without a start it is read from its beginning."""
    if since and start:
        raise click.UsageError("give --since or --start, not both")
    first = since_text(since) if since else start
    if first is None and not topic:
        raise click.UsageError("give --start, --since or --kafka")
    clock: list[int] = []

    def fabric_now() -> int:
        if not clock:
            clock.append(now())
        return clock[0]

    def instant(text: str, what: str) -> int:
        return parse_instant(text, fabric_now() if is_relative(text) else None, what)

    start_ns = instant(first, "since" if since else "start") if first else 0
    end_ns = instant(end, "end") if end else (None if topic else fabric_now())
    if end_ns is not None and start_ns >= end_ns:
        raise click.UsageError(f"the start ({format_instant(start_ns)}) must be before the end "
                               f"({format_instant(end_ns)})")
    return start_ns, end_ns


def fabric_clock(store: Store) -> int:
    """The fabric's clock over ``store``: the one "now" of the read side."""
    from ui.query.clock import FabricClock

    return FabricClock(store).now().now_ns


@click.command("replay")
@click.option("-c", "--config", "config_path", type=click.Path(dir_okay=False),
              envvar="ROCEWATCH_CONFIG", help="YAML config (store, bus, detection, topology).")
@click.option("--topology", "topology_path", type=click.Path(dir_okay=False),
              help="Topology JSON (default: the config's topology).")
@click.option("--since", "--last", "since", help=(
    "How far back from the fabric's clock (30s, 15m, 2h) or since an instant (now-15m, "
    "2026-11-30T10:00:00Z); " + TIME_HELP + "."))
@click.option("--start", help=("Start of the range: RFC 3339 with a zone, now-30m, "
                               "@<Unix seconds> or ns; " + TIME_HELP + "."))
@click.option("--end", help="End of the range (default: now, the fabric's clock).")
@click.option("--device", "devices", multiple=True, help="Only these switches (repeat).")
@click.option("--kafka", "topic", help="Replay this Kafka topic from its start instead.")
@click.option("--json", "as_json", is_flag=True, help="Alert state changes as JSON lines.")
@click.option("--symptoms", is_flag=True, help="With --json: symptoms too.")
def replay(config_path: str | None, topology_path: str | None, start: str | None,
           end: str | None, since: str | None, devices: tuple[str, ...], topic: str | None,
           as_json: bool, symptoms: bool) -> None:
    """Re-run detectors and correlator over history, printing the incidents they raise."""
    from detectors.chain import DetectionChain
    from detectors.replay import store_batches
    from pipeline.store.base import open_store
    from rocewatch.settings import load_settings

    settings = load_settings(config_path)
    path = topology_path or settings.topology
    topology = Topology.load(path) if path else None
    if topology is None:
        click.echo("no topology (--topology or the config's topology): symptoms only, no "
                   "incidents", err=True)
    opened: list[Store] = []

    def the_store() -> Store:
        if not opened:
            opened.append(open_store(settings.store))
        return opened[0]

    try:
        start_ns, end_ns = replay_range(since, start, end, lambda: fabric_clock(the_store()),
                                        topic=bool(topic))
        click.echo(f"replaying {format_instant(start_ns) if start_ns else 'from the beginning'} "
                   f"to {format_instant(end_ns) if end_ns is not None else 'the end'}", err=True)
        chain = DetectionChain(settings.detection, topology)
        # both ends included, as everywhere: the half-open windows below end just after end_ns
        stop = None if end_ns is None else end_ns + 1
        if topic:
            changes = _replay_topic(settings.bus, topic, chain, start_ns, stop, devices)
        else:
            assert stop is not None
            changes = [a for batch in store_batches(the_store(), start_ns, stop, devices=devices)
                       for a in chain.observe([batch])]
    finally:
        for store in opened:
            store.close()
    _print(changes, chain.stats.samples, as_json, symptoms)


def _replay_topic(bus_settings: Any, topic: str, chain: Any, start_ns: int, stop_ns: int | None,
                  devices: tuple[str, ...]) -> list[Alert]:
    from detectors.replay import topic_batches
    from pipeline.bus.kafka import KafkaBus

    bus = KafkaBus(bus_settings)
    errors: list[str] = []
    changes: list[Alert] = []
    try:
        for batch in topic_batches(bus, topic, end_ns=stop_ns, decode_errors=errors):
            chosen = batch.take(_rows_of(batch, devices)) if devices else batch
            if len(chosen) and int(chosen.ts_ns.max()) >= start_ns:
                changes.extend(chain.observe([chosen]))
    finally:
        bus.close()
    if errors:
        click.echo(f"skipped {len(errors)} undecodable messages ({errors[0]})", err=True)
    return changes


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
        ended = (f"resolved {format_instant(last.ends_ns, digits=3)}" if last.ends_ns
                 else "still firing")
        click.echo(f"{format_instant(first.updated_ns, digits=3)}  {last.severity.value:8s} "
                   f"{last.name:16s} "
                   f"{last.entity}  confidence {last.confidence:.2f}  {ended}")
        if last.annotations.get("summary"):
            click.echo(f"    {last.annotations['summary']}")
        if last.ports:
            click.echo(f"    ports: {', '.join(last.ports)}")
        if last.explains:
            click.echo(f"    explains {len(last.explains)} symptoms")
        if last.evidence:
            click.echo("    evidence: " + json.dumps(last.evidence, sort_keys=True))
