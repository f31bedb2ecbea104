"""The rail-optimised topology (docs/models/rail-topology.md)."""

from __future__ import annotations

import pytest

import fabricsim
from fabricsim import ScenarioError

RAIL = """
duration: 100us
network: {switch: {latency: 500ns}}
topology: {kind: rail, servers: 4, gpus_per_server: 8, spines: 2,
           nic_link: {rate: 400Gbps, delay: 1us}, fabric_link: {rate: 400Gbps, delay: 1us}}
traffic:
  - {kind: udp_cbr, name: same_rail, src: s2g0, dst: s3g0, rate: 1Gbps, frame_size: 1000B, max_frames: 1}
  - {kind: udp_cbr, name: cross_rail, src: s0g0, dst: s1g1, rate: 1Gbps, frame_size: 1000B, max_frames: 1}
"""


def test_every_servers_nic_g_is_on_rail_g_and_every_rail_reaches_every_spine():
    topo = fabricsim.loads(RAIL).to_resolved()["topology"]
    assert topo["kind"] == "explicit"
    assert len(topo["nodes"]) == 4 * 8 + 8 + 2
    nic = [(l["a"], l["b"]) for l in topo["links"] if l["a"].startswith("s")]
    assert sorted(nic) == sorted((f"s{s}g{g}", f"rail{g}") for s in range(4) for g in range(8))
    fabric = {(l["a"], l["b"]) for l in topo["links"] if l["a"].startswith("rail")}
    assert fabric == {(f"rail{g}", f"spine{j}") for g in range(8) for j in range(2)}


def test_same_rail_traffic_takes_one_switch_and_cross_rail_traffic_three(core):
    """One 1000 B frame (1,020 B on the wire: 20.4 ns at 400 Gb/s) each way,
    1 us links, 500 ns store-and-forward switches: two links and a rail leaf
    on one rail, four links and three switches across rails (no NVLink)."""
    result = fabricsim.run(fabricsim.loads(RAIL))
    assert result.summary["conservation_ok"]
    latency = dict(zip(result.flows["name"], result.flows["latency_min_ps"]))
    ser, delay, switch = 20_400, 1_000_000, 500_000
    assert latency["same_rail"] == 2 * (ser + delay) + switch
    assert latency["cross_rail"] == 4 * (ser + delay) + 3 * switch


def test_rails_without_spines_reach_only_their_own_rail(core):
    text = RAIL.replace("spines: 2,", "spines: 0,").replace(", fabric_link: {rate: 400Gbps, delay: 1us}", "")
    with pytest.raises(ScenarioError, match=r"traffic\[1\]: 's0g0' cannot reach 's1g1': they are in separate parts"):
        fabricsim.run(fabricsim.loads(text))
    with pytest.raises(ScenarioError, match="topology.fabric_link: required when there are spines"):
        fabricsim.loads(RAIL.replace(", fabric_link: {rate: 400Gbps, delay: 1us}", ""))


PODS = """
duration: 100us
network: {switch: {latency: 500ns}}
topology: {kind: rail, servers: 2, gpus_per_server: 4, spines: 2, pods: 3, cores: 2,
           nic_link: {rate: 400Gbps, delay: 1us}, fabric_link: {rate: 400Gbps, delay: 1us},
           core_link: {rate: 800Gbps, delay: 2us}}
traffic:
  - {kind: udp_cbr, name: in_pod, src: s0g1, dst: s1g1, rate: 1Gbps, frame_size: 1000B, max_frames: 1}
  - {kind: udp_cbr, name: cross_pod, src: s0g2, dst: s4g2, rate: 1Gbps, frame_size: 1000B, max_frames: 1}
"""


def test_pods_have_their_own_rails_and_spines_and_every_pod_spine_reaches_every_core():
    topo = fabricsim.loads(PODS).to_resolved()["topology"]
    names = [n["name"] for n in topo["nodes"]]
    assert len(names) == len(set(names)) == 3 * (2 * 4 + 4 + 2) + 2
    links = {(l["a"], l["b"]) for l in topo["links"]}
    assert {(f"s{s}g{g}", f"p{s // 2}rail{g}") for s in range(6) for g in range(4)} <= links
    assert {(f"p{p}rail{g}", f"p{p}spine{j}") for p in range(3) for g in range(4) for j in range(2)} <= links
    assert {(f"p{p}spine{j}", f"core{c}") for p in range(3) for j in range(2) for c in range(2)} <= links
    assert len(topo["links"]) == 6 * 4 + 3 * 4 * 2 + 3 * 2 * 2
    core = [l for l in topo["links"] if l["b"].startswith("core")]
    assert all(l["rate_bps"] == 800_000_000_000 and l["delay_ps"] == 2_000_000 for l in core)


def test_traffic_between_pods_crosses_a_core(core):
    """One 1000 B frame each way (20.4 ns at 400 Gb/s, 10.2 ns at 800 Gb/s), 500 ns store-and-forward
    switches: within a pod on one rail, two links and the rail leaf; to the same rail in another pod,
    rail leaf, pod spine, core, pod spine, rail leaf: six links (two at 800G with 2 us) and five switches."""
    result = fabricsim.run(fabricsim.loads(PODS))
    assert result.summary["conservation_ok"]
    latency = dict(zip(result.flows["name"], result.flows["latency_min_ps"]))
    ser, delay, switch = 20_400, 1_000_000, 500_000
    assert latency["in_pod"] == 2 * (ser + delay) + switch
    assert latency["cross_pod"] == 4 * (ser + delay) + 2 * (10_200 + 2_000_000) + 5 * switch


@pytest.mark.parametrize("change, field, message", [
    (("cores: 2,", ""), "topology.cores", "pods are joined by core switches"),
    (("pods: 3,", ""), "topology.cores", "join pods (pods is 1)"),
    ((",\n           core_link: {rate: 800Gbps, delay: 2us}", ""), "topology.core_link", "required when there are cores"),
    (("spines: 2,", "spines: 0,"), "topology.spines", "pods are joined through their spines"),
])
def test_a_rail_fabric_with_pods_names_what_is_missing(change, field, message):
    with pytest.raises(ScenarioError) as err:
        fabricsim.loads(PODS.replace(*change))
    assert err.value.issues[0].path == field, str(err.value)
    assert message in str(err.value)
