"""Device power: energy is the integral of the model over the recorded load; presets give their figures."""

from pathlib import Path

import polars as pl
import pytest

from fabricsim import ScenarioError, from_dict, load, loads, run
from fabricsim.experiments.power_load import power_at_loads

ROOT = Path(__file__).resolve().parents[2]


def powered(traffic, duration="2ms", interval="250us", device=None, power=None):
    switch = {"device": device} if device else {"power": power}
    return from_dict({
        "duration": duration,
        "network": {"switch": switch},
        "topology": {"kind": "star", "hosts": 4, "link": {"rate": "10Gbps", "delay": "5ns"}},
        "stats": {"power_interval": interval},
        "traffic": traffic,
    })


def test_energy_is_the_integral_of_the_model_over_the_recorded_load(core):
    power = {"idle": "40W", "port": "2.5W", "per_bit": "20pJ", "per_packet": "15nJ"}
    traffic = [{"kind": "udp_poisson", "src": ["h1", "h2"], "dst": "h0", "rate": "45%", "frame_size": "700B"},
               {"kind": "udp_cbr", "src": "h3", "dst": "h1", "rate": "3Gbps", "frame_size": "64B", "start": "300us"}]
    r = run(powered(traffic, power=power))
    bins = r.power.sort("time_ps")
    # Each bin: static power over its width, plus the bits and frames the device sent in it.
    width = (bins["end_ps"] - bins["time_ps"]).to_numpy() * 1e-12
    model = (40 + 4 * 2.5) * width + 20e-12 * 8 * bins["bytes"].to_numpy() + 15e-9 * bins["frames"].to_numpy()
    assert bins["energy_j"].to_numpy() == pytest.approx(model, rel=1e-12)
    assert bins["watts"].to_numpy() == pytest.approx(model / width, rel=1e-12)
    # Bins tile the run, and add up to the device total; the recorded load is what the device sent.
    assert bins["time_ps"][0] == 0 and (bins["time_ps"][1:] == bins["end_ps"][:-1]).all()
    e = r.energy.row(0, named=True)
    assert e["energy_j"] == pytest.approx(bins["energy_j"].sum(), rel=1e-12)
    sent = r.links.filter(pl.col("src") == "sw0")
    assert e["bytes"] == sent["bytes"].sum() and e["frames"] == sent["packets"].sum()
    assert r.summary["energy_j"] == pytest.approx(e["energy_j"], rel=1e-12)


def test_bins_are_the_interval_wide_and_the_last_one_ends_with_the_run(core):
    r = run(powered([], duration="1.1ms", interval="300us", power={"idle": "10W"}))
    assert r.power["time_ps"].to_list() == [0, 300_000_000, 600_000_000, 900_000_000]
    assert r.power["end_ps"].to_list() == [300_000_000, 600_000_000, 900_000_000, 1_100_000_000]
    assert r.power["watts"].to_list() == [10.0] * 4


def test_tolly_power_at_idle_10_and_100_percent_is_the_presets(core):
    """24 ports in use, every port sending 1518 B frames at the load: the preset's per-port power plus
    its energy per bit over the frames' bits (fm4000-like: 4.5 W/port + 50 pJ/bit: 108 W idle, and at
    line rate 120 W less the preamble and gap bits, which carry no energy: 119.84 W with 1518 B frames,
    the 7124SX data sheet's 5 W/port typical)."""
    table = power_at_loads(ROOT / "scenarios" / "tolly-latency.yaml", loads=[0.0, 0.1, 1.0],
                           overrides=["duration=10ms"])
    frame_bits = 10e9 * 1518 / 1538  # frame bits per second at line rate, one port
    for row in table.iter_rows(named=True):
        idle = {"ct10g": 24 * 4.5, "bcast": 10 + 24 * 3}[row["node"]]
        per_bit = {"ct10g": 50e-12, "bcast": 10e-12}[row["node"]]
        expected = idle + per_bit * 24 * row["load"] * frame_bits
        assert row["all_ports_w"] == pytest.approx(expected, rel=1e-12)
        # The run: constant-rate sources send ceil(T / gap) frames, one more than T / gap at most.
        assert row["mean_w"] == pytest.approx(expected, rel=2e-4), row
    ct = table.filter(pl.col("node") == "ct10g")["mean_w"].to_list()
    assert ct[0] == 108.0 and ct[2] == pytest.approx(108 + 12 * 1518 / 1538, rel=2e-4)


def test_power_settings_are_checked_with_their_units():
    text = """
duration: 1ms
network: {switch: {power: {idle: 120, per_bit: 5pW}}}
topology: {kind: star, hosts: 2, link: {rate: 10Gbps, delay: 1us}}
"""
    with pytest.raises(ScenarioError) as info:
        loads(text)
    message = str(info.value)
    assert "network.switch.power.idle: expected a power like '120W': a unit is required" in message
    assert "network.switch.power.per_bit: expected an energy like '50pJ': unknown unit 'pW'" in message


def test_trident3_like_and_fm4000_like_carry_their_data_sheet_power(core):
    sc = load(ROOT / "scenarios" / "tolly-latency.yaml")
    fm = sc.network.switch_overrides["ct10g"].power
    assert fm.port == 4_500_000 and fm.per_bit == 50_000  # 4.5 W, 50 pJ: 5 W/port at line rate
    t3 = from_dict({"duration": "1ms", "network": {"switch": {"device": "trident3-like"}},
                    "topology": {"kind": "star", "hosts": 2, "link": {"rate": "100Gbps", "delay": "1us"}}})
    p = t3.network.switch.power
    assert p.port + p.per_bit * 100e9 / 1e9 == 7_000_000  # 7 W per 100G port at line rate (uW)
