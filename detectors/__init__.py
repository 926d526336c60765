"""Detection: counter rates into per-port and per-switch symptoms (``rules``), and the fabric-wide
correlation that turns them into one incident per root cause (``correlation``).

Detectors are pure: ``observe(frame, now) -> alerts`` on event time, no I/O and no clock.
"""
