"""Switch buffer architectures from Python: schema of ecn/scheduler/voq/
intelligent buffers, device presets, burst absorption and the new tables."""

import copy
import json
from pathlib import Path

import pytest

import fabricsim
from fabricsim import devices
from fabricsim.errors import ScenarioError

ROOT = Path(__file__).resolve().parents[2]

BASE = {
    "duration": "100us",
    "topology": {"kind": "star", "hosts": 3, "link": {"rate": "100Gbps", "delay": "100ns"}},
    "traffic": [{"kind": "udp_cbr", "src": ["h1", "h2"], "dst": "h0", "rate": "100%", "ecn": True}],
}


def scenario(switch, **extra):
    doc = copy.deepcopy(BASE)
    doc["network"] = {"classes": 2, "switch": switch, **extra}
    return fabricsim.from_dict(doc)


def errors(switch):
    with pytest.raises(ScenarioError) as info:
        scenario(switch)
    return str(info.value)


def test_ecn_threshold_shorthand_is_step_marking():
    sw = scenario({"ecn": {"threshold": "65KB"}}).to_resolved()["network"]["switch"]
    assert sw["ecn"] == {"kmin_bytes": 65000, "kmax_bytes": 65000, "pmax": 1.0, "classes": None, "mode": "ecn"}
    sw = scenario({"ecn": {"kmin": "100KB", "kmax": "400KB", "pmax": 0.2, "mode": "drop"}}).to_resolved()
    assert sw["network"]["switch"]["ecn"]["kmax_bytes"] == 400000
    assert "ecn" not in scenario({}).to_resolved()["network"]["switch"]


def test_ecn_errors_name_the_field():
    assert "network.switch.ecn.kmax: must be >= kmin" in errors({"ecn": {"kmin": "2KB", "kmax": "1KB"}})
    assert "network.switch.ecn.threshold:" in errors({"ecn": {"threshold": "1KB", "kmin": "1KB"}})
    assert "network.switch.ecn.mode:" in errors({"ecn": {"threshold": "1KB", "mode": "mark"}})
    assert "network.switch.ecn.pmax:" in errors({"ecn": {"threshold": "1KB", "pmax": 1.5}})


def test_scheduler_weights_become_quanta():
    sw = scenario({"scheduler": "drr", "drr_weights": [1, 3]}).to_resolved()["network"]["switch"]
    assert sw["scheduler"] == {"kind": "drr", "quantum_bytes": [1500, 4500]}
    sw = scenario({"scheduler": "drr", "drr_quantum": "9KB"}).to_resolved()["network"]["switch"]
    assert sw["scheduler"] == {"kind": "drr", "quantum_bytes": [9000]}
    assert "scheduler" not in scenario({}).to_resolved()["network"]["switch"]
    assert "network.switch.scheduler:" in errors({"scheduler": "wfq"})


def test_voq_and_intelligent_buffers_resolve():
    b = scenario({"buffer": {"model": "voq", "size": "4GB", "voq_limit": "5ms"}}).to_resolved()
    assert b["network"]["switch"]["buffer"] == {
        "model": "voq", "total_bytes": 4_000_000_000, "voq_limit_bytes": None, "voq_limit_ps": 5_000_000_000}
    b = scenario({"buffer": {"model": "voq", "size": "4GB", "voq_limit": "5MB"}}).to_resolved()
    assert b["network"]["switch"]["buffer"]["voq_limit_bytes"] == 5_000_000
    assert "network.switch.buffer.voq_limit: required" in errors({"buffer": {"model": "voq", "size": "1GB"}})
    assert "network.switch.buffer.alpha: only for model shared or intelligent (model is voq)" in errors(
        {"buffer": {"model": "voq", "size": "1GB", "voq_limit": "1ms", "alpha": 2}})
    b = scenario({"buffer": {"model": "intelligent", "size": "40MB", "port_max": "5MB"}}).to_resolved()
    ib = b["network"]["switch"]["buffer"]
    assert ib["port_max_bytes"] == 5_000_000 and ib["afd_period_ps"] == 25_000_000 and ib["dpp_packets"] == 120
    assert "network.switch.buffer.dpp_packets: only for model intelligent" in errors(
        {"buffer": {"model": "shared", "size": "1MB", "dpp_packets": 3}})


def test_every_preset_loads_and_runs(core):
    for name in devices.names():
        result = fabricsim.run(scenario({"device": name}))
        s = result.summary
        assert s["conservation_ok"] and s["buffer_accounting_ok"], name
        assert result.buffers.height == 1 and result.buffers["capacity_bytes"][0] > 0


def test_scenario_settings_override_the_preset():
    sw = scenario({"device": "trident3-like", "buffer": {"alpha": 2}, "latency": "1us"}).to_resolved()
    buf = sw["network"]["switch"]["buffer"]
    assert buf["alpha"] == [2.0] and buf["cell_bytes"] == 256 and buf["total_bytes"] == 33030144
    assert sw["network"]["switch"]["latency_ps"] == 1_000_000
    # A buffer with another model replaces the preset's buffer.
    sw = scenario({"device": "trident3-like", "buffer": {"model": "static", "port_size": "1MB"}}).to_resolved()
    assert sw["network"]["switch"]["buffer"] == {
        "model": "static", "port_bytes": 1_000_000, "queue_bytes": None, "queue_packets": None}
    assert "network.switch.device: unknown value 'nope'" in errors({"device": "nope"}) or \
        "network.switch.device:" in errors({"device": "nope"})


def test_switching_presets_changes_the_device_and_nothing_else():
    path = ROOT / "scenarios" / "burst-absorption.yaml"
    a = fabricsim.load(path).to_resolved()
    for name in devices.names():
        b = fabricsim.load(path, [f"network.switch.device={name}"]).to_resolved()
        assert {k: v for k, v in a.items() if k != "network"} == {k: v for k, v in b.items() if k != "network"}
        na, nb = dict(a["network"]), dict(b["network"])
        na.pop("switch"), nb.pop("switch")
        assert na == nb, name
    assert json.dumps(a) != json.dumps(fabricsim.load(path, ["network.switch.device=jericho-deep"]).to_resolved())


def test_marks_and_buffer_tables(core):
    result = fabricsim.run(scenario({"ecn": {"threshold": "30KB"}, "buffer": {"model": "shared", "size": "1MB"}}))
    s = result.summary
    assert s["packets_marked"] > 0
    assert result.marks["packets"].sum() == s["packets_marked"]
    assert set(result.marks["reason"].to_list()) == {"red"}
    assert set(result.pools["pool"].to_list()) == {"total", "pool0"}
    assert result.queue_peaks["high_water_bytes"].max() > 30000
    assert result.buffers["high_water_bytes"][0] >= result.queue_peaks["high_water_bytes"].max()


def test_cell_based_preset_absorbs_fewer_bytes_of_small_frames(core):
    from fabricsim.experiments.burst_absorption import burst_absorption

    # A 1 MB buffer without the preset's reservations (4.9 MB on 32 ports).
    unreserved = [f"network.switch.buffer.{k}" for k in
                  ("pg_min=0B", "headroom_per_port=0B", "reserved_fixed=0B")]
    table = burst_absorption(ROOT / "scenarios" / "burst-absorption.yaml", device="trident3-like", ports=2,
                             frame_sizes=[200, 9000], overrides=["network.switch.buffer.size=1MB", *unreserved])
    small, large = table["burst_bytes"].to_list()
    assert not any(table["capped"].to_list())
    # 200 B + 64 B header = 2 cells of 256 B (39 % useful); 9000 B = 36 cells (98 %).
    assert small < 0.5 * large, table


def test_cli_lists_devices(capsys):
    from fabricsim.cli.main import main

    assert main(["devices"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in out] == devices.names()


def _one_hot_port_peak(slices: int) -> int:
    """Four 100G senders burst into one egress port of a tomahawk-like switch."""
    scenario = fabricsim.Scenario.from_dict(
        {
            "name": "slices",
            "duration": "2ms",
            "network": {"switch": {"device": "tomahawk-like", "buffer": {"slices": slices}}},
            "topology": {"kind": "star", "hosts": 5, "link": {"rate": "100Gbps", "delay": "1us"}},
            "traffic": [{"kind": "burst", "src": ["h1", "h2", "h3", "h4"], "dst": "h0", "frames": 4000, "frame_size": "1500B"}],
            "stats": {"queue_sample_interval": "0"},
        }
    )
    result = fabricsim.run(scenario)
    assert result.summary["conservation_ok"] and result.summary["packets_dropped"] > 0
    links = result.links
    return links.filter((links["src"] == "sw0") & (links["dst"] == "h0"))["queue_high_water_bytes"][0]


def test_a_hot_port_of_a_sliced_buffer_uses_only_its_slice(core):
    # One slice: 20,165 cells of 208 B; a 1500 B frame takes 8 cells. With
    # alpha 8 a lone congested queue holds 8/9 of its pool.
    per_frame_cells = 8
    slice_frames = 8 / 9 * 20165 / per_frame_cells
    sliced = _one_hot_port_peak(4)
    assert sliced / 1500 == pytest.approx(slice_frames, abs=2)
    whole = _one_hot_port_peak(1)
    assert whole / 1500 == pytest.approx(4 * slice_frames, abs=8)


def _trident3(hosts: int, frames: int = 0, **buffer):
    doc = {
        "name": "t3",
        "duration": "2ms",
        "network": {"switch": {"device": "trident3-like", **({"buffer": buffer} if buffer else {})}},
        "topology": {"kind": "star", "hosts": hosts, "link": {"rate": "100Gbps", "delay": "1us"}},
        "traffic": [{"kind": "burst", "src": ["h1", "h2", "h3", "h4"], "dst": "h0", "frames": frames or 1,
                     "frame_size": "1500B"}],
        "stats": {"queue_sample_interval": "0"},
    }
    return fabricsim.run(fabricsim.from_dict(doc))


def test_trident3_preset_sets_aside_the_sdk_reservations(core):
    # 30 x 100G: 30 x (574 headroom + 8 PG minimum) + 573 fixed = 18,033 of
    # 129,024 cells (4.40 MiB), the reservations of the 32x100G report's appendix.
    b = _trident3(30).buffers.row(0, named=True)
    assert (b["cell_bytes"], b["capacity_cells"], b["reserved_cells"]) == (256, 129_024, 18_033)
    assert b["reserved_cells"] * 256 / 2**20 == pytest.approx(4.40, abs=0.005)
    # Headroom follows the port speed: 10G ports reserve 160 cells each, not 574.
    doc = {"name": "t", "duration": "1ms", "network": {"switch": {"device": "trident3-like"}},
           "topology": {"kind": "star", "hosts": 30, "link": {"rate": "10Gbps", "delay": "1us"}}}
    ten = fabricsim.run(fabricsim.from_dict(doc)).buffers.row(0, named=True)
    assert ten["reserved_cells"] == 30 * (160 + 8) + 573


def test_reserved_cells_are_not_shared(core):
    # A lone congested queue with alpha 8 holds 8/9 of the shared pool, which
    # the reservations have shrunk: 8/9 x (129,024 - 18,033) cells, 7 cells
    # (1500 B + 64 B header) per frame.
    result = _trident3(30, frames=40_000)
    assert result.summary["packets_dropped"] > 0
    peak = result.buffers["high_water_cells"][0]
    assert peak == pytest.approx(8 / 9 * (129_024 - 18_033), abs=8)
    unreserved = _trident3(30, frames=40_000, class_pg=[0], pg_min="0B", headroom_per_port="0B", reserved_fixed="0B")
    assert unreserved.buffers["high_water_cells"][0] == pytest.approx(8 / 9 * 129_024, abs=8)


def test_buffer_cells_are_reported_where_the_device_counts_cells(core):
    cells = fabricsim.run(scenario({"buffer": {"model": "shared", "size": "1MB", "cell": "208B"}})).buffers
    row = cells.row(0, named=True)
    assert row["cell_bytes"] == 208 and row["capacity_cells"] == 1_000_000 // 208
    # 1500 B frames take 8 cells (1664 B): the cell high-water mark says so.
    assert row["high_water_cells"] * 208 >= row["high_water_bytes"] * 1664 // 1500 - 208
    static = fabricsim.run(scenario({"buffer": {"model": "static", "port_size": "1MB"}})).buffers.row(0, named=True)
    assert static["cell_bytes"] is None and static["high_water_cells"] is None


def test_reservation_fields_resolve_and_reject_bad_values():
    resolved = scenario({"buffer": {"model": "shared", "size": "1MB", "pg_min": "2KB", "class_pg": 7,
                                    "headroom_per_port": {"25Gbps": "64KB", "100Gbps": "147KB"},
                                    "reserved_fixed": "10KB"}}).to_resolved()["network"]["switch"]["buffer"]
    assert resolved["pg_min_bytes"] == 2000 and resolved["class_pg"] == [7]
    assert resolved["headroom_per_port"] == [[25_000_000_000, 64_000], [100_000_000_000, 147_000]]
    assert resolved["reserved_fixed_bytes"] == 10_000
    # Defaults are not sent at all.
    plain = scenario({"buffer": {"model": "shared", "size": "1MB"}}).to_resolved()["network"]["switch"]["buffer"]
    assert not {"pg_min_bytes", "class_pg", "headroom_per_port", "reserved_fixed_bytes"} & set(plain)
    assert "class_pg[0]" in errors({"buffer": {"model": "shared", "size": "1MB", "class_pg": [9]}})
    assert "headroom_per_port" in errors({"buffer": {"model": "shared", "size": "1MB", "headroom_per_port": {"x": 1}}})
    assert "only for model shared" in errors({"buffer": {"model": "static", "pg_min": "1KB"}})


def test_reservations_larger_than_the_buffer_are_rejected_with_the_field(core):
    sc = scenario({"buffer": {"model": "shared", "size": "100KB", "reserved_fixed": "200KB"}})
    with pytest.raises(ScenarioError, match=r"network\.switch\.buffer\.size: the reservations"):
        fabricsim.run(sc)


def test_burst_absorption_defaults_to_the_test_plan_frame_sizes():
    from fabricsim.experiments.burst_absorption import FRAME_SIZES

    assert FRAME_SIZES == (192, 512, 1024, 1518, 2048, 4096, 9216)
