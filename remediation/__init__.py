"""Remediation: the alert lifecycle and on-call receivers, and the guarded runbooks that drain a
faulty link (or isolate a storming host port) and tell the TE controller. The role's loop is
:func:`remediation.loop.run`; ``docs/remediation.md`` describes the whole."""
