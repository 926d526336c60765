"""Benchmarks behind ``rocewatch bench ...``: each prints numbers, never asserts a time."""
