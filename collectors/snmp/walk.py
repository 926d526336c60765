"""Walking several table columns at once with GETBULK.

pysnmp's ``bulk_walk_cmd`` walks one OID per request stream; a poll needs a dozen columns of the
same tables. :func:`walk_columns` asks for up to ``columns_per_request`` columns in each GETBULK
(one repetition is one row of every column still being walked), follows each column until it
leaves its subtree or the agent says endOfMibView, and halves the repetitions when the agent
answers tooBig.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from collectors.snmp.ber import END_OF_MIB_VIEW, Varbind
from collectors.snmp.client import TOO_BIG, SnmpClient, SnmpErrorStatus
from pipeline.errors import CollectorError

#: rows of one column: (the index bytes after the column's OID, tag, value)
Rows = list[tuple[bytes, int, "int | bytes | None"]]


@dataclass
class WalkResult:
    rows: dict[bytes, Rows] = field(default_factory=dict)
    requests: int = 0
    varbinds: int = 0
    #: columns that stopped on a non-increasing OID (an agent bug; the walk moves on)
    non_increasing: list[bytes] = field(default_factory=list)


async def walk_columns(client: SnmpClient, columns: Sequence[bytes], max_repetitions: int = 50,
                       columns_per_request: int = 4, max_requests: int = 10_000,
                       expected: Mapping[bytes, int] | None = None) -> WalkResult:
    """Every row of every column (OIDs as encoded bytes), in OID order per column.

    ``expected`` (rows per column in the previous walk) trims the repetitions asked for, so the
    agent does not produce rows past the ends of the columns only for them to be thrown away.
    """
    result = WalkResult(rows={c: [] for c in columns})
    position = {c: c for c in columns}
    pending = list(columns)
    repetitions = max(1, max_repetitions)
    while pending:
        batch = pending[:columns_per_request]
        reps = repetitions
        if expected:
            # one more than the rows still expected (the extra one shows the column's end);
            # a column that grew past its expectation goes back to full repetitions
            left = max(expected.get(c, repetitions) - len(result.rows[c]) for c in batch)
            reps = min(repetitions, left + 1) if left >= 0 else repetitions
        try:
            varbinds = await client.bulk([position[c] for c in batch], reps)
        except SnmpErrorStatus as exc:
            if exc.status == TOO_BIG and reps > 1:
                repetitions = max(1, reps // 2)
                continue
            raise
        result.requests += 1
        result.varbinds += len(varbinds)
        if result.requests > max_requests:
            raise CollectorError(f"walk did not finish in {max_requests} requests")
        done = _absorb(batch, varbinds, position, result)
        if not varbinds:
            done = set(batch)
        pending = [c for c in pending if c not in done]
    return result


def _absorb(batch: list[bytes], varbinds: list[Varbind], position: dict[bytes, bytes],
            result: WalkResult) -> set[bytes]:
    """Sort a GETBULK answer into its columns; returns the columns that are finished."""
    done: set[bytes] = set()
    width = len(batch)
    for i, (oid, tag, value) in enumerate(varbinds):
        column = batch[i % width]
        if column in done:
            continue
        if tag == END_OF_MIB_VIEW or not oid.startswith(column) or len(oid) == len(column):
            done.add(column)
            continue
        if oid <= position[column] and position[column] != column:
            result.non_increasing.append(column)
            done.add(column)
            continue
        position[column] = oid
        result.rows[column].append((oid[len(column):], tag, value))
    return done
