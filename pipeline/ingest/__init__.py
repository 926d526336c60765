"""Ingest: the loop that moves what the bus carries into the store, at least once and
idempotently."""
