"""The ``detection`` section of the config: which detectors run, the rate/engine knobs, and the
correlator's."""

from __future__ import annotations

from pydantic import Field

from pipeline.config import Duration, PluginSpec, Strict


class CorrelatorSettings(Strict):
    """Knobs of the fabric-wide root-cause correlator."""

    #: symptoms are published with the incidents that explain them (root_cause false, inhibited)
    publish_symptoms: bool = True


class DetectionSettings(Strict):
    """``detectors`` empty means every registered detector with its default options."""

    detectors: tuple[PluginSpec, ...] = ()
    #: consumer group of the detect role on the samples topic
    group: str = "detect"
    #: a firing alert's evidence is re-published at most this often (event-time seconds)
    update_every_s: Duration = Field(10.0, gt=0)
    correlator: CorrelatorSettings = CorrelatorSettings()
