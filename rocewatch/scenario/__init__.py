"""Scenario runs: the lab with the whole platform on top, the run report, scoring, and random
scenarios for backtesting."""
