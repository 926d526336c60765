"""Which replica of each shard a cluster's Distributed reads go to, and what that replica has
still to fetch: the writes a read does not see yet (:meth:`Store.unreadable_since`).

The store's reads run with ``load_balancing = 'in_order'`` and
``max_replica_delay_for_distributed_queries``: for each shard (and table), the first replica of
the cluster's configuration that answers and lags by at most that many seconds, else the one that
lags least. A part is out of sight of reads while that replica has it in its replication queue,
to fetch from the replica that took it (its own parts pass through its queue too, and do not
count). A replica's queue names a part within milliseconds of the write, so a write a read
missed is in the picked replica's queue by the time anyone asks.

Every server is asked separately (``remote()`` of one address each, tagged with its place in the
configuration; one that is down answers nothing), since each holds only its own queue.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pipeline.errors import StoreError
from pipeline.store.base import literal


@dataclass(frozen=True)
class Server:
    """One server of the cluster's configuration."""

    address: str
    shard: int
    replica: int


def cluster_servers(run: Callable[[str], Any], cluster: str) -> list[Server]:
    """The cluster's servers, from ``system.clusters`` of the server ``run`` asks."""
    rows = run(f"SELECT host_address, port, shard_num, replica_num FROM system.clusters "
               f"WHERE cluster = {literal(cluster)}")
    if not rows:
        raise StoreError(f"the ClickHouse cluster {cluster!r} is not configured on this server")
    return [Server(f"{host}:{port}", int(shard), int(replica))
            for host, port, shard, replica in rows]


def _each(servers: list[Server], select: str, source: str) -> str:
    """``select`` (after the server's index) from ``system.<source>`` of every server, as one
    ``UNION ALL``; ``source`` closes the ``remote()`` call and may go on with clauses."""
    return " UNION ALL ".join(
        f"SELECT toUInt32({i}) AS node, {select} FROM remote({literal(s.address)}, system, "
        f"{source}" for i, s in enumerate(servers))


def read_replicas(delays: dict[tuple[int, str], float], servers: list[Server],
                  max_delay_s: float) -> set[tuple[int, str]]:
    """The (server index, table) pairs reads go to, from each answering replica's delay in
    seconds by (server index, table): per shard and table, the first in order within
    ``max_delay_s``, else the least behind."""
    by_shard: dict[tuple[int, str], list[tuple[int, float]]] = {}
    for (node, table), delay in delays.items():
        by_shard.setdefault((servers[node].shard, table), []).append((node, delay))
    picked: set[tuple[int, str]] = set()
    for (_, table), candidates in by_shard.items():
        candidates.sort(key=lambda c: servers[c[0]].replica)
        fresh = [node for node, delay in candidates if delay <= max_delay_s]
        node = fresh[0] if fresh else min(candidates, key=lambda c: c[1])[0]
        picked.add((node, table))
    return picked


def unread_since(run: Callable[[str], Any], servers: list[Server], database: str,
                 max_delay_s: float) -> int | None:
    """When (server seconds) the oldest part was written that a replica reads go to has still
    to fetch; None when there is none."""
    where = f"WHERE database = {literal(database)}"
    delays = {(int(node), str(table)): float(delay) for node, table, delay in run(
        _each(servers, "table, absolute_delay", f"replicas) {where}"))}
    queued = run(_each(servers, "table, toUInt64(min(create_time)) AS oldest",
                       f"replication_queue) {where} AND type = 'GET_PART' "
                       f"AND source_replica != replica_name GROUP BY table"))
    picked = read_replicas(delays, servers, max_delay_s)
    oldest = [int(t) for node, table, t in queued if (int(node), str(table)) in picked]
    return min(oldest) if oldest else None
