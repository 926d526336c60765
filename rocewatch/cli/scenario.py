"""``rocewatch scenario run|suite|score``: run scenarios through the whole platform and score them.

``run`` writes one run report (``--report``); ``suite`` runs every scenario of a folder, keeps each
report, and prints the table the bar is judged on (precision and recall over root-cause incidents,
entity accuracy, time to detect in sample intervals per fault kind, false positives on control
runs); ``score`` re-scores reports already written; ``generate`` writes random scenarios to
backtest on.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from rocewatch.scenario.scoring import Score, SuiteTotals, score

_config = click.option("-c", "--config", "config_path", type=click.Path(dir_okay=False),
                       envvar="ROCEWATCH_CONFIG",
                       help="Platform config (remediation mode, receivers, detectors...).")
_speed = click.option("--speed", type=float, default=10.0, show_default=True,
                      help="Simulated seconds per wall second.")
_fit = click.option("--fit/--no-fit", "fit", default=True, show_default=True,
                    help="Slow the run down on a machine other work keeps busy "
                         "(rocewatch.scenario.machine).")


@click.group()
def scenario() -> None:
    """Run scenarios through the lab and the whole platform, and score what was found."""


@scenario.command("run")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@_speed
@_fit
@_config
@click.option("--report", "report_path", type=click.Path(dir_okay=False),
              help="Write the run report (JSON) here.")
@click.option("--keep", type=click.Path(file_okay=False),
              help="Keep the run's working directory (lab output, store) here.")
def run(file: str, speed: float, fit: bool, config_path: str | None, report_path: str | None,
        keep: str | None) -> None:
    """Run one scenario FILE end to end and write its report."""
    from rocewatch.scenario.runner import run_scenario

    report = run_scenario(file, speed=speed, config_path=config_path,
                          keep=Path(keep) if keep else None, fit_machine=fit)
    text = json.dumps(report, indent=2)
    if report_path:
        Path(report_path).write_text(text + "\n")
    else:
        click.echo(text)
    s = score(report)
    click.echo(_one_line(report, s), err=bool(not report_path))


@scenario.command("suite")
@click.argument("folder", type=click.Path(exists=True, file_okay=False))
@_speed
@_fit
@_config
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="var/suite",
              show_default=True, help="Where each scenario's report is written.")
@click.option("-k", "pattern", default="*.yaml", show_default=True,
              help="Glob of the scenario files to run.")
def suite(folder: str, speed: float, fit: bool, config_path: str | None, out_dir: str,
          pattern: str) -> None:
    """Run every scenario in FOLDER and print the suite's table."""
    from rocewatch.scenario.runner import run_scenario

    files = sorted(Path(folder).glob(pattern))
    if not files:
        raise click.ClickException(f"no scenario files matching {pattern} in {folder}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    reports = []
    for path in files:
        t0 = time.monotonic()
        report = run_scenario(path, speed=speed, config_path=config_path, fit_machine=fit)
        (out / f"{path.stem}.json").write_text(json.dumps(report, indent=2) + "\n")
        reports.append((path.stem, report))
        click.echo(f"{_one_line(report, score(report))}  [{time.monotonic() - t0:.0f}s]",
                   err=True)
    click.echo(table(reports))


@scenario.command("generate")
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--count", type=click.IntRange(1, 1000), default=20, show_default=True)
@click.option("--seed", type=int, default=1, show_default=True)
def generate(folder: str, count: int, seed: int) -> None:
    """Write COUNT random scenarios to FOLDER (a backtest no detector was tuned on)."""
    from rocewatch.scenario.generate import write

    for path in write(Path(folder), seed, count):
        click.echo(path)


@scenario.command("score")
@click.argument("reports", nargs=-1, type=click.Path(exists=True, dir_okay=False))
def rescore(reports: Sequence[str]) -> None:
    """Re-score run reports already written and print the table."""
    loaded = [(Path(p).stem, json.loads(Path(p).read_text())) for p in reports]
    click.echo(table(loaded))


def _one_line(report: dict[str, Any], s: Score) -> str:
    fps = len(s.false_positives)
    return (f"{report['scenario']}: precision {s.precision:.2f} recall {s.recall:.2f} "
            f"root alerts {s.root_alerts} false positives {fps}")


def table(reports: Sequence[tuple[str, dict[str, Any]]]) -> str:
    """The suite's table (Markdown), then totals and time to detect per kind."""
    totals = SuiteTotals()
    lines = ["| scenario | faults | root alerts | precision | recall | TTD (intervals) | FPs |",
             "|---|---|---|---|---|---|---|"]
    for stem, report in reports:
        s = score(report)
        totals.add(report, s)
        faults = ", ".join(sorted({t["kind"] for t in report.get("truth", [])})) or "(control)"
        ttd = ", ".join(f"{t.kind} {t.ttd_s / s.sample_interval_s:.1f}" for t in s.truths
                        if t.ttd_s is not None) or "-"
        lines.append(f"| {stem} | {faults} | {s.root_alerts} | {s.precision:.2f} | "
                     f"{s.recall:.2f} | {ttd} | {len(s.false_positives)} |")
    lines += ["", f"runs {totals.runs}; root-cause alerts {totals.root_alerts}, "
              f"matching {totals.matched_alerts}; faults {totals.truths}, detected "
              f"{totals.detected}",
              f"precision {totals.precision:.3f}  recall {totals.recall:.3f}  entity accuracy "
              f"{totals.entity_accuracy:.3f} ({totals.entity_right}/{totals.entity_judged})  "
              f"control runs {totals.control_runs} with {totals.control_false_positives} "
              "false positives", "",
              "| fault kind | faults detected | TTD median (intervals) | TTD max (intervals) |",
              "|---|---|---|---|"]
    for kind, values in sorted(totals.ttd_intervals.items()):
        lines.append(f"| {kind} | {len(values)} | {statistics.median(values):.2f} | "
                     f"{max(values):.2f} |")
    return "\n".join(lines)
