"""The front door: the ``rocewatch`` CLI, the wiring that starts each role's loops, the scenario
runner and the benchmarks. It stands on the stages; nothing below imports it."""
