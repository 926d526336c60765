"""Tests of the lab (mirrors lab/)."""
