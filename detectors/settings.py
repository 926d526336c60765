"""The ``detection`` section of the config: which detectors run, and the correlator's knobs."""

from __future__ import annotations

from pipeline.config import PluginSpec, Strict


class DetectionSettings(Strict):
    """``detectors`` empty means every registered detector with its default options."""

    detectors: tuple[PluginSpec, ...] = ()
