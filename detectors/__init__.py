"""detectors."""
