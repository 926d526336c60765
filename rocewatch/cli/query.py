"""``rocewatch query ...``: history and live state through the API, as tables or JSON.

::

    rocewatch query series leaf3 Ethernet4 if_in_fcs_errors pfc_rx_frames --since 15m --step 30s
    rocewatch query alerts                      # firing now (incidents and symptoms)
    rocewatch query alerts --incidents --since 24h
    rocewatch query alerts --at 2026-11-30T10:00:00Z --touching leaf3
    rocewatch query actions --since 6h --outcome refused
    rocewatch query status

``--api URL`` names the API (default: the configuration ``-c``/``ROCEWATCH_CONFIG``, see
:func:`ui.api.client.api_url`; the token it sends is ``api.token``);
``--json`` prints the API's answer as it came. Times are read as everywhere else
(:mod:`pipeline.times`, ``docs/time.md``): instants as RFC 3339 with a zone, ``now-15m`` (the
fabric's clock), ``@<Unix seconds>`` or ns; ``--since`` is a duration back from now (``--since 15m``
is ``--start now-15m``) or an instant. The API resolves them against the fabric's clock, as
``rocewatch replay`` does.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click
from pydantic import BaseModel

from pipeline.times import since_text
from rocewatch.cli.main import config_option
from ui.api.client import ApiClient
from ui.query.timefmt import age, date_time

F = TypeVar("F", bound=Callable[..., Any])
json_option = click.option("--json", "as_json", is_flag=True, help="Print the API's JSON.")


def api_option(command: F) -> F:
    """``--api URL`` and ``-c CONFIG``: which API to ask, and the config it is found in."""
    command = click.option("--api", "api_url", metavar="URL", help="The rocewatch API's URL.")(
        command)
    return config_option(command)


def _client(api_url: str | None, config_path: str | None) -> ApiClient:
    from rocewatch.settings import load_settings

    settings = load_settings(config_path)
    return ApiClient.from_settings(settings.api, settings.dashboard, url=api_url or "")


def _start(since: str | None, start: str | None) -> str | None:
    if since and start:
        raise click.UsageError("give --since or --start, not both")
    return since_text(since) if since else start


def _emit(answer: BaseModel, as_json: bool, rows: list[dict[str, Any]],
          empty: str) -> None:
    if as_json:
        click.echo(json.dumps(answer.model_dump(mode="json"), indent=2))
    elif rows:
        click.echo(table(rows))
    else:
        click.echo(empty)


def table(rows: Sequence[dict[str, Any]]) -> str:
    """Rows as an aligned text table, columns in the first row's order."""
    headers = list(rows[0])
    cells = [[_cell(r.get(h)) for h in headers] for r in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
              for row in cells]
    return "\n".join(lines)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.6g}" if abs(value) < 1e6 else f"{value:,.0f}"
    return str(value)


@click.group()
def query() -> None:
    """History and live state through the read-side API."""


@query.command()
@click.argument("device")
@click.argument("port")
@click.argument("metrics", nargs=-1, required=True)
@click.option("--qual", type=int, help="PFC priority or queue index (default: all).")
@click.option("--since", help="How far back from the fabric's clock (15m, 6h, 7d) or since an "
              "instant (now-1h, 2026-11-30T10:00:00Z); see docs/time.md.")
@click.option("--start", help="Range start (default: 15m before the end).")
@click.option("--end", help="Range end (default: now).")
@click.option("--step", help="Bucket width (10s, 1m, 1h; default: about 360 points).")
@click.option("--agg", help="Gauges: mean, max, min, last.")
@click.option("--source", type=click.Choice(["auto", "raw", "1m", "1h"]), default=None,
              help="Raw samples or a rollup (default: auto).")
@api_option
@json_option
def series(device: str, port: str, metrics: tuple[str, ...], qual: int | None,
           since: str | None, start: str | None, end: str | None, step: str | None,
           agg: str | None, source: str | None, api_url: str | None, config_path: str | None,
           as_json: bool) -> None:
    """One port's METRICS over time: counters as per-second rates, gauges per bucket."""
    with _client(api_url, config_path) as client:
        answer = client.series(device, port, list(metrics), qual=qual,
                               start=_start(since, start), end=end, step=step, agg=agg,
                               source=source)
    columns: dict[str, dict[int, float | None]] = {}
    for res in answer.results:
        for s in res.series:
            name = res.metric if s.qual is None else f"{res.metric}[{s.qual}]"
            columns[f"{name} ({res.unit})"] = dict(s.points)
    times = sorted({t for points in columns.values() for t in points})
    rows = [{"time": date_time(t), **{name: pts.get(t) for name, pts in columns.items()}}
            for t in times]
    _emit(answer, as_json, rows, f"no samples for {device}:{port} in that range")


@query.command()
@click.option("--incidents", "kind", flag_value="incident", help="Root causes only.")
@click.option("--symptoms", "kind", flag_value="symptom", help="Symptoms only.")
@click.option("--at", help="State at this time instead of now.")
@click.option("--since", help="Episodes active in the last DURATION (history).")
@click.option("--start", help="Episodes active from this time (history).")
@click.option("--end", help="... until this time (default: now).")
@click.option("--name", multiple=True, help="Alert name (repeat).")
@click.option("--entity", multiple=True, help="Link, host, switch or port (repeat).")
@click.option("--severity", multiple=True, help="critical, warning, info (repeat).")
@click.option("--touching", help="A switch or host the alerts involve.")
@click.option("--limit", type=int, help="At most this many.")
@api_option
@json_option
def alerts(kind: str | None, at: str | None, since: str | None, start: str | None,
           end: str | None, name: tuple[str, ...], entity: tuple[str, ...],
           severity: tuple[str, ...], touching: str | None, limit: int | None,
           api_url: str | None, config_path: str | None, as_json: bool) -> None:
    """Alerts firing now, at a time (--at), or active in a range (--since/--start)."""
    with _client(api_url, config_path) as client:
        answer = client.alerts(kind=kind, at=at, start=_start(since, start), end=end,
                               name=list(name), entity=list(entity), severity=list(severity),
                               touching=touching, limit=limit)
    now = answer.clock.now_ns
    rows = [{
        "severity": a.severity, "alert": a.name, "entity": a.entity,
        "kind": "incident" if a.root_cause else "symptom", "status": a.status,
        "since": date_time(a.starts_ns), "age": age(a.starts_ns, now),
        "ended": date_time(a.ends_ns) if a.ends_ns else "-", "summary": a.summary,
    } for a in answer.alerts]
    what = {"active": "firing now", "at": "firing at that time", "range": "in that range"}
    _emit(answer, as_json, rows, f"no alerts {what[answer.mode]}")


@query.command()
@click.option("--since", help="How far back (default 24h).")
@click.option("--start", help="Range start.")
@click.option("--end", help="Range end (default: now).")
@click.option("--action", multiple=True, help="notify, drain, undrain, te_notice, command ...")
@click.option("--target", multiple=True, help="Link or host (repeat).")
@click.option("--outcome", multiple=True, help="done, refused, failed, pending, skipped.")
@click.option("--mode", multiple=True, help="dry_run, approval, auto.")
@click.option("--limit", type=int, help="At most this many.")
@api_option
@json_option
def actions(since: str | None, start: str | None, end: str | None, action: tuple[str, ...],
            target: tuple[str, ...], outcome: tuple[str, ...], mode: tuple[str, ...],
            limit: int | None, api_url: str | None, config_path: str | None, as_json: bool) -> None:
    """The audit trail: notifications, drains (dry runs included), TE notices, commands."""
    with _client(api_url, config_path) as client:
        answer = client.actions(start=_start(since, start), end=end, action=list(action),
                                target=list(target), outcome=list(outcome), mode=list(mode),
                                limit=limit)
    rows = [{"time": date_time(a.at_ns), "action": a.action, "target": a.target,
             "mode": a.mode, "outcome": a.outcome, "alert": a.alert_name or "-",
             "detail": a.detail} for a in answer.actions]
    _emit(answer, as_json, rows, "no actions in that range")


@query.command()
@click.option("--top", type=int, default=10, show_default=True, help="Busiest links to list.")
@api_option
@json_option
def status(top: int, api_url: str | None, config_path: str | None, as_json: bool) -> None:
    """What is not ok in the fabric right now, and whether telemetry is live."""
    with _client(api_url, config_path) as client:
        answer = client.status(top=top)
    if not as_json:
        tel = answer.telemetry
        click.echo(f"fabric time {date_time(answer.clock.now_ns)}; telemetry {tel.state}, "
                   f"{tel.devices_seen} devices reporting")
    rows = [{"level": e.level, "entity": e.entity, "kind": e.kind, "alert": e.alert,
             "since": age(e.since_ns, answer.clock.now_ns) if e.since_ns else "-",
             "summary": e.summary} for e in answer.entities]
    _emit(answer, as_json, rows, "every link, host and switch is ok")
