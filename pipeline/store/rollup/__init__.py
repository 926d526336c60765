"""Rollups: 1-minute and 1-hour buckets built by an event-time job, and read as if they held every
sample."""
