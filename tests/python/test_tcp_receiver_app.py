"""The receiving application (``tcp.receiver_app``): reads pace the ACKs.

Closed form: data arriving at rate R into a reader that wakes W after data
arrives and copies instantly is read (and acknowledged) once per wake-up,
R W / MSS + 1 segments at a time; on a locked buffer the window an ACK
offers is the buffer less the unread bytes.
"""

import pytest

import fabricsim
from fabricsim.errors import ScenarioError
from fabricsim.schema.scenario import from_dict
from fabricsim.validation import linux, linux_dumbbell

MSS = 1448


def _scenario(app=None, rate="500Mbps", duration="300ms", seed=1, rwnd="256KB"):
    tcp = {"rwnd": rwnd} if rwnd else {}
    if app is not None:
        tcp["receiver_app"] = app
    return {
        "name": "receiver-app",
        "seed": seed,
        "duration": duration,
        "network": {"switch": {"latency": "500ns", "buffer": {"model": "static", "port_size": "2MB"}}},
        "topology": {
            "kind": "dumbbell",
            "left": 1,
            "right": 1,
            "edge_link": {"rate": "10Gbps", "delay": "5us"},
            "bottleneck_link": {"rate": rate, "delay": "20us"},
        },
        "traffic": [{"kind": "tcp_bulk", "src": "left0", "dst": "right0", "duration": duration, "tcp": tcp}],
    }


def _run(**kw):
    result = fabricsim.run(from_dict(_scenario(**kw)))
    return result, result.tables()["tcp_receivers"].row(0, named=True)


def test_without_an_application_the_receiver_acks_every_second_segment():
    result, rx = _run()
    assert rx["reads"] == 0 and rx["wakeups"] == 0
    assert rx["data_segments"] / rx["acks_sent"] == pytest.approx(2.0, abs=0.01)


def test_a_slow_reader_acks_once_per_read_with_the_segments_that_arrived_while_it_slept():
    app = {"wakeup": {"kind": "constant", "delay": "500us"}, "copy_rate": "100Gbps"}
    result, rx = _run(app=app)
    # 500 Mb/s of 1538 B on the wire (1448 B of payload, 52 B of IP and TCP
    # headers, 18 B of Ethernet header and FCS, 20 B of preamble and gap)
    # for 500 us is 20.3 segments, plus the one that woke the reader.
    per_read = 500e6 * 500e-6 / 8 / (MSS + 52 + 18 + 20) + 1
    assert rx["data_segments"] / rx["reads"] == pytest.approx(per_read, rel=0.04)
    # One ACK per read, plus the handshake's quick ACKs at the start.
    assert rx["acks_sent"] == pytest.approx(rx["reads"], abs=20)
    assert rx["max_unread_bytes"] <= (int(per_read) + 1) * MSS
    flows = result.flows
    assert flows["retransmits"][0] == 0, "the window keeps the buffer from overflowing"
    assert flows["app_bytes_delivered"][0] == rx["bytes_read"]
    assert result.summary["conservation_ok"]


def test_the_receiving_application_is_deterministic_and_draws_from_its_own_stream():
    app = {"wakeup": {"kind": "exponential", "delay": "200us"}}
    _, a = _run(app=app, duration="100ms")
    _, b = _run(app=app, duration="100ms")
    _, c = _run(app=app, duration="100ms", seed=2)
    assert a == b
    assert a["wakeup_delay_ps"] != c["wakeup_delay_ps"]
    assert a["wakeup_delay_ps"] / a["wakeups"] == pytest.approx(200e6, rel=0.15)


@pytest.mark.parametrize(
    "app, field",
    [
        ({"read_size": 0}, "traffic[0].tcp.receiver_app.read_size"),
        ({"wakeup": {"kind": "empirical"}}, "traffic[0].tcp.receiver_app.wakeup.samples"),
        ({"wakeup": {"kind": "gamma"}}, "traffic[0].tcp.receiver_app.wakeup.kind"),
        ({"copy_rte": "1Gbps"}, "traffic[0].tcp.receiver_app.copy_rte"),
    ],
)
def test_bad_receiver_app_fields_are_errors_naming_the_field(app, field):
    with pytest.raises(ScenarioError) as err:
        from_dict(_scenario(app=app))
    assert field in str(err.value)


def test_reader_counters_from_proc_become_rates_and_means():
    before = {"t": 0.0, "syscr": 100, "rchar": 1_000, "voluntary": 10, "tasks": {7: (1_000, 500, 5)}}
    after = {"t": 2.0, "syscr": 2_100, "rchar": 20_001_000, "voluntary": 1_010, "tasks": {7: (41_000, 200_500, 1_005), 8: (0, 0, 0)}}
    stats = linux.reader_stats(7, before, after)
    assert stats.reads_per_s == 1_000
    assert stats.bytes_per_read == 10_000
    assert stats.delay_per_wakeup_s == pytest.approx(200e-9)
    assert stats.cpu_per_byte_s == pytest.approx(40_000e-9 / 20_000_000)
    assert (stats.write_syscalls, stats.bytes_written) == (0, 0), "older readings have no write counters"
    after_w = {**after, "syscw": 30, "wchar": 90_000}
    assert linux.reader_stats(7, {**before, "syscw": 10, "wchar": 10_000}, after_w).bytes_written == 80_000
    assert linux.reader_counters(2**22 + 12345) is None, "a process that is gone reads as None"
    import os

    mine = linux.reader_counters(os.getpid())
    assert mine is not None and mine["rchar"] >= 0 and os.getpid() in mine["tasks"]


def test_the_twin_takes_the_measured_reader_and_old_records_stay_readable():
    reader = linux.ReaderStats(
        pid=1, syscalls=1_000, bytes=10_000_000, runtime_ns=40_000_000, run_delay_ns=300_000_000,
        timeslices=1_000, voluntary_switches=500, wall_s=1.0,
    ).to_dict()
    record = {"runs": [{"readers": [reader, reader]}]}
    m = linux_dumbbell.reader_measurements(record)
    assert m["bytes_per_read"] == 10_000 and m["bytes_per_wakeup"] == 20_000
    app = linux_dumbbell.measured_receiver_app(record)
    assert app == {"read_size": "131072B", "wakeup": {"kind": "exponential", "delay": "300000ns"}, "copy_rate": "2000000000bps"}
    assert linux_dumbbell.measured_receiver_app({"runs": [{"flows": []}]}) is None


def test_sack_compression_withholds_acks_for_out_of_order_data():
    # Autotuned receive window: the receiver measures the RTT the delay follows.
    lossy = {"rate": "1Gbps", "duration": "200ms", "rwnd": None}
    base = _scenario(**lossy)
    base["network"]["switch"]["buffer"]["port_size"] = "60KB"
    base["traffic"][0]["tcp"]["sack_compression"] = 0
    plain = fabricsim.run(from_dict(base)).tables()["tcp_receivers"].row(0, named=True)
    del base["traffic"][0]["tcp"]["sack_compression"]  # the linux profile's default: 44, as Linux
    comp = fabricsim.run(from_dict(base)).tables()["tcp_receivers"].row(0, named=True)
    assert plain["acks_out_of_order"] > 20, "the small buffer loses packets"
    assert plain["acks_compressed"] == 0
    assert comp["acks_compressed"] > 0
    assert comp["acks_sent"] < plain["acks_sent"]


def test_validate_linux_with_the_measured_reader_reports_segments_per_ack(capsys):
    import json

    from fabricsim.cli import main as cli

    args = ["validate", "linux", "--recorded", "reno-2x1-1Gbps-250KB-20s", "--json"]
    assert cli.main(args + ["--ideal-reader"]) == 0
    ideal = {row[0]: row for row in json.loads(capsys.readouterr().out)[0]["rows"]}
    assert cli.main(args + ["--measured-reader"]) == 0
    measured = {row[0]: row for row in json.loads(capsys.readouterr().out)[0]["rows"]}
    assert float(ideal["data segments per ACK"][2]) < 2.5
    assert float(measured["data segments per ACK"][2]) > 5, "the measured reader's reads pace the ACKs"
    # The lab twin (the default) has the measured reader where it was recorded.
    assert cli.main(args) == 0
    assert {row[0]: row for row in json.loads(capsys.readouterr().out)[0]["rows"]} == measured
    assert cli.main(args + ["--ideal-reader", "--measured-reader"]) == 2
    # Experiments recorded before the readers' counters existed are refused with their name.
    assert cli.main(["validate", "linux", "--recorded", "reno-4x1-1Gbps-250KB-100MB", "--measured-reader"]) == 2
    assert "reno-4x1-1Gbps-250KB-100MB" in capsys.readouterr().err


def test_a_sized_flow_completes_when_the_application_has_read_its_last_byte():
    fct = []
    for app in (None, {"wakeup": {"kind": "constant", "delay": "500us"}}):
        scenario = _scenario(app=app, duration="1s")
        del scenario["traffic"][0]["duration"]
        scenario["traffic"][0]["size"] = "5MB"
        result = fabricsim.run(from_dict(scenario))
        assert result.flows["app_bytes_delivered"][0] == 5_000_000
        fct.append(result.flows["fct_ps"][0])
    # The last byte is read at most one wake-up (500 us) after it arrives.
    assert 0 < fct[1] - fct[0] <= 500_000_000 + 50_000_000


def test_on_a_modelled_host_the_reader_runs_on_its_core_behind_the_softirq_work():
    """With a host model (one core per host, 2 us of receive work per data
    segment) the reading process runs on the receiving host's core: each
    copy occupies the core for bytes / copy_rate, so the core's busy time is
    its polls plus the copies, and the reader waits for the polls that are
    running when it becomes runnable. ``on_core: false`` keeps the reader on
    its own timers: the core does only the polls and the reader never waits
    for it."""
    app = {"wakeup": {"kind": "constant", "delay": "20us"}, "copy_rate": "4Gbps"}
    model = {"cores": 1, "stages": [{"kind": "tcp", "rx": {"per_packet": "2us"}}]}

    def run(on_core):
        sc = _scenario(app={**app, "on_core": on_core}, duration="100ms")
        sc["network"]["host"] = {"model": model}
        result = fabricsim.run(from_dict(sc))
        tables = result.tables()
        core = tables["cores"].filter(tables["cores"]["node"] == "right0").row(0, named=True)
        return result, tables["tcp_receivers"].row(0, named=True), core

    result, rx, core = run(True)
    assert result.summary["conservation_ok"]
    assert rx["reads"] > 100 and rx["core_waits"] >= rx["reads"]
    copy_ps = rx["bytes_read"] * 8 * 1e12 / 4e9
    polls_ps = core["rx_skbs"] * 2_000_000
    # Busy = polls + copies (each copy rounded up to the picosecond).
    assert core["busy_ps"] - polls_ps == pytest.approx(copy_ps, abs=rx["core_waits"])
    assert rx["core_wait_ps"] > 0
    assert rx["core_wait_ps"] / rx["core_waits"] < 2_000_000, "at most one poll's work ahead of it"
    result, rx, core = run(False)
    assert rx["core_waits"] == 0 and rx["core_wait_ps"] == 0 and rx["reads"] > 100
    assert core["busy_ps"] == core["rx_skbs"] * 2_000_000
