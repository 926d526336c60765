"""The detectors, one file each, named after the symptom it raises: only domain logic, on the
machinery of :mod:`detectors.rule` and :mod:`detectors.base`."""
