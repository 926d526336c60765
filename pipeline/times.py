"""The one grammar of durations and instants, and how both are written back for people.

Every surface that reads a time — the config file, the CLI (``rocewatch replay``,
``rocewatch query``), the API's parameters — parses it here, so the same text means the same
thing everywhere; everything rocewatch prints for people is written here, in a form this grammar
reads back. ``docs/time.md`` is the operator's copy of this page.

**Durations** (how long)::

    90s  1h30m  500ms  2d  1.5m  2h15m30s  250us

one or more ``<number><unit>`` with units ``d h m s ms us ns``, largest first, each at most once;
a number may have a fraction (``1.5m``). A bare number is **seconds** (``30``, ``0.25``), in the
config, the CLI and the API alike. A duration is never negative and at most 36500d.

**Instants** (when)::

    2026-11-30T10:00:00Z  2026-11-30T11:00:00.5+01:00  2026-11-30 10:00Z
    now  now-15m  now+30s  -15m
    @1796032800  @1796032800.25
    1796032800000000000

* RFC 3339 **with a zone** (``Z`` or ``±hh:mm``); a space may stand for the ``T``, the seconds may
  be left out, the fraction has up to 9 digits. A time **without a zone is refused**: it means
  different instants on different machines, and guessing UTC moves an incident by hours.
* ``now`` is **event time: the fabric's clock**, the newest sample's event time the store holds
  (:class:`ui.query.clock.FabricClock`; the wall clock only while the store is empty), never the
  wall clock of the process reading the text. ``now-15m`` / ``now+30s`` are relative to it;
  ``-15m`` is short for ``now-15m``. Where no clock exists (the config file) relative instants
  are refused.
* ``@<seconds>``: Unix seconds (GNU ``date -d @...``), with an optional fraction.
* A bare integer is **nanoseconds since the epoch**: what the API returns (``now_ns``,
  ``starts_ns``), so an answer's times can be sent back as they are. One below 10^17 (1973) is
  refused as seconds or milliseconds sent by mistake, with the ``@`` form to use instead.
* Instants lie in [1970-01-01T00:00:00Z, 2100-01-01T00:00:00Z).

**Since** (``--since``): a duration back from now (``15m`` = ``now-15m``; a bare number is
seconds, so a bare ns integer is not an instant here) or any other instant.

Bad input raises :class:`~pipeline.errors.QueryError` (one line naming the value and the forms
accepted); the config layer turns it into a :class:`~pipeline.errors.ConfigError` at its key path.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

from pipeline.errors import QueryError

NS = 1_000_000_000
#: the units of a duration, largest first (the order they must be written in)
UNITS_NS: dict[str, int] = {"d": 86400 * NS, "h": 3600 * NS, "m": 60 * NS, "s": NS,
                            "ms": 1_000_000, "us": 1_000, "ns": 1}
MAX_DURATION_NS = 36500 * 86400 * NS
MIN_INSTANT_NS = 0
#: 2100-01-01T00:00:00Z, the first instant refused
MAX_INSTANT_NS = 4_102_444_800 * NS
#: a bare integer below this (1973-03-03) is seconds or milliseconds sent by mistake
MIN_BARE_NS = 10**17
#: longer text is refused before any arithmetic
MAX_TEXT = 64

DURATION_FORMS = ("a duration like 90s, 1h30m, 500ms or 2d (units d h m s ms us ns, largest "
                  "first; a bare number is seconds)")
INSTANT_FORMS = ("an instant: RFC 3339 with a zone (2026-11-30T10:00:00Z), now, now-15m, "
                 "@<Unix seconds> or ns since the epoch")

_NUM = r"\d+(?:\.\d+)?"
# ASCII digits only, and fullmatch (``$`` would let a trailing newline through)
_DURATION = re.compile("".join(f"(?:(?P<{u}>{_NUM}){u})?" for u in UNITS_NS), re.ASCII)
_BARE_SECONDS = re.compile(_NUM, re.ASCII)
_RELATIVE = re.compile(r"(?:now)?(?P<sign>[+-])(?P<span>.+)", re.ASCII | re.DOTALL)
_UNIX_SECONDS = re.compile(r"@(?P<s>\d+)(?:\.(?P<f>\d{1,9}))?", re.ASCII)
_BARE_NS = re.compile(r"\d+", re.ASCII)
_RFC3339 = re.compile(
    r"(?P<Y>\d{4})-(?P<M>\d{2})-(?P<D>\d{2})[Tt ](?P<h>\d{2}):(?P<m>\d{2})"
    r"(?::(?P<s>\d{2})(?:\.(?P<f>\d{1,9}))?)?(?P<zone>[Zz]|[+-]\d{2}:\d{2})?", re.ASCII)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _fail(what: str, message: str) -> QueryError:
    return QueryError(f"{what}: {message}" if what else message)


# --- durations ---

def parse_duration(value: object, what: str = "") -> int:
    """A duration (see the module docstring) → ns; a number is seconds."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise _fail(what, f"want {DURATION_FORMS}; got {_show(value)}")
    if isinstance(value, int):
        exact = Decimal(value) * NS
    elif isinstance(value, float):
        if not math.isfinite(value) or value < 0:
            raise _fail(what, f"want {DURATION_FORMS}; got {_show(value)}")
        exact = Decimal(repr(value)) * NS
    else:
        exact = _duration_text(value.strip(), what)
    if exact < 0:
        raise _fail(what, f"want {DURATION_FORMS}; got {_show(value)}")
    if exact > MAX_DURATION_NS:
        raise _fail(what, f"{_show(value)} is longer than the longest duration accepted, "
                          f"{format_duration(MAX_DURATION_NS)}")
    return int(exact.to_integral_value())


def _duration_text(text: str, what: str) -> Decimal:
    bad = _fail(what, f"want {DURATION_FORMS}; got {_show(text)}")
    if not text or len(text) > MAX_TEXT:
        raise bad
    bare = _BARE_SECONDS.fullmatch(text)
    if bare:
        return Decimal(bare.group(0)) * NS
    parts = _DURATION.fullmatch(text)
    if not parts:
        raise bad
    return sum((Decimal(n) * UNITS_NS[u] for u, n in parts.groupdict().items() if n is not None),
               Decimal(0))


def duration_seconds(value: object, what: str = "") -> float:
    """A duration as float seconds (what the config's ``Duration`` fields hold)."""
    return parse_duration(value, what) / NS


def is_duration(value: object) -> bool:
    """Whether ``value`` is written in the duration grammar (its bounds aside)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return True
    if not isinstance(value, str):
        return False
    text = value.strip()
    return bool(text) and len(text) <= MAX_TEXT and bool(
        _BARE_SECONDS.fullmatch(text) or _DURATION.fullmatch(text))


def format_duration(ns: int, parts: int | None = None) -> str:
    """``ns`` in the duration grammar, largest units first (``1h30m``, ``500ms``, ``0s``).

    Exact unless ``parts`` keeps only that many unit places from the largest one used, a
    truncation for display (``parts=2``: ``3m5s`` for 3m5.2s, ``1h`` for 1h0m5s)."""
    if ns < 0:
        raise ValueError(f"a duration is never negative: {ns}")
    out: list[str] = []
    rest = int(ns)
    places = 0
    for unit, size in UNITS_NS.items():
        count, rest = divmod(rest, size)
        if count or out:
            places += 1
        if parts is not None and places > parts:
            break
        if count:
            out.append(f"{count}{unit}")
    return "".join(out) or "0s"


# --- instants ---

def parse_instant(value: object, now_ns: int | None, what: str = "") -> int:
    """An instant (see the module docstring) → ns since the epoch; relative forms are taken
    from ``now_ns``, the fabric's clock (None: no clock here, relative forms are refused)."""
    if isinstance(value, bool):
        raise _fail(what, f"want {INSTANT_FORMS}; got {_show(value)}")
    if isinstance(value, int):
        return _bare_ns(value, what)
    if isinstance(value, datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise _fail(what, f"{value.isoformat()!r} has no time zone: add Z for UTC or an "
                              f"offset like +01:00")
        return _bounded(_datetime_ns(value), value, what)
    if isinstance(value, date):
        raise _fail(what, f"{value.isoformat()!r} is a date, not an instant: write "
                          f"{value.isoformat()}T00:00:00Z")
    if not isinstance(value, str):
        raise _fail(what, f"want {INSTANT_FORMS}; got {_show(value)}")
    text = value.strip()
    if not text or len(text) > MAX_TEXT:
        raise _fail(what, f"want {INSTANT_FORMS}; got {_show(value)}")
    if _BARE_NS.fullmatch(text):
        return _bare_ns(int(text), what)
    if text == "now" or _RELATIVE.fullmatch(text):
        return _relative(text, now_ns, what)
    unix = _UNIX_SECONDS.fullmatch(text)
    if unix:
        ns = int(unix.group("s")) * NS + int((unix.group("f") or "").ljust(9, "0"))
        return _bounded(ns, text, what)
    stamp = _RFC3339.fullmatch(text)
    if stamp:
        return _rfc3339(stamp, text, what)
    raise _fail(what, f"want {INSTANT_FORMS}; got {_show(value)}")


def _relative(text: str, now_ns: int | None, what: str) -> int:
    if now_ns is None:
        raise _fail(what, f"{_show(text)} is relative to the fabric's clock, and there is none "
                          f"here: write RFC 3339 (2026-11-30T10:00:00Z)")
    if text == "now":
        return _bounded(now_ns, text, what)
    rel = _RELATIVE.fullmatch(text)
    assert rel is not None
    span = rel.group("span")
    if not is_duration(span) or span.strip() != span:
        raise _fail(what, f"{_show(text)}: after now- or now+ comes {DURATION_FORMS}")
    offset = parse_duration(span, what)
    return _bounded(now_ns + offset if rel.group("sign") == "+" else now_ns - offset, text, what)


def _bare_ns(value: int, what: str) -> int:
    if 0 <= value < MIN_BARE_NS:
        hint = f"@{value} for Unix seconds" if value < 10**11 else "ns"
        raise _fail(what, f"{value} is not nanoseconds since the epoch (too small: seconds or "
                          f"milliseconds?): write {hint}, or RFC 3339")
    return _bounded(value, value, what)


def _rfc3339(m: re.Match[str], text: str, what: str) -> int:
    zone = m.group("zone")
    if zone is None:
        raise _fail(what, f"{_show(text)} has no time zone: add Z for UTC or an offset like "
                          f"+01:00")
    try:
        offset = timedelta(0)
        if zone not in ("Z", "z"):
            hours, minutes = int(zone[1:3]), int(zone[4:6])
            if hours > 23 or minutes > 59:
                raise ValueError(zone)
            offset = (1 if zone[0] == "+" else -1) * timedelta(hours=hours, minutes=minutes)
        stamp = datetime(int(m.group("Y")), int(m.group("M")), int(m.group("D")),
                         int(m.group("h")), int(m.group("m")), int(m.group("s") or 0),
                         tzinfo=UTC) - offset
    except (ValueError, OverflowError):
        raise _fail(what, f"{_show(text)} is not a valid date and time ({INSTANT_FORMS})") from None
    ns = _datetime_ns(stamp) + int((m.group("f") or "").ljust(9, "0"))
    return _bounded(ns, text, what)


def _datetime_ns(stamp: datetime) -> int:
    delta = stamp - _EPOCH
    return (delta.days * 86400 + delta.seconds) * NS + delta.microseconds * 1000


def _bounded(ns: int, shown: object, what: str) -> int:
    if ns < MIN_INSTANT_NS:
        raise _fail(what, f"{_show(shown)} is before 1970-01-01T00:00:00Z")
    if ns >= MAX_INSTANT_NS:
        raise _fail(what, f"{_show(shown)} is too far in the future (instants end before "
                          f"2100-01-01T00:00:00Z)")
    return ns


def is_relative(value: object) -> bool:
    """Whether ``value`` needs the fabric's clock (``now``, ``now-15m``, ``-15m``)."""
    if not isinstance(value, str):
        return False
    text = value.strip()
    return text == "now" or bool(_RELATIVE.fullmatch(text))


def since_text(value: str, what: str = "since") -> str:
    """``--since``: a duration back from now (``15m`` → ``now-15m``; bounds checked) or an
    instant, as it is; text that is neither is refused here, naming both forms."""
    text = value.strip()
    if is_duration(text):
        parse_duration(text, what)
        return f"now-{text}"
    if text == "now" or any(form.fullmatch(text) for form in (
            _RELATIVE, _UNIX_SECONDS, _BARE_NS, _RFC3339)):
        return text
    raise _fail(what, f"want a duration back from now (90s, 1h30m, 2d; a bare number is "
                      f"seconds) or {INSTANT_FORMS}; got {_show(value)}")


def utc(ns: int) -> datetime:
    """``ns`` as an aware UTC datetime (microseconds; whole seconds computed exactly)."""
    seconds, frac = divmod(int(ns), NS)
    return _EPOCH + timedelta(seconds=seconds, microseconds=frac // 1000)


def format_instant(ns: int, digits: int = 9) -> str:
    """``ns`` as RFC 3339 in UTC with at most ``digits`` of fraction, trailing zeros trimmed
    (``2026-11-30T10:00:00Z``, ``...00.5Z``); with 9 digits :func:`parse_instant` reads back the
    same ns."""
    seconds, frac = divmod(int(ns), NS)
    base = (_EPOCH + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S")
    fraction = f"{frac:09d}"[:max(0, min(9, digits))].rstrip("0")
    return f"{base}.{fraction}Z" if fraction else f"{base}Z"
