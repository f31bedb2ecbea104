"""Multicast and broadcast fabrics from scenario files: bytes per link against the tree, schema errors."""

from pathlib import Path

import polars as pl
import pytest

from fabricsim import ScenarioError, from_dict, load, loads, run

ROOT = Path(__file__).resolve().parents[2]


def fat_tree(replication):
    return from_dict({
        "duration": "1ms",
        "topology": {"kind": "fat_tree", "k": 4, "link": {"rate": "10Gbps", "delay": "100ns"}},
        "multicast": {"groups": [{"name": "g", "members": ["h1", "h2", "h5", "h9", "h10", "h15"]}]},
        "traffic": [{"kind": "udp_cbr", "src": "h0", "group": "g", "replication": replication,
                     "rate": "1Gbps", "frame_size": "1000B", "max_frames": 50}],
    })


def test_native_replication_sends_each_frame_once_over_each_tree_link(core):
    r = run(fat_tree("native"))
    assert r.summary["conservation_ok"] and r.summary["drained"]
    tree = {(a, b) for a, b in zip(r.multicast_tree["node"].to_list(), r.multicast_tree["dst"].to_list())}
    carried = {(a, b): n for a, b, n in zip(r.links["src"].to_list(), r.links["dst"].to_list(),
                                             r.links["packets"].to_list()) if n}
    assert carried == {edge: 50 for edge in tree}
    # A tree reaching 6 members; every member got every frame.
    assert sum(1 for _, b in tree if b.startswith("h")) == 6
    assert r.multicast_members["packets"].to_list() == [50] * 6
    assert r.multicast["messages_complete"].to_list() == [50]
    # Copies: at each node, one per tree port beyond the first.
    nodes = [a for a, _ in tree]
    assert r.summary["packets_replicated"] == 50 * sum(nodes.count(x) - 1 for x in set(nodes))


def test_unicast_emulation_sends_a_copy_per_member_over_the_senders_link(core):
    r = run(fat_tree("unicast"))
    sender = r.links.filter(pl.col("src") == "h0")["packets"].to_list()
    assert sender == [300]  # 50 frames x 6 members
    native = run(fat_tree("native"))
    assert native.links.filter(pl.col("src") == "h0")["packets"].to_list() == [50]
    # Unicast copies never share a link more cheaply than the tree does.
    assert r.links["bytes"].sum() >= native.links["bytes"].sum()
    assert r.multicast["messages_complete"].to_list() == [50]


def test_tolly_scenario_runs_both_fabrics_side_by_side(core):
    r = run(load(ROOT / "scenarios" / "tolly-latency.yaml", overrides=["duration=300us"]))
    assert r.summary["conservation_ok"] and r.summary["packets_dropped"] == 0
    m = r.multicast.sort("group")
    assert m["replication"].to_list() == ["native", "unicast"]  # md-fabric, md-switch
    assert m["copies"][0] == 6 * m["messages"][0] and m["copies"][1] == 0
    assert r.nodes.filter(pl.col("name") == "bcast")["kind"].to_list() == ["broadcast"]
    receivers = r.fabric_receivers
    assert receivers.height == 24 and (receivers["frames_filtered"] > 0).all()


def test_group_traffic_errors_name_the_field():
    base = """
duration: 1ms
topology: {kind: star, hosts: 3, link: {rate: 10Gbps, delay: 1us}}
multicast: {groups: [{name: g, members: [h1, h2]}, {name: g, members: [h1, h1]}]}
traffic:
  - {kind: udp_cbr, src: h0, group: nope, rate: 1Gbps}
  - {kind: udp_cbr, src: h0, rate: 1Gbps}
  - {kind: udp_cbr, src: h0, dst: h1, group: g, rate: 1Gbps}
  - {kind: udp_cbr, src: h0, group: g, replication: both, rate: 1Gbps}
"""
    with pytest.raises(ScenarioError) as info:
        loads(base)
    message = str(info.value)
    assert "multicast.groups[1].members[1]: 'h1' is listed twice" in message
    with pytest.raises(ScenarioError) as info:
        loads(base.replace("{name: g, members: [h1, h1]}", "{name: g, members: [h2]}"))
    message = str(info.value)
    assert "multicast.groups[1].name: duplicate group name 'g' (also groups[0])" in message
    with pytest.raises(ScenarioError) as info:
        loads(base.replace(", {name: g, members: [h1, h1]}", ""))
    message = str(info.value)
    assert "traffic[1].dst: give either dst (a host) or group (a multicast group), not both" in message
    assert "traffic[2].dst: give either dst" in message
    assert "traffic[3].replication: unknown value 'both'; allowed: native, unicast" in message
    with pytest.raises(ScenarioError) as info:
        loads(base.replace(", {name: g, members: [h1, h1]}", "").split("  - {kind: udp_cbr, src: h0, rate")[0])
    assert "traffic[0].group: unknown group 'nope'; known: g" in str(info.value)


def test_broadcast_fabric_settings_are_checked():
    text = """
duration: 1ms
network: {switch: {kind: broadcast, forwarding: store_and_forward, buffer: {model: shared, size: 1MB},
                   ecn: {threshold: 10KB}}}
topology: {kind: star, hosts: 2, link: {rate: 10Gbps, delay: 1us}}
"""
    with pytest.raises(ScenarioError) as info:
        loads(text)
    message = str(info.value)
    assert "network.switch.forwarding: a broadcast fabric delivers from the header on" in message
    assert "network.switch.buffer.model: a broadcast fabric has one receive buffer per adapter" in message
    assert "network.switch.ecn: not available on a broadcast fabric" in message
    sc = loads(text.replace("forwarding: store_and_forward, buffer: {model: shared, size: 1MB},\n", "")
               .replace("                   ecn: {threshold: 10KB}", ""))
    assert sc.network.switch.forwarding == "cut_through"
