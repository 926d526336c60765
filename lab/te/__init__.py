"""The reference traffic-engineering controller: CSPF paths and its HTTP API."""
