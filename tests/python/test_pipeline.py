"""Match-action pipelines and arbitration from YAML: schema errors, presets,
the forwarding and fairness procedures against their closed forms, outputs."""

from pathlib import Path

import polars as pl
import pytest

import fabricsim
from fabricsim import devices
from fabricsim.errors import ScenarioError
from fabricsim.experiments.features import fairness, forwarding
from fabricsim.outputs.shares import hierarchical_shares, jain, max_min

ROOT = Path(__file__).resolve().parents[2]


def scenario(switch=None, host=None, traffic=None, hosts=3):
    network = {"switch": switch or {}}
    if host is not None:
        network["host"] = host
    return fabricsim.from_dict(
        {
            "name": "t",
            "duration": "100us",
            "network": network,
            "topology": {"kind": "star", "hosts": hosts, "link": {"rate": "10Gbps", "delay": "1us"}},
            "traffic": traffic or [{"kind": "udp_cbr", "src": "h1", "dst": "h0", "rate": "1Gbps"}],
        }
    )


def error(**kwargs) -> str:
    with pytest.raises(ScenarioError) as exc:
        scenario(**kwargs)
    return str(exc.value)


def pipeline(*stages, **fields):
    return {"pipeline": {"rate": "1Gpps", "stages": list(stages), **fields}}


def test_bad_stages_name_the_field_and_the_allowed_values():
    msg = error(switch=pipeline({"kind": "firewall"}))
    assert "network.switch.pipeline.stages[0].kind: unknown value 'firewall'" in msg
    assert "conntrack" in msg and "vxlan_encap" in msg
    msg = error(switch=pipeline({"kind": "acl", "rules": [{"src": "10.0.0.1/24"}]}))
    assert "stages[0].rules[0].src" in msg and "10.0.0.0/24" in msg
    msg = error(switch=pipeline({"kind": "acl", "rulez": []}))
    assert "stages[0].rulez: unknown key" in msg and "rules" in msg
    msg = error(switch=pipeline({"kind": "meter", "mode": "trtcm", "cir": "2Gbps", "cbs": "1KB",
                                 "pir": "1Gbps", "pbs": "1KB"}))
    assert "stages[0].pir: must be >= cir (RFC 2698" in msg
    msg = error(switch=pipeline({"kind": "meter", "mode": "srtcm", "cir": "1Gbps", "cbs": "1KB"}))
    assert "stages[0].ebs" in msg
    msg = error(switch=pipeline({"kind": "dscp_rewrite", "dscp": 64}))
    assert "stages[0].dscp" in msg
    msg = error(switch=pipeline({"kind": "parse", "direction": "sideways"}))
    assert "stages[0].direction: unknown value 'sideways'; allowed: rx, tx, both" in msg
    msg = error(switch={"pipeline": {"rate": "fast"}})
    assert "network.switch.pipeline.rate" in msg and "850Mpps" in msg
    msg = error(switch={"pipeline": {"rate": "1Mpps", "pipes": 2, "port_pipe": [0, 2, 1]}})
    assert "pipeline.port_pipe[1]: pipe 2 does not exist" in msg
    msg = error(switch={"pipeline": {"rate": "1Mpps", "costs": {"acll": 1}}})
    assert "pipeline.costs" in msg and "acll" in msg
    msg = error(switch={"arbitration": {"kind": "round_robin", "groups": 2}})
    assert "network.switch.arbitration.groups: only for kind hierarchical" in msg
    msg = error(traffic=[{"kind": "udp_cbr", "src": "h1", "dst": "h0", "rate": "1Gbps", "dscp": 70}])
    assert "traffic[0].dscp" in msg


def test_core_errors_name_the_field_python_cannot_check():
    # Port 7 does not exist on a 3-port switch: only the core knows the port count.
    sc = scenario(switch=pipeline({"kind": "acl", "ports": [7], "rules": []}))
    with pytest.raises(fabricsim.ScenarioError) as exc:
        fabricsim.run(sc)
    assert "network.switch.pipeline.stages[0].ports[0]" in str(exc.value)


def test_packet_rates_are_written_with_units():
    sw = scenario(switch={"pipeline": {"rate": "850Mpps"}}).to_resolved()["network"]["switch"]
    assert sw["pipeline"]["rate_pps"] == 850_000_000
    sw = scenario(switch={"pipeline": {"rate": 2380952381}}).to_resolved()["network"]["switch"]
    assert sw["pipeline"]["rate_pps"] == 2_380_952_381
    # Without a pipeline or arbitration the resolved switch is unchanged.
    sw = scenario().to_resolved()["network"]["switch"]
    assert "pipeline" not in sw and "arbitration" not in sw


def test_presets_carry_their_pipes_and_arbitration():
    td3 = scenario(switch={"device": "trident3-like"}).to_resolved()["network"]["switch"]
    assert td3["pipeline"]["pipes"] == 2 and td3["pipeline"]["rate_pps"] == 2_380_952_381
    assert "arbitration" not in td3
    th = scenario(switch={"device": "tomahawk-like"}).to_resolved()["network"]["switch"]
    assert th["pipeline"]["pipes"] == 4 and th["pipeline"]["rate_pps"] == 850_000_000
    assert th["arbitration"]["kind"] == "hierarchical"
    # An arbitration of another kind replaces the preset's; one without a kind merges.
    merged = devices.merged("tomahawk-like", {"arbitration": {"kind": "fifo"}})
    assert merged["arbitration"] == {"kind": "fifo"}
    merged = devices.merged("tomahawk-like", {"arbitration": {"input_queue_size": "64KB"}})
    assert merged["arbitration"] == {"kind": "hierarchical", "input_queue_size": "64KB"}
    # Stages given by the scenario keep the preset's pipes and rate.
    sw = scenario(switch={"device": "tomahawk-like", **pipeline({"kind": "parse"})}).to_resolved()
    assert sw["network"]["switch"]["pipeline"]["rate_pps"] == 1_000_000_000


def test_a_line_rate_pipe_without_stages_is_not_simulated(core):
    # trident3-like's pipes cover 64 B line rate: with no stages no pipe is built.
    plain = fabricsim.run(scenario(switch={"device": "trident3-like"}))
    assert plain.pipes.height == 0 and plain.pipeline.height == 0
    featured = fabricsim.run(scenario(switch={"device": "trident3-like", "pipeline": {
        "stages": [{"kind": "acl", "rules": []}]}}))
    assert featured.pipes.height == 2 and featured.pipes["queue_drops"].sum() == 0
    assert featured.pipeline.filter(pl.col("counter") == "packets")["value"].sum() == featured.flows[
        "packets_delivered"].sum()


def test_nic_pipelines_tunnel_from_yaml(core):
    host = {"pipeline": {"rate": "1Tpps", "stages": [
        {"kind": "vxlan_encap", "vni": 5000, "direction": "tx"},
        {"kind": "vxlan_decap", "direction": "rx"}]}}
    traffic = [{"kind": "udp_cbr", "src": "h1", "dst": "h0", "rate": "1Gbps", "frame_size": "1000B", "max_frames": 10}]
    result = fabricsim.run(scenario(host=host, traffic=traffic))
    used = result.links.filter(pl.col("packets") > 0)
    assert (used["bytes"] == used["packets"] * 1050).all()
    assert result.flows["bytes_delivered"][0] == 10_000


def test_closed_form_helpers():
    assert max_min([1.0, 10.0, 10.0], 9.0) == [1.0, 4.0, 4.0]
    assert hierarchical_shares([10.0] * 4, [0, 1, 1, 1], 6.0) == [3.0, 1.0, 1.0, 1.0]
    assert hierarchical_shares([1.0, 10.0, 10.0], [0, 1, 1], 6.0) == [1.0, 2.5, 2.5]
    assert jain([1.0, 1.0]) == 1.0 and jain([1.0, 0.0]) == 0.5


def test_forwarding_with_acls_matches_the_pipe_capacity(core):
    table = forwarding(ROOT / "scenarios" / "esg-acl.yaml", frame_sizes=[64],
                       devices=["trident3-like", "tomahawk-like"])
    td3 = table.filter(pl.col("device") == "trident3-like").row(0, named=True)
    th = table.filter(pl.col("device") == "tomahawk-like").row(0, named=True)
    # trident3-like: features in one pass at line rate.
    assert td3["throughput_pct"] == pytest.approx(100, abs=0.05) and td3["packets_dropped"] == 0
    # tomahawk-like: h0..h7 share a pipe of 850 Mpps: 850/8 Mpps each, 71.43 % of
    # 148.8 Mpps; h8..h11 keep line rate: (8 x 71.43 + 4 x 100) / 12 = 80.95 %.
    line = 100e9 / (84 * 8)
    per_port = 100 * 850e6 / 8 / line
    assert th["throughput_min_pct"] == pytest.approx(per_port, abs=0.1)
    assert th["throughput_pct"] == pytest.approx((8 * per_port + 400) / 12, abs=0.1)
    assert th["pipeline_queue_drops"] == th["packets_dropped"] > 0
    assert th["latency_max_ns"] > td3["latency_max_ns"]


def test_fairness_follows_the_arbitration_rule(core):
    shares, summary = fairness(ROOT / "scenarios" / "esg-fairness.yaml", sources=[6], frame_sizes=[1280],
                               devices=["trident3-like", "tomahawk-like"])
    th = shares.filter(pl.col("device") == "tomahawk-like")
    # h7 alone in pipe 0, h11 and h12 in pipe 1, h24, h25, h28 in pipe 3: 1/3, 1/6, 1/6, 1/9 x 3.
    assert th["group"].to_list() == [0, 1, 1, 3, 3, 3]
    for got, want in zip(th["share"], [1 / 3, 1 / 6, 1 / 6, 1 / 9, 1 / 9, 1 / 9]):
        assert got == pytest.approx(want, abs=0.003)
    td3 = summary.filter(pl.col("device") == "trident3-like").row(0, named=True)
    assert td3["jain"] > 0.999 and td3["max_error"] < 0.003


def test_shipped_feature_scenarios_write_their_tables_and_report(core, tmp_path):
    result = fabricsim.run(fabricsim.load(ROOT / "scenarios" / "esg-fairness.yaml"))
    assert result.source_shares["sources"][0] == 6
    assert result.drops.filter(pl.col("reason") == "acl_deny")["packets"].sum() > 0
    written = {p.name for p in result.write(tmp_path)}
    for name in ("pipeline.parquet", "pipes.parquet", "source_shares.parquet", "fairness.parquet"):
        assert name in written
    page = (tmp_path / "report.html").read_text()
    assert "<h2>Pipelines</h2>" in page and "<h2>Fairness</h2>" in page
    again = fabricsim.Result.read(tmp_path)
    assert again.source_shares.equals(result.source_shares)


def _pipe_md1(load: float, seconds: str) -> tuple[float, float]:
    """Mean wait and utilization of a 10 Mpps pipe (S = 100 ns) fed Poisson arrivals at ``load``."""
    sc = fabricsim.from_dict({
        "name": f"pipe-md1-{load}", "seed": 5, "duration": seconds,
        "network": {"switch": {"latency": "0ns", "buffer": {"model": "static", "port_size": "1GB"},
                               "pipeline": {"rate": "10Mpps", "queue_packets": None}}},
        "topology": {"kind": "star", "hosts": 2, "link": {"rate": "1Tbps", "delay": "0ns"}},
        "traffic": [{"kind": "udp_poisson", "src": "h0", "dst": "h1",
                     "rate": str(int(load * 10e6 * 1020 * 8)), "frame_size": "1000B"}],
        "stats": {"queue_sample_interval": "0s"},
    })
    pipes = fabricsim.run(sc).pipes.row(0, named=True)
    return pipes["wait_mean_ps"], pipes["utilization"]


@pytest.mark.slow
@pytest.mark.parametrize("load", [0.3, 0.5, 0.7, 0.9])
def test_pipe_queue_matches_md1_over_long_runs(core, load):
    wq, util = _pipe_md1(load, "400ms")
    theory = load * 100_000 / (2 * (1 - load))
    assert wq == pytest.approx(theory, rel=0.02 if load < 0.9 else 0.05)
    assert util == pytest.approx(load, rel=0.01)


@pytest.mark.slow
def test_forwarding_matches_the_pipe_closed_form_at_every_size(core):
    sizes = [64, 82, 97, 98, 128, 256, 1518]
    table = forwarding(ROOT / "scenarios" / "esg-acl.yaml", frame_sizes=sizes,
                       devices=["trident3-like", "tomahawk-like"])
    for row in table.iter_rows(named=True):
        line = 100e9 / ((row["frame_bytes"] + 20) * 8)
        if row["device"] == "trident3-like":
            expected = 100.0
        else:
            per_port = 100 * min(1.0, 850e6 / 8 / line)
            expected = (8 * per_port + 400) / 12
        assert row["throughput_pct"] == pytest.approx(expected, abs=0.1), row


@pytest.mark.slow
def test_fairness_matches_the_closed_form_for_every_case(core):
    _, summary = fairness(ROOT / "scenarios" / "esg-fairness.yaml", devices=["trident3-like", "tomahawk-like"])
    assert summary.height == 18
    assert summary["max_error"].max() < 0.002
    assert (summary["jain"] - summary["expected_jain"]).abs().max() < 0.002
