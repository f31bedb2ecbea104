"""RFC 2544 tests against closed forms: line rate minus framing, a device's limit, RFC 1242 latencies."""

import random

import pytest

from fabricsim import from_dict, run
from fabricsim.experiments.path_latency import path_hops, path_nodes, unloaded_latency
from fabricsim.experiments.rfc2544 import Settings, rfc2544

TRIAL = Settings(trial_ps=1_000_000_000)  # 1 ms trials keep the tests short


def star(device=None, **switch):
    return from_dict({
        "name": "star",
        "duration": "1ms",
        "network": {"switch": {**({"device": device} if device else {}), **switch}},
        "topology": {"kind": "star", "hosts": 2, "link": {"rate": "10Gbps", "delay": "5ns"}},
    })


def slow_egress(port_size="1MB", rate="7Gbps"):
    """h0 -10G- sw -(rate)- h1: the device cannot forward faster than its egress link."""
    return from_dict({
        "name": "slow-egress",
        "duration": "1ms",
        "network": {"switch": {"latency": "500ns", "buffer": {"model": "static", "port_size": port_size}}},
        "topology": {"kind": "explicit",
                     "nodes": [{"name": "h0", "kind": "host"}, {"name": "sw", "kind": "switch"},
                               {"name": "h1", "kind": "host"}],
                     "links": [{"a": "h0", "b": "sw", "rate": "10Gbps", "delay": "100ns"},
                               {"a": "sw", "b": "h1", "rate": rate, "delay": "100ns"}]},
    })


SIZES = [64, 128, 256, 512, 1024, 1280, 1518, 2176, 9216]


def test_throughput_of_a_device_without_a_limit_is_line_rate_minus_framing(core):
    t = rfc2544(star("fm4000-like"), tests=["throughput"], frame_sizes=SIZES, settings=TRIAL)["throughput"]
    assert t["load"].to_list() == [1.0] * len(SIZES)
    for size, fps in zip(t["frame_bytes"].to_list(), t["frames_per_s"].to_list()):
        assert fps == pytest.approx(10e9 / ((size + 20) * 8), rel=1e-12)
    # RFC 2544 figures: 14,880,952 frames/s at 64 B, 812,743 at 1518 B on 10G.
    assert int(t["frames_per_s"][0]) == 14_880_952 and int(t["frames_per_s"][6]) == 812_743


def test_throughput_of_a_device_with_a_limit_is_that_limit(core):
    settings = Settings(trial_ps=10_000_000_000)
    t = rfc2544(slow_egress(), tests=["throughput"], frame_sizes=[64, 1518], settings=settings)["throughput"]
    for size, load, fps in zip(t["frame_bytes"].to_list(), t["load"].to_list(), t["frames_per_s"].to_list()):
        # The egress forwards 7 Gb/s: 7e9 / ((size + 20) * 8) frames/s. The search stops within its
        # resolution, and the default wait lets a rate at most wait/trial above the limit pass.
        limit = 7e9 / ((size + 20) * 8)
        line = 10e9 / ((size + 20) * 8)
        wait = (size + 20) * 8 / 10e9 + (size + 20) * 8 / 7e9 + 700e-9 + (size + 20) * 8 / 7e9
        assert limit - 0.001 * line <= fps <= limit * (1 + wait / 0.01) + 0.001 * line, (size, load)


def test_latency_is_the_rfc_1242_figure_fifo_for_cut_through_and_lifo_for_store_and_forward(core):
    ct = rfc2544(star("fm4000-like"), tests=["latency"], frame_sizes=[64, 1518, 9216], settings=TRIAL)["latency"]
    assert ct["method"].to_list() == ["fifo"] * 3
    # First bit in to first bit out: the 7124SX data sheet's 500 ns, whatever the frame size.
    assert ct["latency_ps"].to_list() == [500_000.0] * 3
    assert ct["queueing_ps"].to_list() == [0.0] * 3
    saf = rfc2544(star(latency="700ns"), tests=["latency"], frame_sizes=[64, 1518], settings=TRIAL)["latency"]
    assert saf["method"].to_list() == ["lifo", "lifo"]
    assert saf["latency_ps"].to_list() == [700_000.0, 700_000.0]
    # End to end: two serializations, two 5 ns cables, the device.
    assert saf["e2e_mean_ps"].to_list() == [2 * 67_200 + 10_000 + 700_000, 2 * 1_230_400 + 10_000 + 700_000]


def test_loss_rate_above_the_limit_is_the_excess_share(core):
    t = rfc2544(slow_egress(), tests=["loss"], frame_sizes=[1518], settings=TRIAL)["loss"]
    # 100%, 90%, 80% lose the share above 7 Gb/s; 70% and 60% lose nothing (two clean trials end the test).
    assert t["load"].to_list() == [1.0, 0.9, 0.8, 0.7, 0.6]
    for load, loss in zip(t["load"].to_list()[:3], t["loss_percent"].to_list()[:3]):
        assert loss == pytest.approx(100 * (1 - 0.7 / load), abs=0.5)
    assert t["loss_percent"].to_list()[3:] == [0.0, 0.0]


def test_back_to_back_is_the_burst_the_egress_buffer_absorbs(core):
    frame = 1000
    t = rfc2544(slow_egress(port_size="100KB"), tests=["back_to_back"], frame_sizes=[frame], settings=TRIAL)
    frames = t["back_to_back"]["frames"][0]
    # The queue grows by (1 - 7/10) of a frame per frame received: it holds 100 frames of 1000 B.
    assert abs(frames - 100 / 0.3) <= 2, frames
    assert not t["back_to_back"]["capped"][0]


def test_frame_sizes_above_the_path_mtu_are_skipped(core):
    out = rfc2544(star(mtu="1518B"), tests=["throughput"], frame_sizes=[1518, 2176, 9216], settings=TRIAL)
    assert out["throughput"]["frame_bytes"].to_list() == [1518]
    assert out["skipped"]["frame_bytes"].to_list() == [2176, 9216]


def test_the_core_drops_frames_longer_than_a_devices_mtu(core):
    sc = star(mtu="1518B").model_copy(update={"traffic": []})
    doc = sc.model_dump(mode="json", by_alias=True)
    doc["traffic"] = [{"kind": "burst", "src": "h0", "dst": "h1", "frames": 3, "frame_size": "2176B"}]
    r = run(from_dict(doc))
    assert r.drops["reason"].to_list() == ["frame_too_long"] and r.drops["packets"].to_list() == [3]


def test_unloaded_latency_closed_form_matches_the_simulation_on_random_chains(core):
    """The independent closed form of fabricsim.experiments.path_latency against the core, to the
    picosecond, on chains of store-and-forward and cut-through devices with mixed speeds."""
    rng = random.Random(7)
    rates = ["1Gbps", "10Gbps", "25Gbps", "40Gbps", "100Gbps"]
    for trial in range(12):
        n = rng.randint(1, 4)
        names = ["h0", *[f"s{k}" for k in range(n)], "h1"]
        links = [{"a": names[k], "b": names[k + 1], "rate": rng.choice(rates), "delay": f"{rng.randint(0, 3000)}ns"}
                 for k in range(n + 1)]
        overrides = {f"s{k}": {"forwarding": rng.choice(["store_and_forward", "cut_through"]),
                               "latency": f"{rng.randint(0, 2000)}ns", "cut_through_header": f"{rng.choice([14, 64, 128])}B"}
                     for k in range(n)}
        frame = rng.choice([64, 97, 1518, 4000, 9216])
        sc = from_dict({
            "duration": "1ms",
            "network": {"host": {"latency": f"{rng.randint(0, 5000)}ns"}, "switch_overrides": overrides},
            "topology": {"kind": "explicit",
                         "nodes": [{"name": x, "kind": "host" if x.startswith("h") else "switch"} for x in names],
                         "links": links},
            "traffic": [{"kind": "burst", "src": "h0", "dst": "h1", "frames": 1, "frame_size": f"{frame}B"}],
        })
        r = run(sc)
        resolved = sc.to_resolved()
        hops = path_hops(resolved, r.links, path_nodes(r.links, "h0", "h1"))
        assert r.flows["latency_max_ps"][0] == unloaded_latency(resolved, hops, frame).total_ps, (trial, links, overrides)


def test_rfc2544_command_writes_tables_and_page(core, tmp_path):
    import subprocess
    import sys

    scenario = tmp_path / "s.yaml"
    scenario.write_text("duration: 1ms\ntopology: {kind: star, hosts: 2, link: {rate: 10Gbps, delay: 5ns}}\n")
    args = [sys.executable, "-m", "fabricsim", "rfc2544", str(scenario), "--test", "throughput", "--test", "latency",
            "--frame-size", "64", "--frame-size", "1518", "--trial", "200us", "--device", "fm4000-like",
            "--device", "optical-broadcast", "--out", str(tmp_path / "out")]
    r = subprocess.run(args, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert names == ["plots", "rfc2544.html", "rfc2544_latency.parquet", "rfc2544_throughput.parquet"]
    page = (tmp_path / "out" / "rfc2544.html").read_text()
    assert "fm4000-like" in page and "optical-broadcast" in page
    bad = subprocess.run([*args[:4], "--pair", "h0"], capture_output=True, text=True)
    assert bad.returncode == 2 and "SRC:DST" in bad.stderr


def test_throughput_finds_a_pipelines_packet_rate_where_it_is_below_line_rate(core):
    """A device forwarding below line rate at small frames: one pipe of 5 M passes/s in front of
    10G ports. At 64 B (14.88 Mframes/s of line rate) the throughput is the pipe's 5 Mframes/s; at
    1518 B (812,743 frames/s) the line rate."""
    sc = star(latency="500ns", pipeline={"pipes": 1, "rate": "5Mpps", "queue_packets": 4096,
                                         "stages": [{"kind": "acl", "rules": []}]})
    t = rfc2544(sc, tests=["throughput"], frame_sizes=[64, 1518], settings=Settings(trial_ps=10_000_000_000))
    rows = t["throughput"].rows(named=True)
    line64 = 10e9 / (84 * 8)
    assert 5e6 - 0.001 * line64 <= rows[0]["frames_per_s"] <= 5e6 * 1.001 + 0.001 * line64, rows[0]
    assert rows[1]["load"] == 1.0


@pytest.mark.slow
def test_tolly_rfc2544_both_fabrics_every_size_default_trials(core):
    """The R5 comparison at the command's defaults (10 ms trials, all four tests, 64..9216 B):
    both fabrics forward at line rate with no loss, and their RFC 1242 latencies are the device
    figures: 500 ns (fm4000-like, the 7124SX data sheet) and 14 B at 10G + 300 ns (optical-broadcast)."""
    from pathlib import Path

    scenario = Path(__file__).resolve().parents[2] / "scenarios" / "tolly-latency.yaml"
    out = rfc2544(scenario, pairs=[("s0", "s1"), ("f0", "f1")])
    t = out["throughput"]
    assert t.height == 18 and t["load"].to_list() == [1.0] * 18
    lat = {(d, f): v for d, f, v in zip(out["latency"]["device"], out["latency"]["frame_bytes"],
                                        out["latency"]["latency_ps"])}
    for size in SIZES:
        assert lat[("ct10g", size)] == 500_000.0
        assert lat[("bcast", size)] == 11_200 + 300_000.0
    assert (out["latency"]["queueing_ps"] == 0).all()
    assert (out["loss"]["loss_percent"] == 0).all() and out["loss"].height == 36
    assert out["back_to_back"]["capped"].all()
