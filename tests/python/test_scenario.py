"""Scenario validation, defaults, overrides and the resolved JSON for the core."""

import json
from pathlib import Path

import pytest

import fabricsim
from fabricsim import Scenario, ScenarioError, from_dict, load, loads

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted((ROOT / "scenarios").glob("*.yaml"))

MINIMAL = """
duration: 10ms
topology: {kind: star, hosts: 4, link: {rate: 100Gbps, delay: 1us}}
"""

FULL = """
name: full
description: every section
seed: 9
duration: 2ms
drain: false
drain_limit: 500ms
network:
  ethernet_overhead: 24B
  classes: 4
  switch: {forwarding: cut_through, latency: 300ns, buffer: {model: static, port_size: 32MiB, queue_size: 1MB}}
  host: {latency: 100ns, nic_buffer: 64MB}
  switch_overrides:
    leaf0: {buffer: {port_size: 4MB}}
    spine1: {forwarding: store_and_forward}
topology:
  kind: leaf_spine
  leaves: 2
  spines: 2
  hosts_per_leaf: [3, 1]
  host_link: {rate: 25G, delay: 1.2us}
  fabric_link: {rate: 100Gbps, delay: 500ns}
  links_per_spine: 2
traffic:
  - {kind: udp_cbr, src: h1, dst: h0, rate: 20%}
  - {kind: udp_poisson, name: bg, src: [h1, h2], dst: h3, rate: 2.5Gbps, frame_size: 9000B,
     start: 10us, stop: 1ms, max_frames: 100, class: 3}
  - {kind: burst, src: [h0], dst: h3, frames: 10, frame_size: 64B, start: 1.5us, class: 1}
stats: {queue_sample_interval: 0, sample_hosts: true}
"""


def errors_of(text, overrides=(), source="s.yaml"):
    with pytest.raises(ScenarioError) as info:
        loads(text, overrides, source=source)
    return str(info.value)


# --------------------------------------------------------------------------
# Defaults and the resolved document


# Linux-like TCP defaults, in the core's units.
TCP_DEFAULTS = {
    "profile": "linux",
    "cc": "cubic",
    "mtu_bytes": 1500,
    "header_bytes": 52,
    "l2_bytes": 18,
    "min_frame_bytes": 64,
    "init_cwnd_segments": 10,
    "rwnd_bytes": 6 * 2**20,
    "rcv_autotune": True,
    "rmem": [4096, 131_072, 6_291_456],
    "rcv_scaling_ratio": 128,
    "rcv_truesize_overhead": None,
    "rcvbuf_growth": "linux_6_18",
    "ack_pushed": True,
    "wmem": [4096, 16_384, 4_194_304],
    "sndbuf_bytes": None,
    "min_rto_ps": 200_000_000_000,
    "initial_rto_ps": 10**12,
    "max_rto_ps": 120 * 10**12,
    "clock_granularity_ps": 1_000_000_000,
    "delack_count": 2,
    "delack_timeout_ps": 40_000_000_000,
    "quickack_segments": 16,
    "ecn": False,
    "dctcp_g": 1 / 16,
    "htcp_rtt_scaling": True,
    "htcp_bandwidth_switch": True,
    "byte_counting": True,
    "dupack_threshold": 3,
    "pacing_bps": None,
    "pacing": "off",
    "pacing_ss_ratio_pct": 200,
    "pacing_ca_ratio_pct": 120,
    "gso_max_bytes": 65_536,
    "min_tso_segs": 2,
    "tso_rtt_log": 9,
    "tsq": True,
    "limit_output_bytes": 4 << 20,
    "sack": True,
    "dsack": True,
    "rack": True,
    "rack_rtt_in_ack_order": True,
    "tlp": True,
    "prr": True,
    "limited_transmit": True,
    "hystart": "classic",
    "cubic_flavor": "linux",
    "rto_formula": "linux",
    "ssthresh_from": "cwnd",
    "cwnd_validation": True,
    "loss_timer_slack_ps": 2_000_000_000,
    "sack_compression_segments": 44,
    "sack_compression_delay_ps": 1_000_000_000,
}


def test_minimal_scenario_resolves_with_every_default():
    assert loads(MINIMAL).to_resolved() == {
        "name": "scenario",
        "seed": 1,
        "duration_ps": 10_000_000_000,
        "drain": True,
        "drain_limit_ps": 1_000_000_000_000,
        "network": {
            "ethernet_overhead_bytes": 20,
            "classes": 8,
            "switch": {
                "forwarding": "store_and_forward",
                "latency_ps": 500_000,
                "buffer": {"model": "static", "port_bytes": 1_000_000, "queue_bytes": None, "queue_packets": None},
            },
            "host": {"latency_ps": 0, "nic_buffer_bytes": 1_000_000_000, "txqueuelen": 1000},
            "switch_overrides": {},
        },
        "topology": {"kind": "star", "hosts": 4, "link": {"rate_bps": 100_000_000_000, "delay_ps": 1_000_000, "loss": 0.0}},
        "traffic": [],
        "stats": {
            "queue_sample_interval_ps": 10_000_000,
            "sample_hosts": False,
            "throughput_interval_ps": 1_000_000_000,
            "cpu_interval_ps": 100_000_000,
        },
        "tcp": TCP_DEFAULTS,
    }


def test_full_scenario_resolves_exactly():
    resolved = loads(FULL).to_resolved()
    assert resolved["name"] == "full" and resolved["seed"] == 9
    assert "description" not in resolved
    assert resolved["drain"] is False and resolved["drain_limit_ps"] == 500_000_000_000
    network = resolved["network"]
    assert network["ethernet_overhead_bytes"] == 24 and network["classes"] == 4
    assert network["switch"] == {
        "forwarding": "cut_through",
        "cut_through_bytes": 64,
        "latency_ps": 300_000,
        "buffer": {"model": "static", "port_bytes": 32 * 2**20, "queue_bytes": 1_000_000, "queue_packets": None},
    }
    assert network["host"] == {"latency_ps": 100_000, "nic_buffer_bytes": 64_000_000, "txqueuelen": 1000}
    assert resolved["topology"] == {
        "kind": "leaf_spine",
        "leaves": 2,
        "spines": 2,
        "hosts_per_leaf": [3, 1],
        "host_link": {"rate_bps": 25_000_000_000, "delay_ps": 1_200_000, "loss": 0.0},
        "fabric_link": {"rate_bps": 100_000_000_000, "delay_ps": 500_000, "loss": 0.0},
        "links_per_spine": 2,
    }
    assert resolved["traffic"] == [
        {
            "kind": "udp_cbr",
            "name": "udp_cbr0",
            "src": ["h1"],
            "dst": "h0",
            "rate_bps": None,
            "load": 0.2,
            "frame_bytes": 1500,
            "start_ps": 0,
            "stop_ps": None,
            "max_frames": None,
            "class": 0,
        },
        {
            "kind": "udp_poisson",
            "name": "bg",
            "src": ["h1", "h2"],
            "dst": "h3",
            "rate_bps": 2_500_000_000,
            "load": None,
            "frame_bytes": 9000,
            "start_ps": 10_000_000,
            "stop_ps": 1_000_000_000,
            "max_frames": 100,
            "class": 3,
        },
        {
            "kind": "burst",
            "name": "burst2",
            "src": ["h0"],
            "dst": "h3",
            "frames": 10,
            "frame_bytes": 64,
            "start_ps": 1_500_000,
            "class": 1,
        },
    ]
    assert resolved["stats"] == {
        "queue_sample_interval_ps": 0,
        "sample_hosts": True,
        "throughput_interval_ps": 1_000_000_000,
        "cpu_interval_ps": 100_000_000,
    }
    json.dumps(resolved)  # plain JSON types only


def test_switch_overrides_are_merged_over_the_default_switch():
    overrides = loads(FULL).to_resolved()["network"]["switch_overrides"]
    assert overrides["leaf0"] == {
        "forwarding": "cut_through",
        "cut_through_bytes": 64,
        "latency_ps": 300_000,
        "buffer": {"model": "static", "port_bytes": 4_000_000, "queue_bytes": 1_000_000, "queue_packets": None},
    }
    assert overrides["spine1"]["forwarding"] == "store_and_forward"
    assert overrides["spine1"]["buffer"]["port_bytes"] == 32 * 2**20


@pytest.mark.parametrize(
    "topology, resolved",
    [
        (
            "{kind: dumbbell, left: 2, right: 3, edge_link: {rate: 10G, delay: 1us}, "
            "bottleneck_link: {rate: 1G, delay: 10us}}",
            {
                "kind": "dumbbell",
                "left": 2,
                "right": 3,
                "edge_link": {"rate_bps": 10**10, "delay_ps": 10**6, "loss": 0.0},
                "bottleneck_link": {"rate_bps": 10**9, "delay_ps": 10**7, "loss": 0.0},
            },
        ),
        (
            "{kind: fat_tree, k: 4, link: {rate: 10G, delay: 0}}",
            {"kind": "fat_tree", "k": 4, "link": {"rate_bps": 10**10, "delay_ps": 0, "loss": 0.0}},
        ),
        (
            "{kind: leaf_spine, leaves: 4, spines: 2, hosts_per_leaf: 8, host_link: {rate: 1G, delay: 1us}, "
            "fabric_link: {rate: 4G, delay: 1us}}",
            {
                "kind": "leaf_spine",
                "leaves": 4,
                "spines": 2,
                "hosts_per_leaf": 8,
                "host_link": {"rate_bps": 10**9, "delay_ps": 10**6, "loss": 0.0},
                "fabric_link": {"rate_bps": 4 * 10**9, "delay_ps": 10**6, "loss": 0.0},
                "links_per_spine": 1,
            },
        ),
        (
            "{kind: explicit, nodes: [{name: a, kind: host}, {name: s, kind: switch}], "
            "links: [{a: a, b: s, rate: 1G, delay: 5ns}]}",
            {
                "kind": "explicit",
                "nodes": [{"name": "a", "kind": "host"}, {"name": "s", "kind": "switch"}],
                "links": [{"a": "a", "b": "s", "rate_bps": 10**9, "delay_ps": 5000, "loss": 0.0}],
            },
        ),
    ],
)
def test_topologies_resolve(topology, resolved):
    assert loads(f"duration: 1ms\ntopology: {topology}\n").to_resolved()["topology"] == resolved


def test_traffic_names_default_to_kind_and_index():
    scenario = loads(
        MINIMAL + "traffic: [{kind: burst, src: h1, dst: h0, frames: 1}, {kind: udp_cbr, name: x, src: h1, dst: h0,"
        " rate: 1G}, {kind: udp_poisson, src: h2, dst: h0, rate: 1G}]"
    )
    assert [source.name for source in scenario.traffic] == ["burst0", "x", "udp_poisson2"]


def test_bare_numbers_and_yaml_numbers_are_accepted():
    scenario = from_dict(
        {
            "duration": "1ms",
            "topology": {"kind": "star", "hosts": 2, "link": {"rate": 10**10, "delay": 0}},
            "traffic": [{"kind": "udp_cbr", "src": "h0", "dst": "h1", "rate": "5000000000", "frame_size": 1000}],
        }
    )
    assert scenario.to_resolved()["traffic"][0]["rate_bps"] == 5 * 10**9
    assert scenario.to_resolved()["traffic"][0]["frame_bytes"] == 1000


def test_from_dict_does_not_modify_its_input():
    data = {"duration": "1ms", "topology": {"kind": "star", "hosts": 2, "link": {"rate": "1G", "delay": "1us"}}}
    before = json.dumps(data, sort_keys=True)
    Scenario.from_dict(data, ["seed=5", "network.classes=2"])
    assert json.dumps(data, sort_keys=True) == before


# --------------------------------------------------------------------------
# Files, sources and the written scenario


def test_load_names_the_scenario_after_the_file_and_records_the_source(tmp_path):
    path = tmp_path / "my-run.yaml"
    path.write_text(MINIMAL)
    scenario = load(path, ["seed=4"])
    assert scenario.name == "my-run"
    assert scenario.seed == 4
    assert scenario.source == str(path)
    assert scenario.source_text == MINIMAL
    assert scenario.source_data["seed"] == 4 and "name" not in scenario.source_data
    assert scenario.overrides == ("seed=4",)


def test_to_yaml_spells_out_defaults_and_round_trips():
    scenario = loads(FULL, ["traffic.0.rate=30%"])
    text = scenario.to_yaml()
    assert "# --set traffic.0.rate=30%" in text
    assert "port_size: 32MiB" in text and "delay: 1.2us" in text and "rate: 30%" in text
    assert "drain_limit: 500ms" in text
    again = loads(text)
    assert again.to_resolved() == scenario.to_resolved()
    assert again.to_yaml().split("\n", 1)[1] == text.split("\n", 2)[2]


@pytest.mark.parametrize("path", SHIPPED, ids=[path.stem for path in SHIPPED])
def test_shipped_scenarios_validate_and_round_trip(path):
    scenario = load(path)
    assert loads(scenario.to_yaml()).to_resolved() == scenario.to_resolved()


def test_with_seed():
    scenario = loads(MINIMAL)
    assert scenario.with_seed(2**64 - 1).seed == 2**64 - 1
    assert scenario.seed == 1
    with pytest.raises(ScenarioError, match="seed: must be an integer"):
        scenario.with_seed(-1)


# --------------------------------------------------------------------------
# Overrides


def test_overrides_set_scalars_lists_and_create_keys():
    scenario = loads(
        FULL,
        [
            "seed=42",
            "traffic.1.rate=5Gbps",
            "traffic[2].frames=7",
            "topology.hosts_per_leaf=[2, 2]",
            "network.switch_overrides.leaf1.latency=1us",
            "description=two words",
            "stats.queue_sample_interval=1us",
        ],
    )
    resolved = scenario.to_resolved()
    assert resolved["seed"] == 42
    assert resolved["traffic"][1]["rate_bps"] == 5 * 10**9
    assert resolved["traffic"][2]["frames"] == 7
    assert resolved["topology"]["hosts_per_leaf"] == [2, 2]
    assert resolved["network"]["switch_overrides"]["leaf1"]["latency_ps"] == 1_000_000
    assert scenario.description == "two words"
    assert resolved["stats"]["queue_sample_interval_ps"] == 1_000_000


def test_override_creates_missing_sections():
    scenario = loads(MINIMAL, ["network.switch.buffer.port_size=2MB"])
    assert scenario.to_resolved()["network"]["switch"]["buffer"]["port_bytes"] == 2_000_000


def test_overridden_values_are_validated():
    assert "traffic[0].rate: must not be negative" in errors_of(FULL, ["traffic.0.rate=-1G"])


@pytest.mark.parametrize(
    "override, message",
    [
        ("seed", "--set seed: expected KEY=VALUE, got 'seed'"),
        ("=3", "--set: expected KEY=VALUE"),
        ("topology.kind.x=1", "--set topology.kind.x: cannot set 'x' inside topology.kind, which is a string"),
        ("seed.x=1", "inside seed, which is a number"),
        ("traffic.3.rate=1G", "--set traffic.3.rate: traffic is a list of 3 entries; '3' is not an index in it"),
        ("traffic.first.rate=1G", "'first' is not an index"),
        ("traffic..rate=1G", "empty component"),
        ("seed=[1", "--set seed: invalid value '[1'"),
    ],
)
def test_bad_overrides(override, message):
    errors = errors_of(FULL, [override])
    assert message in errors
    assert errors.startswith("s.yaml: ")


# --------------------------------------------------------------------------
# Bad input: every message names the field and, where relevant, the choices


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            MINIMAL + "colour: blue\n",
            "s.yaml: colour: unknown key 'colour'; allowed: name, description, seed, duration, drain, drain_limit,"
            " network, topology, traffic, stats, tcp",
        ),
        (
            "duration: 1ms\ntopology: {kind: star, host: 4, link: {rate: 1G, delay: 1us}}",
            "topology.host: unknown key 'host'; allowed: kind, hosts, link (did you mean 'hosts'?)",
        ),
        (
            "duration: 1ms\ntopology: {kind: ring, hosts: 4}",
            "s.yaml: topology.kind: unknown value 'ring'; allowed: star, dumbbell, leaf_spine, fat_tree, rail, explicit",
        ),
        (
            "duration: 1ms\ntopology: {hosts: 4}",
            "topology.kind: required field is missing; allowed: star, dumbbell, leaf_spine, fat_tree, rail, explicit",
        ),
        (
            MINIMAL + "network: {switch: {buffer: {model: magic}}}",
            "network.switch.buffer.model: unknown value 'magic'; allowed: static",
        ),
        (
            MINIMAL + "network: {switch: {forwarding: wormhole}}",
            "network.switch.forwarding: unknown value 'wormhole'; allowed: store_and_forward, cut_through",
        ),
        (
            MINIMAL + "traffic: [{kind: tcp, src: h0, dst: h1}]",
            "traffic[0].kind: unknown value 'tcp'; allowed: udp_cbr, udp_poisson, burst",
        ),
        (
            MINIMAL + "traffic: [{kind: udp_cbr, src: h0, dst: h1, rate: -5Gbps}]",
            "s.yaml: traffic[0].rate: must not be negative (got '-5Gbps')",
        ),
        (MINIMAL + "traffic: [{kind: udp_cbr, src: h0, dst: h1, rate: 0G}]", "traffic[0].rate: must be > 0 (got '0G')"),
        (
            MINIMAL + "traffic: [{kind: udp_cbr, src: h0, dst: h1, rate: fast}]",
            "traffic[0].rate: expected a data rate like '10Gbps' or a load like '20%'",
        ),
        (
            MINIMAL + "traffic: [{kind: udp_cbr, src: h0, dst: h1, rate: 150%}]",
            "traffic[0].rate: a load must be > 0% and <= 100%",
        ),
        (
            "duration: 1ms\ntopology: {kind: star, hosts: -3, link: {rate: 1G, delay: 1us}}",
            "s.yaml: topology.hosts: must be >= 1 (got -3)",
        ),
        (
            "duration: 0\ntopology: {kind: star, hosts: 1, link: {rate: 1G, delay: 1us}}",
            "duration: must be > 0 (got 0)",
        ),
        (
            "duration: 0s\ntopology: {kind: star, hosts: 1, link: {rate: 1G, delay: 1us}}",
            "duration: must be > 0 (got '0s')",
        ),
        (
            "duration: 10\ntopology: {kind: star, hosts: 1, link: {rate: 1G, delay: 1us}}",
            "duration: expected a time like '10us': a unit is required",
        ),
        (
            "duration: 1ms\ntopology: {kind: star, hosts: 1, link: {rate: 1G, delay: -1us}}",
            "topology.link.delay: must not be negative",
        ),
        (
            "duration: 1ms\ntopology: {kind: star, hosts: 1, link: {rate: 1G}}",
            "topology.link.delay: required field is missing",
        ),
        (
            "topology: {kind: star, hosts: 1, link: {rate: 1G, delay: 1us}}",
            "s.yaml: duration: required field is missing",
        ),
        (
            "duration: 1ms\ntopology: {kind: star, hosts: four, link: {rate: 1G, delay: 1us}}",
            "topology.hosts: expected an integer, got 'four'",
        ),
        (
            "duration: 1ms\ntopology: {kind: fat_tree, k: 3, link: {rate: 1G, delay: 1us}}",
            "topology.k: must be even (got 3)",
        ),
        (
            "duration: 1ms\ntopology: {kind: leaf_spine, leaves: 3, spines: 1, hosts_per_leaf: [1, 2],"
            " host_link: {rate: 1G, delay: 0}, fabric_link: {rate: 1G, delay: 0}}",
            "topology.hosts_per_leaf: has 2 entries but there are 3 leaves",
        ),
        (
            "duration: 1ms\ntopology: {kind: leaf_spine, leaves: 1, spines: 1, hosts_per_leaf: x,"
            " host_link: {rate: 1G, delay: 0}, fabric_link: {rate: 1G, delay: 0}}",
            "topology.hosts_per_leaf: expected a host count or a list with one count per leaf, got 'x'",
        ),
        (
            "duration: 1ms\ntopology: {kind: explicit, nodes: [{name: a, kind: router}], links: []}",
            "topology.nodes[0].kind: unknown value 'router'; allowed: host, switch",
        ),
        (MINIMAL + "network: {classes: 9}", "network.classes: must be <= 8 (got 9)"),
        (
            MINIMAL + "network: {switch: {buffer: {port_size: 0B}}}",
            "network.switch.buffer.port_size: must be > 0 (got '0B')",
        ),
        (
            MINIMAL + "network: {switch: {buffer: {port_size: 1Mb}}}",
            "network.switch.buffer.port_size: expected a size like '1500B'",
        ),
        (
            MINIMAL + "traffic: [{kind: burst, src: h0, dst: h1, frames: 1, frame_size: 20B}]",
            "traffic[0].frame_size: must be >= 64B (got '20B')",
        ),
        (
            MINIMAL + "traffic: [{kind: burst, src: h0, dst: h1, frames: 1, frame_size: 64KiB}]",
            "traffic[0].frame_size: must be <= 65535B",
        ),
        (MINIMAL + "traffic: [{kind: burst, src: [], dst: h1, frames: 1}]", "traffic[0].src: must not be empty"),
        (MINIMAL + "traffic: [{kind: burst, src: h0, dst: h1}]", "traffic[0].frames: required field is missing"),
        (
            MINIMAL + "traffic: [{kind: udp_cbr, src: h0, dst: h1, rate: 1G, start: 2ms, stop: 1ms}]",
            "traffic[0].stop: must be later than start (2ms), got 1ms",
        ),
        (
            MINIMAL + "network: {classes: 2}\ntraffic: [{kind: burst, src: h0, dst: h1, frames: 1, class: 2}]",
            "traffic[0].class: must be < network.classes (2) (got 2)",
        ),
        (
            MINIMAL + "traffic: [{kind: burst, name: a, src: h0, dst: h1, frames: 1},"
            " {kind: burst, name: a, src: h2, dst: h1, frames: 1}]",
            "traffic[1].name: duplicate name 'a' (also traffic[0])",
        ),
        (MINIMAL + "seed: -1", "seed: must be >= 0 (got -1)"),
        (MINIMAL + "drain: maybe", "drain: expected true or false, got 'maybe'"),
        (MINIMAL + "name: 5", "name: expected a string, got 5"),
        (MINIMAL + "network: 5", "network: expected a mapping, got 5"),
        (MINIMAL + "traffic: {a: 1}", "traffic: expected a list, got a mapping"),
        ("- 1\n- 2\n", "s.yaml: expected a mapping of scenario settings, got a list"),
        ("", "s.yaml: the scenario is empty"),
        ("# only a comment\n", "s.yaml: the scenario is empty"),
        ("name: [unclosed\nduration: 1ms\n", "s.yaml: invalid YAML at line 2, column 9"),
        ("duration: 1ms\nduration: 2ms\n", "s.yaml: invalid YAML at line 2, column 1: duplicate key 'duration'"),
        ("duration: 1ms\n\ttopology: 1\n", "invalid YAML at line 2, column 1"),
    ],
)
def test_bad_input(text, expected):
    message = errors_of(text)
    assert expected in message
    for noise in ("pydantic", "errors.pydantic.dev", "Input should", "Traceback", "Value error"):
        assert noise not in message


def test_all_problems_are_reported_at_once():
    message = errors_of(
        "duration: 0\nseed: x\ntopology: {kind: star, hostz: 3, link: {rate: 1G, delay: 1us}}\ncolour: red\n"
    )
    lines = message.splitlines()
    assert lines == [
        "s.yaml: seed: expected an integer, got 'x'",
        "s.yaml: duration: must be > 0 (got 0)",
        "s.yaml: topology.hosts: required field is missing",
        "s.yaml: topology.hostz: unknown key 'hostz'; allowed: kind, hosts, link (did you mean 'hosts'?)",
        "s.yaml: colour: unknown key 'colour'; allowed: name, description, seed, duration, drain, drain_limit,"
        " network, topology, traffic, stats, tcp, load, load_basis, fct, roce, multicast, failures",
    ]


def test_scenario_error_carries_structured_issues():
    with pytest.raises(ScenarioError) as info:
        loads("duration: 1ms\ntopology: {kind: star, hosts: 0, link: {rate: 1G, delay: 1us}}", source="x.yaml")
    error = info.value
    assert error.source == "x.yaml"
    assert [(issue.path, issue.message) for issue in error.issues] == [("topology.hosts", "must be >= 1 (got 0)")]
    assert isinstance(error, fabricsim.FabricsimError)


def test_missing_file_names_the_path(tmp_path):
    missing = tmp_path / "nope.yaml"
    with pytest.raises(ScenarioError) as info:
        load(missing)
    assert str(info.value) == f"{missing}: file not found"


def test_directory_instead_of_file(tmp_path):
    with pytest.raises(ScenarioError, match="cannot read file"):
        load(tmp_path)


def test_broken_yaml_file_reports_line_and_column(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("duration: 1ms\ntopology: {kind: star\n")
    with pytest.raises(ScenarioError) as info:
        load(path)
    assert str(info.value).startswith(f"{path}: invalid YAML at line 3, column 1")


# --------------------------------------------------------------------------
# Shared buffer with dynamic thresholds

SHARED = MINIMAL + """network:
  classes: 2
  switch:
    buffer: {model: shared, size: 32MB, cell: 208B, per_packet_overhead: 64B, alpha: [0.125, 8],
             reserved_per_queue: 1.5KB, ingress_alpha: 0.5, pools: [20MB, 10MB], class_pool: [0, 1]}
"""


def test_shared_buffer_resolves_to_the_core_keys():
    buffer = loads(SHARED).to_resolved()["network"]["switch"]["buffer"]
    assert buffer == {
        "model": "shared",
        "total_bytes": 32_000_000,
        "cell_bytes": 208,
        "per_packet_overhead_bytes": 64,
        "alpha": [0.125, 8.0],
        "reserved_bytes_per_queue": 1500,
        "ingress_alpha": [0.5],
        "pools": [20_000_000, 10_000_000],
        "class_pool": [0, 1],
    }


def test_shared_buffer_defaults():
    buffer = loads(MINIMAL + "network: {switch: {buffer: {model: shared, size: 1MB}}}").to_resolved()
    assert buffer["network"]["switch"]["buffer"] == {
        "model": "shared",
        "total_bytes": 1_000_000,
        "cell_bytes": 256,
        "per_packet_overhead_bytes": 0,
        "alpha": [1.0],
        "reserved_bytes_per_queue": 0,
        "ingress_alpha": None,
        "pools": None,
        "class_pool": None,
    }


def test_shared_buffer_round_trips_and_shows_only_its_fields():
    scenario = loads(SHARED)
    text = scenario.to_yaml()
    assert "port_size" not in text and "alpha:\n      - 0.125\n      - 8\n" in text
    assert loads(text).to_resolved() == scenario.to_resolved()
    assert "alpha" not in loads(MINIMAL).to_yaml()


def test_buffer_override_may_switch_model():
    text = MINIMAL + """network:
  switch: {buffer: {model: static, port_size: 4MB}}
  switch_overrides:
    sw0: {buffer: {model: shared, size: 2MB, alpha: 2}}
"""
    network = loads(text).to_resolved()["network"]
    assert network["switch_overrides"]["sw0"]["buffer"]["total_bytes"] == 2_000_000
    assert network["switch_overrides"]["sw0"]["buffer"]["alpha"] == [2.0]
    assert network["switch"]["buffer"]["port_bytes"] == 4_000_000
    # An override without a model inherits it and may set just the alpha.
    text = MINIMAL + "network: {switch: {buffer: {model: shared, size: 2MB}}, switch_overrides: {sw0: {buffer: {alpha: 4}}}}"
    sw0 = loads(text).to_resolved()["network"]["switch_overrides"]["sw0"]["buffer"]
    assert (sw0["total_bytes"], sw0["alpha"]) == (2_000_000, [4.0])


def test_shared_buffer_alpha_set_from_the_command_line():
    scenario = loads(SHARED, ["network.switch.buffer.alpha=[1, 0.25]"])
    assert scenario.to_resolved()["network"]["switch"]["buffer"]["alpha"] == [1.0, 0.25]


@pytest.mark.parametrize(
    "buffer, expected",
    [
        ("{model: shared, size: 1MB, alpha: 3}",
         "network.switch.buffer.alpha: 3 is not an allowed alpha; allowed: 1/128, 1/64, 1/32, 1/16, 1/8, 1/4, 1/2,"
         " 1, 2, 4, 8"),
        ("{model: shared, size: 1MB, alpha: [1, 16]}", "network.switch.buffer.alpha: 16 is not an allowed alpha"),
        ("{model: shared, size: 1MB, alpha: []}", "network.switch.buffer.alpha: must not be empty"),
        ("{model: shared, size: 1MB, alpha: x}", "network.switch.buffer.alpha: 'x' is not an allowed alpha"),
        ("{model: shared, size: 1MB, ingress_alpha: 0.3}", "network.switch.buffer.ingress_alpha: 0.3 is not an allowed"),
        ("{model: shared}", "network.switch.buffer.size: required field is missing for model shared"),
        ("{model: shared, size: 1MB, port_size: 1MB}",
         "network.switch.buffer.port_size: only for model static (model is shared)"),
        ("{alpha: 2}", "network.switch.buffer.alpha: only for model shared or intelligent (model is static)"),
        ("{model: shared, size: 1MB, queue_packets: 100}",
         "network.switch.buffer.queue_packets: only for model static (model is shared)"),
        ("{queue_packets: 0}", "network.switch.buffer.queue_packets"),
        ("{model: shared, size: 1MB, cell: 0B}", "network.switch.buffer.cell: must be > 0"),
        ("{model: shared, size: 1MB, class_pool: [9]}", "network.switch.buffer.class_pool[0]: expected a pool index 0..7"),
        ("{model: shared, size: 1MB, pools: []}", "network.switch.buffer.pools: must not be empty"),
        ("{model: shared, size: 1MB, celll: 1B}", "unknown key 'celll'"),
        ("{model: dynamic}", "network.switch.buffer.model: unknown value 'dynamic'; allowed: static, shared"),
    ],
)
def test_bad_shared_buffer(buffer, expected):
    assert expected in errors_of(MINIMAL + f"network: {{switch: {{buffer: {buffer}}}}}")


def test_packet_capped_queues_resolve_per_switch_and_drop_with_their_own_reason(core):
    # A router-style hold queue of 10 packets on the switch; its bytes are not the limit.
    text = """
duration: 200us
network: {switch_overrides: {sw0: {buffer: {port_size: 100MB, queue_packets: 10}}}}
topology: {kind: star, hosts: 3, link: {rate: 100Gbps, delay: 1us}}
traffic:
  - {kind: burst, src: [h1, h2], dst: h0, frames: 100}
"""
    sc = loads(text)
    assert sc.to_resolved()["network"]["switch_overrides"]["sw0"]["buffer"]["queue_packets"] == 10
    result = fabricsim.run(sc)
    assert set(result.drops["reason"].to_list()) == {"queue_packet_limit"}
    assert result.summary["conservation_ok"] and result.summary["packets_dropped"] > 0


def test_core_checks_shared_buffer_against_the_device(core):
    # Per-class lists and pools are checked against the class count and the size by the core.
    text = MINIMAL + "network: {classes: 2, switch: {buffer: {model: shared, size: 10KB, alpha: [1, 2, 4]}}}"
    with pytest.raises(ScenarioError, match=r"network.switch.buffer.alpha: expected 1 or 2 values"):
        fabricsim.run(loads(text))
    text = MINIMAL + "network: {switch: {buffer: {model: shared, size: 10KB, pools: [8KB, 8KB]}}}"
    with pytest.raises(ScenarioError, match=r"network.switch.buffer.pools: pools need 62 cells"):
        fabricsim.run(loads(text))


TCP_SCENARIO = """
name: t
duration: 1ms
topology: {kind: star, hosts: 4, link: {rate: 10Gbps, delay: 1us, loss: 0.001}}
tcp: {cc: cubic, rwnd: 256KiB, delayed_ack: {count: 1}}
traffic:
  - {kind: tcp_bulk, src: [h1, h2], dst: h0, streams: 4, size: 1MB}
  - {kind: tcp_bulk, name: timed, src: h3, dst: h0, duration: 5ms, tcp: {cc: dctcp, delayed_ack: {timeout: 1ms}}}
  - {kind: tcp_incast, client: h0, servers: [h1, h2, h3], response_size: 64KB, rounds: 3, gap: 10us}
  - {kind: tcp_flows, flows: [{src: h1, dst: h2, size: 1500B, start: 1us}, {src: h2, dst: h1, size: 3KB}]}
"""


def test_tcp_traffic_resolves_with_merged_tcp_settings():
    resolved = loads(TCP_SCENARIO).to_resolved()
    assert resolved["tcp"]["cc"] == "cubic" and resolved["tcp"]["rwnd_bytes"] == 262144
    assert resolved["tcp"]["delack_count"] == 1
    assert resolved["topology"]["link"]["loss"] == 0.001
    bulk, timed, incast, flows = resolved["traffic"]
    assert bulk["bytes"] == 1_000_000 and bulk["streams"] == 4 and bulk["tcp"] is None
    assert timed["duration_ps"] == 5_000_000_000 and timed["bytes"] is None
    # An entry's tcp overrides only what it names; the rest is the scenario's tcp.
    assert timed["tcp"]["cc"] == "dctcp" and timed["tcp"]["rwnd_bytes"] == 262144
    assert timed["tcp"]["delack_count"] == 1 and timed["tcp"]["delack_timeout_ps"] == 1_000_000_000
    assert incast["response_bytes"] == 64_000 and incast["rounds"] == 3 and incast["gap_ps"] == 10_000_000
    assert flows["flows"][0] == {"src": "h1", "dst": "h2", "bytes": 1500, "start_ps": 1_000_000}


@pytest.mark.parametrize(
    "patch, needle",
    [
        ("tcp: {cc: vegas}", "newreno"),
        ("tcp: {mtu: 80B}", "tcp.mtu"),
        ("tcp: {init_cwnd: 0}", "tcp.init_cwnd"),
        ("tcp: {profile: bsd}", "tcp.profile: unknown value 'bsd'; allowed: linux, rfc"),
        ("tcp: {sack: false, rack: true}", "tcp.rack: needs sack: true"),
        ("tcp: {cc: newreno, hystart: classic}", "tcp.hystart: 'classic' is part of CUBIC"),
        ("tcp: {hystart: hystart}", "allowed: off, classic, hystart++"),
        ("tcp: {ssthresh_from: window}", "allowed: flight, pipe, cwnd"),
        ("tcp: {loss_timer_slack: 2}", "tcp.loss_timer_slack"),
    ],
)
def test_bad_tcp_settings_name_the_field(patch, needle):
    text = TCP_SCENARIO.replace("tcp: {cc: cubic, rwnd: 256KiB, delayed_ack: {count: 1}}", patch)
    with pytest.raises(ScenarioError) as info:
        loads(text)
    assert needle in str(info.value)


def test_tcp_profile_sets_the_defaults_and_explicit_fields_override_it():
    linux = loads(MINIMAL).to_resolved()["tcp"]
    assert linux["profile"] == "linux" and linux["sack"] and linux["rack"] and linux["cc"] == "cubic"
    rfc = loads(MINIMAL, overrides=["tcp.profile=rfc"]).to_resolved()["tcp"]
    assert rfc["cc"] == "newreno" and not (rfc["sack"] or rfc["rack"] or rfc["tlp"] or rfc["prr"])
    assert rfc["hystart"] == "off" and rfc["rto_formula"] == "rfc6298" and rfc["ssthresh_from"] == "flight"
    mixed = loads(MINIMAL, overrides=["tcp.profile=rfc", "tcp.sack=true", "tcp.cc=cubic"]).to_resolved()["tcp"]
    assert mixed["sack"] and not mixed["rack"] and mixed["cubic_flavor"] == "rfc9438"
    # Mechanisms that need SACK follow it; classic HyStart belongs to CUBIC.
    no_sack = loads(MINIMAL, overrides=["tcp.sack=false", "tcp.cc=newreno"]).to_resolved()["tcp"]
    assert not (no_sack["rack"] or no_sack["tlp"] or no_sack["prr"] or no_sack["dsack"]) and no_sack["hystart"] == "off"


def test_a_traffic_entry_may_run_another_tcp_profile():
    text = TCP_SCENARIO.replace("tcp: {cc: dctcp, delayed_ack: {timeout: 1ms}}", "tcp: {profile: rfc}")
    resolved = loads(text).to_resolved()
    assert resolved["tcp"]["profile"] == "linux" and resolved["tcp"]["sack"]
    timed = resolved["traffic"][1]["tcp"]
    # The scenario's explicit fields carry over; the rest come from the rfc profile.
    assert timed["profile"] == "rfc" and timed["cc"] == "cubic" and not timed["sack"]
    assert timed["rwnd_bytes"] == 262144 and timed["cubic_flavor"] == "rfc9438"


def test_bulk_needs_a_size_or_a_duration():
    text = TCP_SCENARIO.replace("streams: 4, size: 1MB", "streams: 4")
    with pytest.raises(ScenarioError, match=r"traffic\[0\].size"):
        loads(text)
