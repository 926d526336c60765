"""The ``detection`` section of the config: which detectors run, the rate/engine knobs, and the
correlator's."""

from __future__ import annotations

from pydantic import Field

from pipeline.config import PluginSpec, Strict


class CorrelatorSettings(Strict):
    """Knobs of the fabric-wide root-cause correlator."""

    #: symptoms are published with the incidents that explain them (root_cause false, inhibited)
    publish_symptoms: bool = True
    #: an incident with no active defining symptom is held this many sample intervals before it
    #: resolves (hysteresis at the incident level, on top of each symptom's own)
    hold_intervals: int = Field(2, ge=0)


class DetectionSettings(Strict):
    """``detectors`` empty means every registered detector with its default options."""

    detectors: tuple[PluginSpec, ...] = ()
    #: consumer group of the detect role on the samples topic
    group: str = "detect"
    #: no rate across an interval longer than this many times the series' cadence
    gap_factor: float = Field(2.5, gt=1.0)
    #: a firing alert's evidence is re-published at most this often (event-time seconds)
    update_every_s: float = Field(10.0, gt=0)
    #: a device silent for this many of its sample intervals (event time) is in "no data"
    no_data_intervals: float = Field(3.0, gt=1.0)
    correlator: CorrelatorSettings = CorrelatorSettings()
