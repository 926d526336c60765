"""Counter → rate: wrap, reset, gaps, late samples, cadence, on event time only."""

from __future__ import annotations

import numpy as np

from detectors.series import SeriesIndex
from pipeline.metrics import metric_id
from pipeline.model import FLAG_COUNTER32, FLAG_RESET, BatchBuilder, SampleBatch
from pipeline.rates import RateState, Status

S = 1_000_000_000


def batch(rows: list[tuple[float, str, str, str, int, float, int]]) -> SampleBatch:
    b = BatchBuilder()
    for t, dev, port, metric, qual, value, flags in rows:
        b.add(round(t * S), dev, port, metric_id(metric), qual, value, flags)
    return b.build()


def feed(state: RateState, names: SeriesIndex, rows: list) -> tuple:
    bt = batch(rows)
    ids = names.ids(bt)
    return state.update(bt, ids.series, ids.port)


def counter(t: float, value: float, flags: int = 0, metric: str = "if_in_errors") -> tuple:
    return (t, "leaf1", "Ethernet1", metric, -1, value, flags)


def test_rate_is_delta_over_event_time_not_arrival():
    st, names = RateState(), SeriesIndex()
    first = feed(st, names, [counter(10.0, 100)])
    assert first.status[0] == Status.FIRST and np.isnan(first.rate[0])
    out = feed(st, names, [counter(12.0, 300)])  # arrives whenever: only the stamps count
    assert out.status[0] == Status.OK
    assert out.rate[0] == 100.0 and out.dt_s[0] == 2.0


def test_counter32_wrap_adds_the_modulus_back():
    st, names = RateState(), SeriesIndex()
    feed(st, names, [counter(1.0, 2**32 - 50, FLAG_COUNTER32)])
    out = feed(st, names, [counter(2.0, 150, FLAG_COUNTER32)])
    assert out.status[0] == Status.WRAP
    assert out.rate[0] == 200.0
    assert st.stats.wraps == 1


def test_a_drop_too_large_for_a_wrap_is_a_reset_even_on_counter32():
    st, names = RateState(), SeriesIndex()
    feed(st, names, [counter(1.0, 1_000_000, FLAG_COUNTER32)])
    out = feed(st, names, [counter(2.0, 10, FLAG_COUNTER32)])
    assert out.status[0] == Status.RESET and np.isnan(out.rate[0])


def test_64bit_counter_going_backwards_is_a_reset_and_restarts_the_series():
    st, names = RateState(), SeriesIndex()
    feed(st, names, [counter(1.0, 5_000, metric="if_in_octets")])
    out = feed(st, names, [counter(2.0, 40, metric="if_in_octets")])
    assert out.status[0] == Status.RESET and np.isnan(out.rate[0])
    nxt = feed(st, names, [counter(3.0, 140, metric="if_in_octets")])
    assert nxt.status[0] == Status.OK and nxt.rate[0] == 100.0


def test_reset_flag_means_no_rate_even_when_the_value_grew():
    st, names = RateState(), SeriesIndex()
    feed(st, names, [counter(1.0, 100)])
    out = feed(st, names, [counter(2.0, 5_000, FLAG_RESET)])
    assert out.status[0] == Status.RESET and np.isnan(out.rate[0])
    assert st.stats.resets == 1


def test_gap_longer_than_the_cadence_gives_no_rate_and_is_visible():
    st, names = RateState(gap_factor=2.5), SeriesIndex()
    for t in range(1, 6):
        feed(st, names, [counter(float(t), 10.0 * t)])
    missed_one = feed(st, names, [counter(7.0, 70)])  # two intervals: still a rate
    assert missed_one.status[0] == Status.OK and missed_one.rate[0] == 10.0
    long_gap = feed(st, names, [counter(17.0, 170)])
    assert long_gap.status[0] == Status.GAP and np.isnan(long_gap.rate[0])
    assert st.stats.gaps == 1
    after = feed(st, names, [counter(18.0, 180)])
    assert after.status[0] == Status.OK and after.rate[0] == 10.0


def test_one_short_interval_does_not_change_the_cadence():
    st, names = RateState(), SeriesIndex()
    # a subscription's initial values, then the periodic samples 1 s apart
    feed(st, names, [counter(0.0, 0)])
    feed(st, names, [counter(0.1, 1)])
    outs = [feed(st, names, [counter(1.1 + k, 10 * (k + 1))]) for k in range(4)]
    assert all(o.status[0] == Status.OK for o in outs)


def test_duplicates_and_out_of_order_samples_are_dropped_and_counted():
    st, names = RateState(), SeriesIndex()
    feed(st, names, [counter(5.0, 50)])
    out = feed(st, names, [counter(5.0, 50), counter(4.0, 40)])
    assert len(out) == 0 and st.stats.late == 2


def test_several_samples_of_a_series_in_one_batch_are_rated_in_time_order():
    st, names = RateState(), SeriesIndex()
    out = feed(st, names, [counter(3.0, 30), counter(1.0, 10), counter(2.0, 25)])
    assert list(out.ts_ns // S) == [1, 2, 3]
    assert out.status[0] == Status.FIRST
    assert list(out.rate[1:]) == [15.0, 5.0]


def test_gauges_pass_through_with_their_value():
    st, names = RateState(), SeriesIndex()
    out = feed(st, names, [(1.0, "leaf1", "Ethernet1", "if_oper_status", -1, 2.0, 0)])
    assert out.status[0] == Status.GAUGE and out.value[0] == 2.0 and np.isnan(out.rate[0])


def test_series_ids_are_stable_across_batches_with_different_vocabularies():
    names = SeriesIndex()
    a = batch([(1.0, "leaf1", "Ethernet1", "if_in_octets", -1, 1, 0),
               (1.0, "leaf2", "Ethernet2", "pfc_rx_frames", 3, 1, 0)])
    b = batch([(2.0, "leaf2", "Ethernet2", "pfc_rx_frames", 3, 2, 0),
               (2.0, "leaf1", "Ethernet1", "if_in_octets", -1, 2, 0),
               (2.0, "leaf2", "Ethernet2", "pfc_rx_frames", 4, 2, 0)])
    ia, ib = names.ids(a), names.ids(b)
    assert ib.series[1] == ia.series[0] and ib.series[0] == ia.series[1]
    assert ib.series[2] not in set(ia.series.tolist())
    assert names.port_label(int(ib.port[0])) == "leaf2:Ethernet2"
