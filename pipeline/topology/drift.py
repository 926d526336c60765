"""Where what the devices say over LLDP disagrees with the declared topology, named by the link.

Judged on the sightings of :func:`pipeline.topology.discover.resolve` (the latest report of each
device). A link with an end that is operationally down is not judged (LLDP shows nothing on a
down port; that is the link's own incident), nor one no end of which reports.

* **miswired**: an end of a declared link shows a port other than its declared peer. That link
  and every declared link whose port its ends show are one cabling fault (two cables with their
  far ends swapped, a rotation of three...: named the same whichever of their devices reported
  first): one mismatch for them all, named by their ids sorted and comma-joined
  (``leaf1~spine1,leaf2~spine2``), with every end among its ports. A host port that shows a
  switch, or another host, is miswired the same way (named by the host);
* **missing**: no end of a declared link shows anything, while every end that reports is up;
* **one_sided**: one end shows its declared peer and the other, reporting and up, shows nothing
  (its LLDP neighbour was dropped: a filter, an agent stopped on the far side);
* **extra**: a port the declared topology leaves unused (or a device it does not have) shows a
  neighbour; named ``a~b`` for the two devices (``#k`` when the declared fabric has that pair's
  first ``k - 1`` links already).

Host ports that show nothing are not judged: hosts need not run LLDP. Nor is a port whose far end
sends a locally assigned port id (subtype local: a SONiC switch's alias, ``etp5``) while that end
is a declared switch that has not reported yet: only its own report says which port the id is
(``PORT_TABLE``'s alias, ``lldpLocPortTable``), so until it comes the sighting names no port (a
platform starting, or a collector reconnecting, hears the far ends before the switch itself).
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.topology.discover import Resolved, Sighting
from pipeline.topology.model import Host, Link, Port, Topology
from pipeline.topology.names import link_id
from pipeline.topology.neighbors import LOCAL

MISWIRED, MISSING, ONE_SIDED, EXTRA = "miswired", "missing", "one_sided", "extra"


@dataclass(frozen=True)
class Mismatch:
    """One disagreement: its kind, the entity it is named by, the links and ports involved, and
    what was seen (``local -> far`` per port that showed something unexpected)."""

    kind: str
    entity: str
    links: tuple[str, ...]
    ports: tuple[str, ...]
    seen: tuple[str, ...] = ()
    #: the devices whose reports show it (an end that sees the wrong port, or nothing): what it
    #: is confirmed by (:mod:`detectors.topology`)
    shown_by: tuple[str, ...] = ()

    @property
    def summary(self) -> str:
        what = {MISWIRED: "cabling differs from the declared topology",
                MISSING: "declared link seen by neither end",
                ONE_SIDED: "declared link seen by one end only",
                EXTRA: "link not in the declared topology"}[self.kind]
        return f"{self.entity}: {what}" + (f" ({'; '.join(self.seen)})" if self.seen else "")


def compare(declared: Topology, res: Resolved) -> list[Mismatch]:
    """Every mismatch between ``declared`` and the sightings, in a stable order."""
    out: list[Mismatch] = []
    wrong: dict[str, list[str]] = {}           # link id -> what its ends saw instead
    witnesses: dict[str, set[str]] = {}        # link id -> devices whose ends saw it
    res = _placed(declared, res)
    for link in declared.links:
        verdict = _judge(link, res)
        if verdict is None:
            continue
        kind, seen, by = verdict
        if kind == MISWIRED:
            wrong[link.id] = seen
            witnesses[link.id] = by
        else:
            out.append(Mismatch(kind, link.id, (link.id,), (str(link.a), str(link.b)),
                                tuple(seen), tuple(sorted(by))))
    out += _miswires(declared, res, wrong, witnesses)
    out += _hosts(declared, res)
    out += _extras(declared, res)
    return sorted(out, key=lambda m: (m.kind, m.entity))


def _placed(declared: Topology, res: Resolved) -> Resolved:
    """The sightings, those whose far port is not known yet left out (see the module
    docstring): its end is not judged, as if it had not reported."""
    waiting = set(declared.switches) - res.reported
    if not waiting:
        return res
    keep = {port: s for port, s in res.sightings.items() if not _unplaced(s, waiting)}
    return res if len(keep) == len(res.sightings) else Resolved(keep, res.reported)


def _unplaced(s: Sighting, waiting: set[str]) -> bool:
    return (s.far is not None and s.remote is not None and s.remote.port_id_type == LOCAL
            and s.far.device in waiting)


def _judge(link: Link, res: Resolved) -> tuple[str, list[str], set[str]] | None:
    """The link's mismatch, what its ends saw, and the devices that saw it."""
    ends = [res.seen_from(link.a), res.seen_from(link.b)]
    reporting = [s for s in ends if s is not None]
    if not reporting or any(s.oper_up is False for s in reporting):
        return None
    sa, sb = ends
    fa = sa.far if sa is not None else None
    fb = sb.far if sb is not None else None
    wrong = [s for s, want in ((sa, link.b), (sb, link.a))
             if s is not None and s.far is not None and s.far != want]
    if wrong:
        return MISWIRED, [f"{s.port} -> {s.far}" for s in wrong], {s.port.device for s in wrong}
    if fa == link.b and fb == link.a:
        return None
    if fa is None and fb is None:
        return MISSING, [], {s.port.device for s in reporting}
    # one end sees its peer; the other sees nothing: a dropped neighbour if it reports
    blind = sb if fa == link.b else sa
    if blind is None:
        return None
    return ONE_SIDED, [f"{blind.port} -> nothing"], {blind.port.device}


def _miswires(declared: Topology, res: Resolved, wrong: dict[str, list[str]],
              witnesses: dict[str, set[str]]) -> list[Mismatch]:
    """The miswired links, grouped: links whose ends see each other's ports are one fault."""
    parent = {lid: lid for lid in wrong}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for lid in list(wrong):
        link = declared.link_by_id[lid]
        for end in link.ends():
            s = res.seen_from(end)
            if s is None or s.far is None:
                continue
            # the link whose port this end sees belongs to the same fault, whether or not its
            # own ends have reported it yet
            other = declared.attachment(s.far)
            if isinstance(other, Link):
                parent.setdefault(other.id, other.id)
                parent[find(other.id)] = find(lid)
    groups: dict[str, list[str]] = {}
    for lid in parent:
        groups.setdefault(find(lid), []).append(lid)
    out = []
    for members in groups.values():
        members.sort()
        ports = sorted({str(p) for lid in members for p in declared.link_by_id[lid].ends()})
        seen = sorted({s for lid in members for s in wrong.get(lid, ())})
        by = sorted({d for lid in members for d in witnesses.get(lid, ())})
        out.append(Mismatch(MISWIRED, ",".join(members), tuple(members), tuple(ports),
                            tuple(seen), tuple(by)))
    return out


def _hosts(declared: Topology, res: Resolved) -> list[Mismatch]:
    out = []
    for host in declared.hosts:
        s = res.seen_from(host.port)
        if s is None or s.far is None or s.oper_up is False:
            continue
        if s.far.device != host.name:
            out.append(Mismatch(MISWIRED, host.name, (host.name,), (str(host.port),),
                                (f"{s.port} -> {s.far}",), (s.port.device,)))
    return out


def _extras(declared: Topology, res: Resolved) -> list[Mismatch]:
    found: dict[frozenset[Port], tuple[Port, Port]] = {}
    by: dict[frozenset[Port], set[str]] = {}
    for s in res.sightings.values():
        if s.far is None or s.oper_up is False:
            continue
        if declared.attachment(s.port) is not None:
            continue          # a declared port: judged with its link or host
        back = declared.attachment(s.far)
        if isinstance(back, (Link, Host)):
            continue          # the far end is declared elsewhere: judged with it
        pair = frozenset((s.port, s.far))
        found.setdefault(pair, (s.port, s.far))
        by.setdefault(pair, set()).add(s.port.device)
    out = []
    for pair, (a, b) in sorted(found.items(), key=lambda kv: kv[1]):
        k = len(declared.links_between(a.device, b.device)) + 1
        name = link_id(a.device, b.device, k)
        out.append(Mismatch(EXTRA, name, (name,), tuple(sorted((str(a), str(b)))),
                            (f"{a} -> {b}",), tuple(sorted(by[pair]))))
    return out
