"""The guarded runbooks: link and host-port drains, their guards, their steps against the TE
controller and the switches, and the telemetry that verifies them."""
