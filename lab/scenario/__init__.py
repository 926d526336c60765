"""Scenario files (format 1): loading, strict validation, and the ground truth they imply."""
