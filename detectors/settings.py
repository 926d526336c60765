"""The ``detection`` section of the config: which detectors run, the rate/engine knobs, the
correlator's, and how detection is spread over processes (``mode``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from pipeline.config import Duration, PluginSpec, Strict


class CorrelatorSettings(Strict):
    """Knobs of the fabric-wide root-cause correlator."""

    #: symptoms are published with the incidents that explain them (root_cause false, inhibited)
    publish_symptoms: bool = True


class PartitionSettings(Strict):
    """Knobs of partitioned detection (``mode: partitioned``, :mod:`detectors.partition`)."""

    #: a correlator that starts (or takes over) waits this many sample intervals of event time
    #: before its first step, so every live worker has reported the devices it owns
    warmup_intervals: float = Field(1.0, ge=0)
    #: a worker not heard from for this many sample intervals of event time is gone: its
    #: symptoms no longer count (its devices are reported by their new owners)
    expire_intervals: float = Field(10.0, gt=1)


class DetectionSettings(Strict):
    """``detectors`` empty means every registered detector with its default options."""

    detectors: tuple[PluginSpec, ...] = ()
    #: consumer group of the detect role on the samples topic
    group: str = "detect"
    #: a firing incident (a root cause) whose verdict has not changed is re-published, with its
    #: latest evidence, once it is this old in event time
    update_every_s: Duration = Field(10.0, gt=0)
    #: the same for a symptom (not a root cause). Thousands are firing on a healthy AllReduce
    #: fabric (pausing ports, queues building): each restated every interval would be a stream
    #: of its own. A minute, as Prometheus re-sends firing alerts every ``resend_delay`` (1 m)
    symptom_update_every_s: Duration = Field(60.0, gt=0)
    correlator: CorrelatorSettings = CorrelatorSettings()
    #: a live detect engine gathers what its polls return and steps once it comes from this
    #: share of the devices, or spans this share of the sample interval in event time, or a
    #: poll comes back empty (:mod:`detectors.gather`): a sample waits at most this share of an
    #: interval to be judged; 0 steps on every poll
    gather_intervals: float = Field(0.25, ge=0, le=1)
    #: ``single``: the detect role runs the whole chain (detectors and correlator) on the samples
    #: it reads: one detect process per deployment. ``partitioned``: each detect process judges
    #: its share of the samples partitions and publishes symptoms; the ``correlate`` role (one
    #: process holds the ``correlator`` lease, others stand by) correlates them fabric-wide
    mode: Literal["single", "partitioned"] = "single"
    partition: PartitionSettings = PartitionSettings()
