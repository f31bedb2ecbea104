"""Per-flow TCP sender state over time (``stats.tcp_trace``): slow start and congestion avoidance
against their closed forms, the event rows against the flows table's counters, the RTT columns
against the path's closed-form round trip, thinning, determinism, no effect on the run, bad input."""

import polars as pl
import pytest

from fabricsim import from_dict, run
from fabricsim.errors import ScenarioError
from fabricsim.schema import load

MSS = 1448
IW = 10
# The dumbbell below: 5 us host links at 40 Gb/s, a 20 us bottleneck at 10 Gb/s, 500 ns per switch.
PROP_PS = 2 * (5 + 20 + 5) * 1_000_000 + 2 * 2 * 500_000
WIRE = 20  # preamble and inter-frame gap, bytes
DATA_FRAME = MSS + 52 + 18  # payload, TCP/IP header (with timestamps), Ethernet
ACK_FRAME = 52 + 18


def _store_and_forward_ps(frame: int) -> int:
    """Serialization of one frame on the three links (40, 10, 40 Gb/s), in ps."""
    bits = (frame + WIRE) * 8
    return bits * 25 + bits * 100 + bits * 25


BASE_RTT_PS = PROP_PS + _store_and_forward_ps(DATA_FRAME) + _store_and_forward_ps(ACK_FRAME)
TAU_PS = (DATA_FRAME + WIRE) * 8 * 100  # a data frame at the 10 Gb/s bottleneck


def _dumbbell(buffer: str = "50MB", size: str = "20MB", trace: dict | None = None, **tcp) -> dict:
    """One Reno flow (RFC profile, an ACK per segment, a window far above the path's) on a dumbbell."""
    return {
        "name": "trace",
        "seed": 1,
        "duration": "200ms",
        "network": {"switch": {"latency": "500ns", "buffer": {"model": "static", "port_size": buffer}}},
        "topology": {"kind": "dumbbell", "left": 1, "right": 1, "edge_link": {"rate": "40Gbps", "delay": "5us"},
                     "bottleneck_link": {"rate": "10Gbps", "delay": "20us"}},
        "tcp": {"profile": "rfc", "cc": "newreno", "rwnd": "64MB", "delayed_ack": {"count": 1}, **tcp},
        "traffic": [{"kind": "tcp_bulk", "name": "f", "src": "left0", "dst": "right0", "size": size}],
        "stats": {"tcp_trace": trace if trace is not None else {}},
    }


def _acks(trace: pl.DataFrame) -> pl.DataFrame:
    return trace.filter(pl.col("event") == "ack")


def test_slow_start_doubles_the_window_each_round_trip_as_the_closed_form_says(core):
    """Each ACK acknowledges one segment and adds one to cwnd: when the k-th round's data is acknowledged
    (SND.UNA = (2^k - 1) IW MSS), cwnd is IW 2^k segments. Round k lasts the base RTT plus the time the
    bottleneck takes for the previous round's segments, or, once the window fills the pipe, the time
    it takes for this round's: max(RTT + 2^(k-2) IW tau, 2^(k-1) IW tau)."""
    result = run(from_dict(_dumbbell()))
    assert result.summary["tcp_trace_missed"] == 0
    assert result.flows["fast_retransmits"].to_list() == [0] and result.flows["timeouts"].to_list() == [0]
    acks = _acks(result.tcp_trace)
    assert set(acks["state"].to_list()) == {"open"}
    assert acks["ssthresh_bytes"].null_count() == acks.height, "unset (infinite) during the initial slow start"
    ends = []
    for k in range(11):
        row = acks.filter(pl.col("snd_una") >= (2**k - 1) * IW * MSS).row(0, named=True)
        assert row["snd_una"] == (2**k - 1) * IW * MSS
        assert row["cwnd_segments"] == IW * 2**k, (k, row)
        ends.append(row["time_ps"])
    for k in range(2, 11):
        expected = max(BASE_RTT_PS + 2 ** (k - 2) * IW * TAU_PS, 2 ** (k - 1) * IW * TAU_PS)
        assert ends[k] - ends[k - 1] == pytest.approx(expected, rel=1e-3), k
    # Throughout slow start cwnd = IW + segments acknowledged, and the window limits the flight
    # until it reaches past the end of the data.
    assert (acks["cwnd_bytes"] == IW * MSS + acks["snd_una"]).all()
    assert acks.filter(pl.col("snd_una") + pl.col("cwnd_bytes") < 20_000_000)["cwnd_limited"].all()


def test_congestion_avoidance_adds_one_segment_per_round_trip(core):
    """After fast recovery, RFC 5681's MSS^2/cwnd per ACK adds just under one segment per round
    (each of the W ACKs of a round adds MSS^2/cwnd with cwnd a little above W MSS), and a round lasts
    the smoothed RTT the trace shows."""
    result = run(from_dict(_dumbbell(buffer="200KB", size="40MB")))
    trace = result.tcp_trace
    events = trace.filter(pl.col("event") != "ack")
    after = events.filter(pl.col("event") == "recovery_end")["time_ps"].max()
    ca = _acks(trace.filter(pl.col("time_ps") > after)).to_dicts()
    assert {r["state"] for r in ca} == {"open"}
    assert all(r["ssthresh_bytes"] > 0 and r["cwnd_bytes"] >= r["ssthresh_bytes"] for r in ca)
    rounds, i = [], 0
    while True:
        j = next((j for j in range(i + 1, len(ca)) if ca[j]["snd_una"] >= ca[i]["snd_nxt"]), None)
        if j is None or ca[j]["snd_una"] >= 40_000_000:
            break
        rounds.append((ca[j]["cwnd_bytes"] - ca[i]["cwnd_bytes"], ca[j]["time_ps"] - ca[i]["time_ps"], ca[j]["srtt_ps"]))
        i = j
    assert len(rounds) > 50
    for growth, duration, srtt in rounds:
        assert 0.85 * MSS <= growth <= MSS
        assert duration == pytest.approx(srtt, rel=0.01)


def test_rtt_columns_start_at_the_paths_closed_form_round_trip(core):
    """The SYN's round trip is the first sample (SRTT = sample, RTTVAR = sample / 2, RFC 6298 2.2); the
    first data ACK's sample, recovered from the SRTT update, is the data segment's base RTT; later
    samples never exceed it by more than the bottleneck buffer's drain time."""
    result = run(from_dict(_dumbbell(buffer="1MB", size="5MB")))
    rows = _acks(result.tcp_trace).to_dicts()
    syn_rtt = PROP_PS + 2 * _store_and_forward_ps(ACK_FRAME)
    assert rows[0]["srtt_ps"] == rows[0]["min_rtt_ps"] == syn_rtt
    assert rows[0]["rttvar_ps"] == syn_rtt // 2
    sample = (rows[1]["srtt_ps"] - 0.875 * rows[0]["srtt_ps"]) / 0.125
    assert sample == pytest.approx(BASE_RTT_PS, abs=10)
    drain = (1_000_000 // DATA_FRAME + 1) * TAU_PS  # the frames 1 MB holds, and the one on the wire
    assert max(r["srtt_ps"] for r in rows) <= BASE_RTT_PS + drain
    assert max(r["srtt_ps"] for r in rows) > BASE_RTT_PS + drain // 4, "the queue built up"


@pytest.mark.parametrize("profile", ["rfc", "linux"])
def test_event_rows_count_the_flow_tables_recoveries_and_timeouts(core, profile):
    """Incast with small buffers: per flow, recovery_start rows = fast_retransmits, rto rows =
    timeouts; every recovery_start row is in recovery, and every rto row in loss. With Linux's
    pacing (``fq``) the pacing rate in slow start is twice cwnd / SRTT (``tcp_update_pacing_rate``)."""
    doc = load("scenarios/incast.yaml").source_data
    doc["network"]["switch"]["buffer"] = {"model": "static", "port_size": "300KB"}
    doc["tcp"] = {"profile": profile, "cc": "newreno", "rwnd": "256KiB", **({"pacing": "fq"} if profile == "linux" else {})}
    doc["traffic"][0]["size"] = "200KB"
    doc["stats"] = {"tcp_trace": {}}
    result = run(from_dict(doc))
    flows = result.flows.select("flow_id", "fast_retransmits", "timeouts")
    events = result.tcp_trace.group_by("flow_id").agg(
        (pl.col("event") == "recovery_start").sum().alias("starts"), (pl.col("event") == "rto").sum().alias("rtos")
    )
    joined = flows.join(events, on="flow_id", how="left").fill_null(0)
    assert joined["timeouts"].sum() > 0 and joined["fast_retransmits"].sum() > 0, "the scenario has both"
    assert (joined["starts"] == joined["fast_retransmits"]).all()
    assert (joined["rtos"] == joined["timeouts"]).all()
    trace = result.tcp_trace
    assert set(trace.filter(pl.col("event") == "recovery_start")["state"].to_list()) == {"recovery"}
    rto = trace.filter(pl.col("event") == "rto")
    assert set(rto["state"].to_list()) == {"loss"} and (rto["cwnd_segments"] == 1).all()
    assert set(trace.filter(pl.col("event") == "recovery_end")["state"].to_list()) <= {"open", "disorder", "cwr"}
    if profile == "linux":
        assert trace["sacked_out"].max() > 0 and trace["lost_out"].max() > 0 and trace["retrans_out"].max() > 0
        ss = trace.filter(pl.col("ssthresh_bytes").is_null() & pl.col("srtt_ps").is_not_null())
        # Where cwnd is above the data outstanding (else that counts); the ACK that completes a
        # flow leaves the rate as it was.
        ss = ss.filter((pl.col("snd_nxt") - pl.col("snd_una") <= pl.col("cwnd_bytes")) & (pl.col("snd_una") < 200_000))
        assert ss.height > 100
        closed = 2 * 8 * ss["cwnd_bytes"] * 10**12 / ss["srtt_ps"]
        assert ((ss["pacing_rate_bps"] - closed).abs() <= closed * 1e-6 + 8).all()
    else:
        assert trace["pacing_rate_bps"].max() == 0
    # Per flow, rows are in time order and SND.UNA never goes back.
    for _, rows in trace.group_by("flow_id"):
        assert rows["time_ps"].is_sorted() and rows["snd_una"].is_sorted()


def test_an_interval_keeps_at_most_one_ack_row_per_flow_per_interval_and_every_event_row(core):
    doc = _dumbbell(buffer="200KB", size="10MB")
    full = run(from_dict(doc)).tcp_trace
    doc["stats"]["tcp_trace"] = {"interval": "100us"}
    thin = run(from_dict(doc)).tcp_trace
    assert thin.height < full.height / 20
    gaps = thin["time_ps"].diff().drop_nulls()
    assert gaps.min() >= 100_000_000 or thin.filter(pl.col("event") != "ack").height > 0
    acks = _acks(thin)
    assert (acks["time_ps"].diff().drop_nulls() >= 100_000_000).all()
    assert thin.filter(pl.col("event") != "ack").equals(full.filter(pl.col("event") != "ack"))
    # Each kept row is the same row as in the full trace.
    assert thin.join(full, on=thin.columns, how="anti", nulls_equal=True).height == 0


def test_the_trace_changes_nothing_else_and_is_deterministic(core, tmp_path):
    doc = load("scenarios/dumbbell.yaml").source_data
    doc["duration"] = "30ms"
    doc["traffic"] = doc["traffic"][:2]
    off = run(from_dict(doc))
    doc["stats"]["tcp_trace"] = {"flows": ["f1"]}
    on, again = run(from_dict(doc)), run(from_dict(doc))
    for name in ("flows", "queues", "throughput", "tcp_receivers"):
        assert getattr(on, name).equals(getattr(off, name)), name
    summary = {k: v for k, v in on.summary.items() if k != "tcp_trace_missed"}
    assert {k: v for k, v in summary.items() if "time" not in k and "wall" not in k} == {
        k: v for k, v in off.summary.items() if "time" not in k and "wall" not in k
    }
    assert on.tcp_trace.height > 1000 and set(on.tcp_trace["flow_id"].to_list()) == {1}
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    on.tcp_trace.write_parquet(a)
    again.tcp_trace.write_parquet(b)
    assert a.read_bytes() == b.read_bytes()


def test_flows_are_chosen_by_entry_name_or_flow_id_and_rows_are_capped(core):
    doc = load("scenarios/dumbbell.yaml").source_data
    doc["duration"] = "5ms"
    doc["stats"]["tcp_trace"] = {"flows": [0, "f3"], "max_rows": 100}
    result = run(from_dict(doc))
    assert result.tcp_trace.height == 100 and result.summary["tcp_trace_missed"] > 0
    doc["stats"]["tcp_trace"] = {"flows": [0, "f3"]}
    assert set(run(from_dict(doc)).tcp_trace["flow_id"].to_list()) == {0, 3}


@pytest.mark.parametrize(
    "trace, needle",
    [
        ({"flows": ["nope"]}, r"stats.tcp_trace.flows\[0\].*no TCP traffic entry named 'nope'.*f0, f1"),
        ({"flows": [0, 17]}, r"stats.tcp_trace.flows\[1\].*flow id 17 no such flow.*0-3"),
        ({"interval": "-5us"}, r"stats.tcp_trace.interval"),
        ({"interval": 0}, r"stats.tcp_trace.interval"),
        ({"every_ack": False}, r"stats.tcp_trace.interval.*required when every_ack is false"),
        ({"every_ack": True, "interval": "1us"}, r"stats.tcp_trace.interval.*not both"),
        ({"max_rows": 0}, r"stats.tcp_trace.max_rows"),
        ({"flows": []}, r"stats.tcp_trace.flows"),
        ({"every": True}, r"stats.tcp_trace.*every"),
    ],
)
def test_bad_trace_settings_are_refused_at_their_field(core, trace, needle):
    doc = load("scenarios/dumbbell.yaml").source_data
    doc["stats"]["tcp_trace"] = trace
    with pytest.raises(ScenarioError, match=needle):
        run(from_dict(doc))


def test_a_udp_flow_id_is_refused(core):
    doc = _dumbbell(trace={"flows": [1]})
    doc["traffic"].append({"kind": "udp_cbr", "name": "u", "src": "left0", "dst": "right0", "rate": "1Gbps"})
    with pytest.raises(ScenarioError, match=r"stats.tcp_trace.flows\[0\].*flow id 1 is not a TCP flow; TCP flows are 0"):
        run(from_dict(doc))


def test_the_run_report_plots_cwnd_and_srtt_of_traced_flows(core):
    from fabricsim.outputs.report.run import render_html

    doc = _dumbbell(buffer="200KB", size="2MB")
    page = render_html(run(from_dict(doc)))
    assert "TCP sender state" in page
    assert 'data-plot="tcp_trace_cwnd"' in page and 'data-plot="tcp_trace_srtt"' in page
    del doc["stats"]["tcp_trace"]
    assert "TCP sender state" not in render_html(run(from_dict(doc)))
