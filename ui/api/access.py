"""Who may use the API: identities with roles, their tokens (stored hashed), what each role may do.

A person or a program holds a **token** (``rocewatch token mint NAME --role ROLE`` makes one); the
API keeps only its SHA-256, with the **identity** (``name``) and the **role** it stands for, in the
config's ``access`` section or in the file ``access.tokens_file`` names::

    access:
      read: token            # reads need a viewer token too (default: open)
      tokens_file: /etc/rocewatch/tokens.yaml
      tokens:
        - {name: alice, role: operator, sha256: 9f86d081884c7d659a2feaa0c55ad015...}

A request sends ``Authorization: Bearer <token>``. The roles are ordered, each may do what the one
before it may (:data:`ROLES`):

- ``viewer`` reads (every ``GET /v1/...``; needed only with ``access.read: token``),
- ``operator`` also gives commands: approve, reject, repair, drain for maintenance, silence,
  expire a silence,
- ``admin`` also resumes automation after the stop-automation latch (:data:`COMMAND_ROLES`).

The actor recorded in the audit trail for a command is the identity of its token, never a name the
client typed. Without any token configured nobody can give commands (there is nobody to record).

Why a plain SHA-256 and not a slow, salted password hash: a minted token is 256 random bits, so
nobody can guess it or search for it from its hash, however fast the hash is; slowness and salt
defend low-entropy passwords, which these are not. A slow hash would instead cost every request
tens of milliseconds of CPU, which an unauthenticated client could spend at will. Looking the
hash up in a dictionary leaks nothing useful through timing either: learning a prefix of a hash
brings nobody closer to a token that has it.

This module reads no clock on the request path beyond the file check and needs no web framework:
``rocewatch check-config`` (:func:`check`) and ``rocewatch token`` use it as the API does.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, model_validator

from pipeline.config import Strict, read_yaml, validate
from pipeline.config_files import ConfigFile
from pipeline.errors import ConfigError

Role = Literal["viewer", "operator", "admin"]
#: the roles, weakest first: each may do everything the ones before it may
ROLES: tuple[Role, ...] = ("viewer", "operator", "admin")
#: the role each command kind needs (``POST /v1/commands``)
COMMAND_ROLES: dict[str, Role] = {
    "approve": "operator", "reject": "operator", "repair": "operator", "drain": "operator",
    "silence": "operator", "expire_silence": "operator", "resume": "admin",
}
#: what an identity's name looks like: it is the actor recorded in the audit trail
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}$"
#: a minted token: this prefix (so a leaked one is recognisable) and 32 random bytes, base64url
TOKEN_PREFIX = "rwt_"
#: the longest token a request may present (a minted one is 47 characters)
MAX_TOKEN_CHARS = 256


def rank(role: Role) -> int:
    return ROLES.index(role)


def may(role: Role, need: Role) -> bool:
    """Whether ``role`` may do what ``need`` may."""
    return rank(role) >= rank(need)


def token_hash(token: str) -> str:
    """The SHA-256 of a token, in hex: what the config stores."""
    return hashlib.sha256(token.encode()).hexdigest()


def mint() -> str:
    """A new token: 256 random bits."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


class TokenEntry(Strict):
    """One token: the identity it stands for, its role, and its SHA-256 (never the token)."""

    name: str = Field(pattern=NAME_PATTERN)
    role: Role
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")

    def line(self) -> str:
        """The entry as one YAML flow line, as it goes in ``access.tokens``."""
        return f"- {{name: {self.name}, role: {self.role}, sha256: {self.sha256}}}"


def _unique(entries: Iterable[TokenEntry], where: str) -> None:
    names: set[str] = set()
    hashes: set[str] = set()
    for i, entry in enumerate(entries):
        if entry.name in names:
            raise ConfigError(f"identity {entry.name!r} has two tokens: give each its own name",
                              f"{where}[{i}].name")
        if entry.sha256 in hashes:
            raise ConfigError("the same token is listed twice", f"{where}[{i}].sha256")
        names.add(entry.name)
        hashes.add(entry.sha256)


class AccessSettings(Strict):
    """The ``access`` section: who may use the API (the module docstring says how)."""

    #: ``open``: anyone who reaches the API reads; ``token``: reads need a viewer token
    read: Literal["open", "token"] = "open"
    tokens: tuple[TokenEntry, ...] = ()
    #: a YAML file holding ``tokens: [...]`` like the section's own (read when the API starts,
    #: and again whenever it changes)
    tokens_file: ConfigFile = ""

    @model_validator(mode="after")
    def _distinct(self) -> AccessSettings:
        _unique(self.tokens, "tokens")
        return self


class TokensFile(Strict):
    tokens: tuple[TokenEntry, ...] = ()


def load_entries(access: AccessSettings) -> tuple[TokenEntry, ...]:
    """Every token entry: the section's and the file's (checked together); a ConfigError names
    the key or the file."""
    entries = list(access.tokens)
    if access.tokens_file:
        path = Path(access.tokens_file)
        if not path.is_file():
            raise ConfigError(f"file {path} does not exist", "access.tokens_file")
        data = read_yaml(path)
        entries += validate(TokensFile, data, where=str(path)).tokens
    _unique(entries, "access.tokens" if not access.tokens_file else
            f"access.tokens + {access.tokens_file}")
    return tuple(entries)


def check(access: AccessSettings) -> list[str]:
    """What ``rocewatch check-config`` says about the section (raises on an error)."""
    entries = load_entries(access)
    if access.read == "token" and not entries:
        raise ConfigError("reads need a token, but no token is configured: mint one with "
                          "`rocewatch token mint NAME --role viewer`", "access.read")
    by_role = {role: sum(e.role == role for e in entries) for role in ROLES}
    return [f"access: reads {access.read}, "
            + ", ".join(f"{n} {role}{'s' if n != 1 else ''}" for role, n in by_role.items())]


class Identity(BaseModel):
    """Who a token stands for (``GET /v1/identity``), and what it may do."""

    name: str
    role: Role
    #: ``read`` and the command kinds this role may give
    may: tuple[str, ...] = ()

    @classmethod
    def of(cls, entry: TokenEntry) -> Identity:
        kinds = tuple(k for k, need in COMMAND_ROLES.items() if may(entry.role, need))
        return cls(name=entry.name, role=entry.role, may=("read", *kinds))


class Refused(Exception):
    """A request's credentials are missing, wrong or too weak: ``status`` 401 or 403."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        super().__init__(message)


@dataclass(frozen=True)
class _Snapshot:
    by_hash: dict[str, Identity]
    #: why the tokens file could not be read (then no token of it is honoured)
    error: str = ""


class Tokens:
    """The tokens the API honours: the section's, and the file's, re-read when the file changes
    (checked at most every ``recheck_s``), so a revoked token stops working without a restart. A
    file that has become invalid honours none of its tokens until it is fixed (its error is in
    :attr:`error` and the API's health): a typo must not keep a revoked token alive."""

    def __init__(self, access: AccessSettings, recheck_s: float = 1.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.access = access
        self.read_needs_token = access.read == "token"
        self._recheck_s = recheck_s
        self._clock = clock
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._checked = clock()
        self._snapshot = self._load()  # a bad file at start is the caller's ConfigError

    @property
    def error(self) -> str:
        return self._snapshot.error

    @property
    def count(self) -> int:
        return len(self._snapshot.by_hash)

    def _file_stamp(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.access.tokens_file)
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size)

    def _load(self) -> _Snapshot:
        if self.access.tokens_file:
            self._stamp = self._file_stamp()
        entries = load_entries(self.access)
        return _Snapshot({e.sha256: Identity.of(e) for e in entries})

    def _current(self) -> _Snapshot:
        if not self.access.tokens_file or self._clock() - self._checked < self._recheck_s:
            return self._snapshot
        with self._lock:
            self._checked = self._clock()
            if self._file_stamp() != self._stamp:
                try:
                    self._snapshot = self._load()
                except ConfigError as exc:
                    inline = {e.sha256: Identity.of(e) for e in self.access.tokens}
                    self._snapshot = _Snapshot(inline, f"{exc}")
        return self._snapshot

    def identify(self, authorization: str | None) -> Identity | None:
        """The identity of an ``Authorization`` header's bearer token; None without a header;
        :class:`Refused` (401) for a malformed or unknown token."""
        if not authorization:
            return None
        scheme, _, token = authorization.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise Refused(401, "send the token as Authorization: Bearer <token>")
        if len(token) > MAX_TOKEN_CHARS:
            raise Refused(401, "the token is not one the API knows")
        found = self._current().by_hash.get(token_hash(token))
        if found is None:
            raise Refused(401, "the token is not one the API knows (revoked, or from another "
                               "deployment?)")
        return found

    def require(self, identity: Identity | None, need: Role, what: str) -> Identity:
        """``identity`` if it may do what ``need`` may, else :class:`Refused` saying why."""
        if identity is None:
            if not self.count:
                raise Refused(401, f"{what} needs a token, and the API has none configured: "
                                   f"mint one with `rocewatch token mint NAME --role {need}` "
                                   "and add its line to access.tokens")
            raise Refused(401, f"{what} needs Authorization: Bearer <token> (role {need} or "
                               "above)")
        if not may(identity.role, need):
            raise Refused(403, f"{what} needs role {need}; {identity.name} is {identity.role}")
        return identity
