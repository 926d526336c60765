"""What is in maintenance, as the read side shows it: links drained and hosts isolated on purpose.

Remediation publishes a record per change (and re-publishes every open one each minute) as an
``action: maintenance`` audit record, which ingest stores with the other actions; the rule of
what a record means, and how records fold into the current state, is
:mod:`pipeline.maintenance`'s (the same :class:`~pipeline.maintenance.MaintenanceBook` detection
folds them with). This module only reads the recent records and folds them.
"""

from __future__ import annotations

from pipeline.errors import DecodeError
from pipeline.maintenance import ACTION, MaintenanceBook, from_steps
from pipeline.store.base import Store
from ui.query.actions import ActionFilter, actions_sql, rows_to_actions
from ui.query.views import Drained


def read_drained(store: Store, start_ns: int, end_ns: int, limit: int) -> list[Drained]:
    """The maintenance open at ``end_ns``, from the records written in ``[start_ns, end_ns]``."""
    cols = store.query(actions_sql(store, start_ns, end_ns, ActionFilter(actions=(ACTION,)),
                                   limit))
    book = MaintenanceBook()
    for view in reversed(rows_to_actions(cols)):  # oldest first; the book keeps the newest
        try:
            book.apply(from_steps(view.steps))
        except DecodeError:
            book.bad += 1
    return [Drained(target=m.target, kind=m.kind, state="soaking" if m.state == "soaking"
                    else "held", origin=m.origin, by=m.by, run=m.run, since_ns=m.since_ns,
                    phase=m.phase, summary=m.describe())
            for m in book.open()]
