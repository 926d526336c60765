"""The lab: a simulated RoCE spine-leaf fabric with real device agents, faults and a TE controller.

Start here: :class:`lab.runtime.Lab` (programmatic API), ``rocewatch lab ...`` (CLI,
:mod:`rocewatch.cli.lab`), ``docs/lab.md`` (how it works and what it measures).
"""
