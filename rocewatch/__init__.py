"""rocewatch."""
