"""Counter → rate: wrap, reset, gaps, late samples, cadence, on event time only; the state judges
exactly as the stateless rule, however the samples are batched."""

from __future__ import annotations

import numpy as np

from detectors.series import SeriesIndex
from pipeline.model import FLAG_COUNTER32, FLAG_RESET
from pipeline.rates.rule import HORIZON_NS, Status, per_second
from pipeline.rates.state import RateState
from tests.pipeline.rate_cases import S, batch, judged, wild_rows


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
    st, names = RateState(), SeriesIndex()
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


# -- the rule itself: one definition, whatever the batching -------------------------------------


def judge_all(rows: list) -> tuple:
    """The stateless rule over every row at once: (ts, status, increase, rate) by series, time."""
    bt = batch(rows)
    order, iv = judged(bt)
    return bt.ts_ns[order], iv.status, iv.increase, iv.rate


def test_the_state_judges_as_the_rule_whatever_the_batching():
    rows = wild_rows()
    ts, status, increase, rate = judge_all(rows)
    assert {Status.OK, Status.FIRST, Status.GAP, Status.RESET, Status.WRAP, Status.GAUGE} <= \
        set(status.tolist())
    rng = np.random.default_rng(1)
    by_time = sorted(rows, key=lambda r: r[0])
    for cuts in ([len(rows)], [1] * len(rows), list(rng.integers(1, 50, 100))):
        st, names = RateState(), SeriesIndex()
        got, i = [], 0
        for size in cuts:
            if i >= len(by_time):
                break
            got.append(feed(st, names, by_time[i:i + int(size)]))
            i += int(size)
        if i < len(by_time):
            got.append(feed(st, names, by_time[i:]))
        frame_ts = np.concatenate([g.ts_ns for g in got])
        order = np.lexsort((frame_ts, np.concatenate([g.port for g in got])))
        assert np.array_equal(frame_ts[order], ts)
        assert np.array_equal(np.concatenate([g.status for g in got])[order], status)
        assert np.array_equal(np.concatenate([g.increase for g in got])[order], increase,
                              equal_nan=True)
        assert np.array_equal(np.concatenate([g.rate for g in got])[order], rate, equal_nan=True)


def test_a_reset_keeps_the_counts_since_the_restart_and_a_gap_its_increase():
    st, names = RateState(), SeriesIndex()
    for t in range(1, 6):
        feed(st, names, [counter(float(t), 10.0 * t)])
    gap = feed(st, names, [counter(30.0, 300.0)])
    assert gap.status[0] == Status.GAP and gap.increase[0] == 250.0 and np.isnan(gap.rate[0])
    reset = feed(st, names, [counter(31.0, 7.0, FLAG_RESET)])
    assert reset.status[0] == Status.RESET and reset.increase[0] == 7.0
    wrapped = RateState()
    feed(wrapped, names, [counter(1.0, 2**32 - 50, FLAG_COUNTER32)])
    out = feed(wrapped, names, [counter(2.0, 150, FLAG_COUNTER32)])
    assert out.increase[0] == 200.0


def test_an_interval_longer_than_the_horizon_is_a_gap_before_any_cadence_is_known():
    st, names = RateState(), SeriesIndex()
    feed(st, names, [counter(0.0, 0.0)])
    long = HORIZON_NS / S + 1
    out = feed(st, names, [counter(long, 100.0)])
    assert out.status[0] == Status.GAP and np.isnan(out.rate[0])
    out = feed(st, names, [counter(2 * long - 1, 200.0)])  # just inside: a rate
    assert out.status[0] == Status.OK


def test_the_cadence_only_looks_back_as_far_as_the_horizon():
    # 1 s intervals, an outage, then 30 s intervals: 95 s after a 1 s cadence is a gap; after
    # it the 1 s intervals lie beyond the horizon, so they do not make 30 s look like one
    times = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 100.0, 130.0, 160.0, 190.0]
    _, status, _, rate = judge_all([counter(t, t) for t in times])
    assert status[6] == Status.GAP
    assert list(status[7:]) == [Status.OK] * 3 and list(rate[7:]) == [1.0] * 3


def test_a_span_rate_is_its_rated_increase_over_their_time():
    inc = np.array([100.0, 250.0, 0.0])
    span = np.array([2 * S, 5 * S, 0])
    assert per_second(inc, span)[:2].tolist() == [50.0, 50.0] and np.isnan(per_second(inc,
                                                                                       span)[2])
