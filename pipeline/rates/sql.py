"""The rule of :mod:`pipeline.rates` as SQL, generated from :mod:`pipeline.rates.rule`'s constants.

What the store computes itself (the buckets of ``/v1/series``, latest values, the rollups) it
computes with these expressions, in the dialect-neutral SQL both chDB and ClickHouse 18.16 run:
arrays per series (``groupArray``, ``arrayMap``), no window functions. :func:`judged_sql` turns
deduplicated samples into one row per sample with its interval judged, exactly as
:func:`pipeline.rates.rule.intervals` does in numpy (a test holds the two together on every
backend); :func:`samples_judged_sql` reads the samples for it, with the history the rule needs.

A judged row has the series key columns, ``t`` (event time, ns), ``value``, ``flags``, ``inc``
(the increase, NaN when none), ``dt`` (ns, 0 for a first sample), ``st`` (the
:class:`~pipeline.rates.rule.Status`) and, for sums over spans, ``rated_inc`` / ``rated_ns``: the
increase and length of the interval when it has a rate, else 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

from pipeline.metrics import CATALOG, Kind
from pipeline.model import FLAG_COUNTER32, FLAG_RESET
from pipeline.rates.rule import (
    CADENCE_INTERVALS,
    CADENCE_MIN,
    COUNTER32_MODULUS,
    GAP_FACTOR,
    HORIZON_NS,
    MISSING,
    NS,
    RATED,
    Status,
)
from pipeline.store.base import literal
from pipeline.store.dialect import Dialect
from pipeline.store.schema import SAMPLES

M = COUNTER32_MODULUS


def judge_sql(first: str, pv: str, v: str, f: str, dt: str, cad: str,
              counter: str = "1") -> tuple[str, str]:
    """``(increase, status)`` SQL of one interval: :func:`pipeline.rates.rule.judge` with every
    argument an SQL expression (``cad`` 0 when the cadence is not known)."""
    d = f"({v} - {pv})"
    wrapped = f"({d} + {M})"
    wrap = (f"({d} < 0 AND bitAnd({f}, {FLAG_COUNTER32}) != 0 AND {wrapped} < {M // 2} "
            f"AND {pv} < {M})")
    reset = f"(bitAnd({f}, {FLAG_RESET}) != 0 OR ({d} < 0 AND NOT {wrap}))"
    gap = f"({dt} > {HORIZON_NS} OR ({cad} > 0 AND {dt} > {GAP_FACTOR!r} * {cad}))"
    status = (f"toInt8(multiIf(NOT ({counter}), {int(Status.GAUGE)}, {first}, "
              f"{int(Status.FIRST)}, {reset}, {int(Status.RESET)}, {gap}, {int(Status.GAP)}, "
              f"{wrap}, {int(Status.WRAP)}, {int(Status.OK)}))")
    increase = (f"multiIf(NOT ({counter}) OR {first}, nan, {reset}, toFloat64({v}), {wrap}, "
                f"{wrapped}, {d})")
    return increase, status


def cadence_sql(t: str, before: Sequence[str]) -> str:
    """The cadence at the interval ending at a sample at ``t`` (0: not known), from the times of
    the samples before it, newest first (``before``: ``CADENCE_INTERVALS + 1`` expressions,
    :data:`MISSING` where there is none): the median length of the intervals among them that
    start within the horizon."""
    widths = ", ".join(
        f"if({start} != {MISSING} AND {start} >= {t} - {HORIZON_NS}, {end} - {start}, 0)"
        for end, start in pairwise(before))
    median = (f"if(length(s) >= {CADENCE_MIN}, (s[intDiv(length(s) - 1, 2) + 1] + "
              f"s[intDiv(length(s), 2) + 1]) / 2, 0)")
    return f"arrayMap(s -> {median}, [arraySort(arrayFilter(w -> w > 0, [{widths}]))])[1]"


def per_second_sql(increase: str, span_ns: str) -> str:
    """:func:`pipeline.rates.rule.per_second` in SQL: the increase over a span of event time as a
    per-second rate, NaN for an empty span (the same operations in the same order, so the same
    floats)."""
    return f"if({span_ns} > 0, {increase} * {NS} / {span_ns}, nan)"


def counter_sql(column: str = "metric") -> str:
    """True for rows whose metric (by name) is a counter."""
    names = ", ".join(literal(m.name) for m in CATALOG if m.kind is Kind.COUNTER)
    return f"{column} IN ({names})"


def judged_sql(source: str, keys: Sequence[str], from_ns: int | None = None,
               counter: str | None = None) -> str:
    """Judged rows (see the module doc) with ``t >= from_ns``, from ``source``: a SELECT of the
    ``keys`` columns, ``t`` (Int64 ns), ``v`` (Float64) and ``f`` (the flags), one row per series
    and time. ``counter``: the condition that a row is a counter (default: all are).

    Each series becomes arrays sorted by time (times are distinct: the source is deduplicated),
    shifted by one sample per lag (no lambda captures a whole array: 18.16 would copy it for
    every element), and one row per sample again."""
    k = ", ".join(keys)
    lags = [f"p{n}" for n in range(1, CADENCE_INTERVALS + 2)]
    shifted = ", ".join(
        f"arrayPopBack(arrayPushFront({'_ts' if n == 1 else f'_p{n - 1}'}, "
        f"toInt64({MISSING}))) AS _p{n}" for n in range(1, len(lags) + 1))
    first = f"p1 = {MISSING}"
    dt = f"if({first}, toInt64(0), t - p1)"
    increase, status = judge_sql(first, "pv", "v", "f", "dt", cadence_sql("t", lags),
                                 counter or "1")
    rated = f"st IN ({', '.join(str(s) for s in RATED)})"
    where = "" if from_ns is None else f" WHERE t >= {int(from_ns)}"
    return (
        f"SELECT {k}, t, v AS value, f AS flags, {dt} AS dt, {increase} AS inc, "
        f"{status} AS st, if({rated}, inc, 0.) AS rated_inc, if({rated}, dt, 0) AS rated_ns "
        f"FROM (SELECT {k}, arraySort(groupArray(t)) AS _ts, "
        f"arraySort((x, y) -> y, groupArray(v), groupArray(t)) AS _vs, "
        f"arraySort((x, y) -> y, groupArray(f), groupArray(t)) AS _fs, {shifted} "
        f"FROM ({source}) GROUP BY {k}) "
        f"ARRAY JOIN _ts AS t, _vs AS v, _fs AS f, "
        f"arrayPopBack(arrayPushFront(_vs, 0.)) AS pv, "
        + ", ".join(f"_{lag} AS {lag}" for lag in lags) + where)


def deduped_sql(dialect: Dialect, database: str, keys: Sequence[str], where: Sequence[str],
                lo_ns: int | None, hi_ns: int | None) -> str:
    """Samples with ``lo_ns <= ts < hi_ns`` matching ``where``, one row per series and time
    (a batch delivered twice before the engine merged it counts once): keys, ``t``, ``v``,
    ``f``."""
    k = ", ".join(keys)
    conds = [*where, *dialect.time_range("ts", lo_ns, hi_ns)]
    return (f"SELECT {k}, {dialect.time_ns('ts')} AS t, max(value) AS v, max(flags) AS f "
            f"FROM {database}.{SAMPLES.name}"
            + (f" WHERE {' AND '.join(conds)}" if conds else "") + f" GROUP BY {k}, t")


def samples_judged_sql(dialect: Dialect, database: str, keys: Sequence[str],
                       where: Sequence[str], lo_ns: int | None, hi_ns: int | None,
                       counter: str | None = None) -> str:
    """The judged rows of the samples with ``lo_ns <= ts < hi_ns``: the samples are read from
    the horizon before ``lo_ns`` on, so every interval is judged with the history detection
    had."""
    history = None if lo_ns is None else lo_ns - HORIZON_NS
    return judged_sql(deduped_sql(dialect, database, keys, where, history, hi_ns), keys, lo_ns,
                      counter)
