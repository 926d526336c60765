"""The symptoms of a step, indexed by port and by name, kept from step to step.

The correlator reads a few thousand symptoms at every step, and most are the very objects of the
last one (alerts are frozen; a detector makes a new one only for a port it judged, and keeps the
others). :class:`SymptomIndex` keeps them by identity: a step tells it what came and what went
(dictionaries of identities, no symptom read), and only those are indexed or dropped. The step's
order is kept as each symptom's position in the step's list, so every read in order (by port, by
name, the first sighting of a port) is the order the symptoms came in, as a scan of the list
would give it: the classifiers pick among a port's symptoms by that order.

A symptom is one object in a step's list (a detector's active set holds each once).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from pipeline.model import Alert

#: a test of a symptom's own fields (its evidence): the index applies it once per symptom object
Test = Callable[[Alert], bool]


class SymptomIndex:
    """This step's symptoms by identity, port and name, with their positions."""

    def __init__(self) -> None:
        #: identity → (symptom, its port or "", its name), for every symptom of this step
        self.alive: dict[int, tuple[Alert, str, str]] = {}
        #: identity → the symptom's position in this step's list
        self.pos: dict[int, int] = {}
        #: port → identity → symptom (symptoms that name a port, by their first)
        self._by_port: dict[str, dict[int, Alert]] = {}
        #: name → identity → the symptom's port (or "")
        self._by_name: dict[str, dict[int, str]] = {}
        #: (name, test) → identity → port, of the symptoms of that name with a port that pass
        self._passing: dict[tuple[str, Test], dict[int, str]] = {}
        #: reads made in this step, by name
        self._named: dict[str, list[tuple[str, Alert]]] = {}

    def step(self, symptoms: Sequence[Alert]) -> tuple[list[Alert], list[Alert]]:
        """Index this step's symptoms; returns the ones that came and the ones that went."""
        ids = list(map(id, symptoms))
        # each object at its first position (a later duplicate is written over by an earlier)
        pos = dict(zip(reversed(ids), range(len(ids) - 1, -1, -1), strict=True))
        alive, by_port, by_name, passing = self.alive, self._by_port, self._by_name, self._passing
        went: list[Alert] = []
        for key in alive.keys() - pos.keys():
            alert, port, name = alive.pop(key)
            went.append(alert)
            if port:
                _pop(by_port, port, key)
            _pop(by_name, name, key)
            for (test_name, _), kept in passing.items():
                if test_name == name:
                    kept.pop(key, None)
        came: list[Alert] = []
        for key in pos.keys() - alive.keys():
            alert = symptoms[pos[key]]
            came.append(alert)
            ports = alert.ports
            port = ports[0] if ports else ""
            name = alert.name
            alive[key] = (alert, port, name)
            if port:
                members = by_port.get(port)
                if members is None:
                    by_port[port] = {key: alert}
                else:
                    members[key] = alert
            named = by_name.get(name)
            if named is None:
                by_name[name] = {key: port}
            else:
                named[key] = port
            for (test_name, test), kept in passing.items():
                if test_name == name and port and test(alert):
                    kept[key] = port
        self.pos = pos
        self._named = {}
        return came, went

    def _ordered(self, members: dict[int, str]) -> list[tuple[str, Alert]]:
        """(port, symptom) of members with a port, in order."""
        pos, alive = self.pos, self.alive
        return [(port, alive[key][0]) for key, port in
                sorted(members.items(), key=lambda kp: pos[kp[0]]) if port]

    def on(self, port: str) -> list[Alert]:
        """The symptoms on a port (by their first port), in order."""
        members = self._by_port.get(port)
        if not members:
            return []
        if len(members) == 1:
            return list(members.values())
        pos = self.pos
        return [members[key] for key in sorted(members, key=pos.__getitem__)]

    def named(self, name: str) -> list[tuple[str, Alert]]:
        """(port, symptom) of every symptom of a name that names a port, in order."""
        hit = self._named.get(name)
        if hit is None:
            hit = self._named[name] = self._ordered(self._by_name.get(name, {}))
        return hit

    def ports_named(self, name: str) -> set[str]:
        """The ports that have a symptom of a name."""
        out = set(self._by_name.get(name, {}).values())
        out.discard("")
        return out

    def with_names(self, names: Iterable[str]) -> list[Alert]:
        """Every symptom of any of the names (whether it names a port or not), in order."""
        keys = [key for name in names for key in self._by_name.get(name, ())]
        pos, alive = self.pos, self.alive
        return [alive[key][0] for key in sorted(keys, key=pos.__getitem__)]

    def passing(self, name: str, test: Test) -> list[tuple[str, Alert]]:
        """:meth:`named` of the symptoms that pass ``test``: the test is applied once per
        symptom object, as it comes (``test`` reads only the symptom: the same function every
        step)."""
        key = (name, test)
        kept = self._passing.get(key)
        if kept is None:
            alive = self.alive
            kept = self._passing[key] = {k: port for k, port in self._by_name.get(name, {}).items()
                                         if port and test(alive[k][0])}
        return self._ordered(kept)

    def first_seen(self, port: str) -> int:
        """The position of a port's first symptom (ports in the order they are first seen)."""
        pos = self.pos
        return min(pos[key] for key in self._by_port[port])


def _pop(table: dict[str, dict[int, Alert]] | dict[str, dict[int, str]], key: str,
         member: int) -> None:
    """A member out of ``table[key]``, and the key out once it holds none."""
    members = table[key]
    del members[member]
    if not members:
        del table[key]
