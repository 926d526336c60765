"""Counter → increase → rate: the one rule, used by detection, the read side and remediation.

Every reader of counters (the detectors, ``/v1/series``, latest values, the rollups, the drain's
traffic and error checks) applies this rule and nothing else, so the same samples give the same
rates everywhere. The rule is written once below, implemented once in numpy
(:mod:`pipeline.rates.rule`) and once as SQL generated from the same constants
(:mod:`pipeline.rates.sql`) for what the store computes itself; a test runs both on the same
vectors on every store backend. :mod:`pipeline.rates.state` carries it across batches.

**The unit is one interval**: two consecutive samples of a series (sorted by the devices' event
time, a repeated time counted once), ``p`` then ``c``, ``dt = t_c - t_p`` on event time. Each
interval gets a status, an *increase* (the counts known to have happened in it) and, only when
its status is ``OK`` or ``WRAP``, a *rate* = increase / dt:

* ``FIRST``: the series' first sample; nothing precedes it, no increase.
* ``RESET``: the device says its counters restarted (``FLAG_RESET``), or the counter went down
  and a wrap cannot explain it. The restart happened at an unknown moment inside the interval:
  a rate would be invented, so there is none. The increase is ``c``, the counts since the restart
  (the ones before it are lost with the device's memory): totals (errors since a soak began)
  keep what is known to have happened.
* ``WRAP``: a Counter32 source (``FLAG_COUNTER32``) fell by more than half of 2**32 from a value
  below 2**32: it wrapped. Increase ``c - p + 2**32``; a rate.
* ``GAP``: samples are missing, so averaging over the interval would smear what happened in it:
  ``dt`` exceeds :data:`~pipeline.rates.rule.GAP_FACTOR` times the series' cadence, or the
  :data:`~pipeline.rates.rule.HORIZON_NS`. The increase is known (the counter did not restart),
  the rate is not given.
* ``OK``: increase ``c - p``; a rate.

A fall of a Counter32 by less than half the modulus, or any fall of a 64-bit counter, is a
``RESET``; ``RESET`` wins over ``GAP``, and ``GAP`` over ``WRAP`` (a wrapped gap has its increase
but no rate).

**The cadence** of a series at an interval is the median length of the (up to)
:data:`~pipeline.rates.rule.CADENCE_INTERVALS` intervals before it that start within
:data:`~pipeline.rates.rule.HORIZON_NS` of the interval's end; it is known once there are
:data:`~pipeline.rates.rule.CADENCE_MIN` of them (before that only the horizon judges gaps). A
median, so one odd interval (a subscription's initial values, a missed poll) moves nothing, while
a reconfigured cadence is adopted once it is most of the recent intervals. The cadence depends on
the samples only, never on how they were batched, and on at most the horizon of history: a store
reading a range reads the horizon before it and judges every interval as detection did.

**Rates over a longer span** (a bucket of ``/v1/series``, a rollup bucket, a latest-value window)
are the increases of the rated intervals that end in the span over their total duration
(:func:`~pipeline.rates.rule.per_second`). An interval belongs to the span its later sample is in.
With a span of one sample interval this is the interval's own rate, as detection sees it; an
unrated interval (first, reset, gap) is left out rather than averaged in.
"""
