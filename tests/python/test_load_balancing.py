"""Per-switch load balancing from the scenario: the modes and their
parameters, errors that name the field, and the modes' effect on a run."""

from __future__ import annotations

import polars as pl
import pytest

import fabricsim
from fabricsim import ScenarioError, loads

LEAF_SPINE = """
duration: 200us
topology:
  kind: leaf_spine
  leaves: 2
  spines: 4
  hosts_per_leaf: 1
  host_link: {rate: 100Gbps, delay: 1us}
  fabric_link: {rate: 100Gbps, delay: 1us}
traffic: [{kind: udp_cbr, src: h0, dst: h1, rate: 40Gbps, frame_size: 1500B}]
"""


def _with(lb: str) -> str:
    return LEAF_SPINE + f"network: {{switch: {{load_balancing: {lb}}}}}\n"


def _resolved_lb(lb: str):
    return loads(_with(lb)).to_resolved()["network"]["switch"].get("load_balancing")


def test_ecmp_is_the_default_and_is_left_out_of_the_resolved_scenario():
    assert loads(LEAF_SPINE).network.switch.load_balancing.mode == "ecmp"
    assert _resolved_lb("ecmp") is None


def test_a_mode_alone_or_with_parameters():
    assert _resolved_lb("spray_rr") == {"mode": "spray_rr", "flowlet_gap_ps": 0}
    assert _resolved_lb("flowlet") == {"mode": "flowlet", "flowlet_gap_ps": 50_000_000}
    assert _resolved_lb("{mode: flowlet, flowlet_gap: 20us}") == {"mode": "flowlet", "flowlet_gap_ps": 20_000_000}
    assert _resolved_lb("{mode: adaptive}") == {"mode": "adaptive", "flowlet_gap_ps": 0}
    assert _resolved_lb("{mode: adaptive, flowlet_gap: 5us}") == {"mode": "adaptive", "flowlet_gap_ps": 5_000_000}


@pytest.mark.parametrize(
    "lb, field, needles",
    [
        ("spray", "network.switch.load_balancing.mode", ["spray_random", "spray_rr", "flowlet", "adaptive", "ecmp"]),
        ("{mode: spray_rr, flowlet_gap: 5us}", "network.switch.load_balancing.flowlet_gap", ["flowlet and adaptive"]),
        ("{mode: flowlet, flowlet_gap: 0us}", "network.switch.load_balancing.flowlet_gap", []),
        ("{mode: flowlet, gap: 5us}", "network.switch.load_balancing.gap", []),
    ],
)
def test_bad_load_balancing_names_the_field(lb, field, needles):
    with pytest.raises(ScenarioError) as err:
        loads(_with(lb))
    text = str(err.value)
    assert field in text, text
    for needle in needles:
        assert needle in text, text


def _uplinks(result) -> list[int]:
    links = result.links.with_columns(pl.col("src").cast(pl.Utf8), pl.col("dst").cast(pl.Utf8))
    return [
        int(links.filter((pl.col("src") == "leaf0") & (pl.col("dst") == f"spine{s}"))["packets"].sum())
        for s in range(4)
    ]


def test_spraying_uses_every_uplink_ecmp_one():
    ecmp = _uplinks(fabricsim.run(loads(LEAF_SPINE), seed=1))
    assert sum(1 for f in ecmp if f > 0) == 1, ecmp
    rr = _uplinks(fabricsim.run(loads(_with("spray_rr")), seed=1))
    assert max(rr) - min(rr) <= 1 and sum(rr) == sum(ecmp), rr


def test_a_per_switch_override_balances_only_that_switch():
    text = LEAF_SPINE + "network: {switch_overrides: {leaf0: {load_balancing: spray_random}}}\n"
    sc = loads(text)
    resolved = sc.to_resolved()["network"]
    assert resolved["switch_overrides"]["leaf0"]["load_balancing"]["mode"] == "spray_random"
    assert "load_balancing" not in resolved["switch"]
    up = _uplinks(fabricsim.run(sc, seed=1))
    assert all(f > 0 for f in up), up


UNEQUAL_PATHS = """
duration: 2ms
network: {switch: {load_balancing: spray_rr}}
topology:
  kind: explicit
  nodes: [{name: h0, kind: host}, {name: h1, kind: host}, {name: s0, kind: switch}, {name: a, kind: switch},
          {name: b, kind: switch}, {name: s1, kind: switch}]
  links:
    - {a: h0, b: s0, rate: 10Gbps, delay: 1us}
    - {a: s0, b: a, rate: 10Gbps, delay: 1us}
    - {a: s0, b: b, rate: 10Gbps, delay: 1us}
    - {a: a, b: s1, rate: 10Gbps, delay: 1us}
    - {a: b, b: s1, rate: 10Gbps, delay: 11us}
    - {a: s1, b: h1, rate: 10Gbps, delay: 1us}
traffic: [{kind: udp_cbr, src: h0, dst: h1, rate: 1Gbps, frame_size: 980B, max_frames: 100}]
"""


def test_reordering_is_in_the_flows_table_and_its_parquet_file(tmp_path):
    # Round robin over two paths, one 10 us longer, a frame every 8 us: each
    # frame of the long path is overtaken by the next one (distance 1).
    result = fabricsim.run(loads(UNEQUAL_PATHS), seed=1)
    row = result.flows.row(0, named=True)
    assert row["reordered_packets"] in (49, 50)
    assert row["reorder_distance_max"] == 1 and row["reorder_distance_mean"] == 1.0
    result.write(tmp_path / "out")
    written = pl.read_parquet(tmp_path / "out" / "flows.parquet")
    assert written["reordered_packets"].to_list() == [row["reordered_packets"]]
    # One path per flow: nothing reordered, no distance.
    ecmp = fabricsim.run(loads(UNEQUAL_PATHS.replace("load_balancing: spray_rr", "load_balancing: ecmp")), seed=1)
    assert ecmp.flows["reordered_packets"].to_list() == [0]
    assert ecmp.flows["reorder_distance_max"].to_list() == [None]


def _fat_tree_permutation(lb: str) -> dict:
    # k=4 fat-tree, every host at line rate to the host 5 places on (a
    # permutation across pods); 100 KB per port, so that colliding flows drop.
    flows = "\n".join(
        f"  - {{kind: udp_cbr, src: h{i}, dst: h{(i + 5) % 16}, rate: 10Gbps, frame_size: 1500B, stop: 500us}}"
        for i in range(16)
    )
    text = f"""
duration: 500us
network: {{switch: {{load_balancing: {lb}, buffer: {{model: static, port_size: 100KB}}}}}}
topology: {{kind: fat_tree, k: 4, link: {{rate: 10Gbps, delay: 1us}}}}
traffic:
{flows}
"""
    return fabricsim.run(loads(text), seed=1).summary


def test_spraying_carries_a_fat_tree_permutation_that_ecmp_drops():
    ecmp = _fat_tree_permutation("ecmp")
    assert ecmp["conservation_ok"]
    assert ecmp["packets_dropped"] > 0.2 * ecmp["packets_created"], ecmp["packets_dropped"]
    for mode in ("spray_rr", "spray_random"):
        sprayed = _fat_tree_permutation(mode)
        assert sprayed["conservation_ok"] and sprayed["packets_dropped"] == 0, mode


def test_the_json_schema_takes_the_mode_alone_or_the_mapping():
    jsonschema = pytest.importorskip("jsonschema")
    from fabricsim.schema.jsonschema import scenario_json_schema

    validator = jsonschema.Draft202012Validator(scenario_json_schema())
    base = {"duration": "1ms", "topology": {"kind": "star", "hosts": 2, "link": {"rate": "10Gbps", "delay": "1us"}}}
    for lb, ok in [("spray_rr", True), ({"mode": "flowlet", "flowlet_gap": "20us"}, True), ("spray", False),
                   ({"mode": "spray"}, False)]:
        doc = {**base, "network": {"switch": {"load_balancing": lb}}}
        assert validator.is_valid(doc) is ok, lb
