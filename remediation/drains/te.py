"""Telling the TE controller about drains: before (move traffic off), after (the link is down),
on abort (keep using it), and on restore (use it again).

Rule 8 of the drain safety notes (Statesman; Meta's capacity-aware routing): the controller hears
of a drain before anything is touched, so it can re-route over the remaining capacity, and again
once the link is down. The HTTP client follows ``docs/te-controller.md``; failures are
:class:`~pipeline.errors.RemediationError` with what the controller said.

The client never waits. Its callers are runbook steps on the runbook job's thread, and a step
that cannot finish now is simply looked at again on the next tick, so a 5xx, a 429 or a network
failure raises :class:`TeRetryLater` and the step makes the same call again later. Each call
(method and path) is retried under the retry policy (:mod:`pipeline.retry`): a growing,
jittered wait, the controller's ``Retry-After`` honoured (up to the cap), at most
``te.attempts`` tries; before its wait is over the client answers a call with
:class:`TeRetryLater` without a request; once the tries are spent it raises the failure.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, replace
from typing import Any, Protocol
from urllib.parse import quote

import httpx

from pipeline.errors import RemediationError
from pipeline.retry import Backoff, Clock, RetryPolicy, parse_retry_after
from remediation.settings import TeSettings

REQUESTED_BY = "rocewatch-remediation"
#: a notice the controller could not take: soon again at first, its Retry-After honoured up to
#: half a minute (nobody waits meanwhile); calls ticks apart keep one streak, a call long after
#: an abandoned one starts afresh
TE_RETRY = RetryPolicy(initial_s=0.5, cap_s=30.0, reset_after_s=10.0)


class TeRetryLater(RemediationError):
    """The controller could not take a notice now and another try is allowed: make the same
    call again once ``retry_in_s`` has passed."""

    def __init__(self, message: str, retry_in_s: float) -> None:
        self.retry_in_s = retry_in_s
        super().__init__(message)


def _summary(answer: dict[str, Any], what: str) -> str:
    changed = "" if answer.get("changed", True) else " (already)"
    version = answer.get("paths_version")
    return f"{what}{changed}" + (f", paths v{version}" if version is not None else "")


@dataclass
class _Retrying:
    """One call that failed and may be tried again: its streak and what the last try said."""

    backoff: Backoff
    last: str


class TeController(Protocol):
    """What the runbooks tell the controller; each notice returns a short summary, or raises
    :class:`TeRetryLater` (make the same call again later) or RemediationError (it failed)."""

    def announce(self, link: str, reason: str, evidence: dict[str, Any]) -> str:
        """Before: the link will be drained; move traffic off it."""

    def confirm(self, link: str) -> str:
        """After: the link is down; the controller must still hold the drain."""

    def cancel(self, link: str, reason: str) -> str:
        """The drain was abandoned before the link went down: keep the link in service."""

    def restore(self, link: str) -> str:
        """After repair and soak: the link may carry traffic again."""

    def drains(self) -> dict[str, dict[str, Any]]:
        """The links the controller holds drained (whoever asked) and its word on each."""


class HttpTe:
    """The TE controller's HTTP API (see ``docs/te-controller.md``); it never waits (module
    docstring)."""

    def __init__(self, base_url: str, settings: TeSettings,
                 client: httpx.Client | None = None, *, clock: Clock = time.monotonic,
                 rng: random.Random | None = None) -> None:
        self.base = base_url.rstrip("/")
        self.settings = settings
        self.policy = replace(TE_RETRY, max_attempts=settings.attempts)
        headers = {"User-Agent": "rocewatch"}
        token = settings.token.get_secret_value()
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self._client = client or httpx.Client(timeout=settings.timeout, headers=headers)
        self._clock = clock
        self._rng = rng or random.Random()
        self._retrying: dict[tuple[str, str], _Retrying] = {}

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None,
              ) -> dict[str, Any]:
        """One request (none while an earlier failure's wait lasts); the JSON answer. Raises
        TeRetryLater for a 5xx, 429 or network failure that may be tried again, and
        RemediationError when the controller refused (404 unknown link, 409 would isolate a
        switch, 422 bad body) or the tries are spent."""
        url = f"{self.base}{path}"
        key = (method, path)
        retrying = self._retrying.get(key)
        if retrying is not None and not retrying.backoff.due():
            left = retrying.backoff.remaining_s()
            raise TeRetryLater(f"TE controller {method} {url}: {retrying.last}; trying again "
                               f"in {left:.1f}s", left)
        after: float | None = None
        try:
            response = self._client.request(method, url, json=body)
        except httpx.TransportError as exc:
            last = f"{type(exc).__name__}: {exc}"
        else:
            if response.status_code < 300:
                self._retrying.pop(key, None)
                try:
                    answer = response.json()
                except ValueError:
                    answer = {}
                return answer if isinstance(answer, dict) else {"answer": answer}
            last = f"{response.status_code} {response.text[:300]}"
            if response.status_code < 500 and response.status_code != 429:
                self._retrying.pop(key, None)
                raise RemediationError(f"TE controller {method} {url} failed: {last}")
            after = parse_retry_after(response.headers.get("retry-after"))
        if retrying is None:
            retrying = self._retrying[key] = _Retrying(
                Backoff(self.policy, self._rng, self._clock), last)
        retrying.last = last
        wait = retrying.backoff.fail(after)
        if wait is None:
            del self._retrying[key]
            raise RemediationError(f"TE controller {method} {url} failed after "
                                   f"{retrying.backoff.failures} attempt(s): {last}")
        raise TeRetryLater(f"TE controller {method} {url}: {last}; trying again in "
                           f"{wait:.1f}s", wait)

    def _link_path(self, link: str, verb: str = "") -> str:
        return f"/v1/links/{quote(link, safe='~')}" + (f"/{verb}" if verb else "")

    def announce(self, link: str, reason: str, evidence: dict[str, Any]) -> str:
        response = self._call("POST", self._link_path(link, "drain"), {
            "reason": reason[:1000], "requested_by": REQUESTED_BY, "evidence": evidence})
        return _summary(response, "drained")

    def confirm(self, link: str) -> str:
        """The API has no "after" verb: read the link back and check the controller still holds
        the drain (re-asserting it, idempotently, if it lost it) now that the port is down."""
        state = self._call("GET", self._link_path(link))
        if state.get("drained") is True:
            return f"TE holds the drain (link oper {state.get('oper', '?')})"
        again = self._call("POST", self._link_path(link, "drain"), {
            "reason": "port disabled after drain; re-asserting", "requested_by": REQUESTED_BY})
        return f"TE had lost the drain; re-asserted: {_summary(again, 'drained')}"

    def cancel(self, link: str, reason: str) -> str:
        response = self._call("POST", self._link_path(link, "undrain"), {
            "reason": f"drain abandoned: {reason}"[:1000], "requested_by": REQUESTED_BY})
        return _summary(response, "undrained")

    def restore(self, link: str) -> str:
        response = self._call("POST", self._link_path(link, "undrain"), {
            "reason": "repaired; soak clean", "requested_by": REQUESTED_BY})
        return _summary(response, "undrained")

    def drains(self) -> dict[str, dict[str, Any]]:
        """What the controller holds drained: link id → its ``drain`` object (``requested_by``,
        ``reason``, ``at_ns``), from ``GET /v1/state?links=drained`` (a controller that lists
        every link anyway is read the same: the drained ones are picked out)."""
        state = self._call("GET", "/v1/state?links=drained")
        out: dict[str, dict[str, Any]] = {}
        for link in state.get("links", ()):
            if isinstance(link, dict) and link.get("drained") is True:
                drain = link.get("drain")
                out[str(link.get("id"))] = dict(drain) if isinstance(drain, dict) else {}
        return out

    def close(self) -> None:
        self._client.close()
