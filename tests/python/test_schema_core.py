"""The scenario schema (Python) and the core agree: every default, and every
bound (a value the schema accepts never gets a JSON-parser or range error from
the core); the JSON Schema export describes the same fields."""

import copy
import json
import math

import pytest
import yaml

import fabricsim
from fabricsim import ScenarioError, from_dict

# Every section with only its required fields, as a user writes it...
MINIMAL_YAML = """
duration: 100us
network:
  switch:
    buffer: {model: shared, size: 4MB}
    ecn: {threshold: 10KB}
    scheduler: drr
    pfc: {classes: [3]}
  switch_overrides:
    leaf0: {buffer: {model: intelligent, size: 8MB}, pfc: null}
    leaf1: {buffer: {model: static}, pfc: null}
    spine0: {buffer: {model: voq, size: 100MB, voq_limit: 1MB}, pfc: null}
topology: {kind: leaf_spine, leaves: 2, spines: 2, hosts_per_leaf: 2,
           host_link: {rate: 10Gbps, delay: 1us}, fabric_link: {rate: 40Gbps, delay: 1us}}
roce: {}
traffic:
  - {kind: udp_cbr, src: h0, dst: h2, rate: 1Gbps}
  - {kind: burst, src: h0, dst: h2, frames: 1}
  - {kind: tcp_bulk, src: h0, dst: h2, size: 1KB}
  - {kind: tcp_incast, client: h0, servers: h1, response_size: 1KB}
  - {kind: tcp_flows, flows: [{src: h0, dst: h1, size: 1KB}]}
  - {kind: rdma_write, src: h1, dst: h3, message_size: 1KB}
  - {kind: rdma_flows, flows: [{src: h1, dst: h3, size: 1KB}, {src: h3, dst: h1, size: 1KB, after: [0]}]}
"""

# ... and the same in the core's resolved form, again with required fields only.
_LINK10 = {"rate_bps": 10_000_000_000, "delay_ps": 1_000_000}
MINIMAL_CORE = {
    "duration_ps": 100_000_000,
    "network": {
        "switch": {
            "buffer": {"model": "shared", "total_bytes": 4_000_000},
            "ecn": {"kmin_bytes": 10_000, "kmax_bytes": 10_000},
            "scheduler": {"kind": "drr", "quantum_bytes": [1500]},  # required by the core
            "pfc": {"classes": [3]},
        },
        # The schema merges an override over the network-wide switch; the core
        # takes each override whole: ECN and the scheduler are repeated here.
        "switch_overrides": {
            name: {"buffer": buffer, "ecn": {"kmin_bytes": 10_000, "kmax_bytes": 10_000},
                   "scheduler": {"kind": "drr", "quantum_bytes": [1500]}}
            for name, buffer in [
                ("leaf0", {"model": "intelligent", "total_bytes": 8_000_000}),
                ("leaf1", {"model": "static", "port_bytes": 1_000_000}),
                ("spine0", {"model": "voq", "total_bytes": 100_000_000, "voq_limit_bytes": 1_000_000}),
            ]
        },
    },
    "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2,
                 "host_link": _LINK10, "fabric_link": {"rate_bps": 40_000_000_000, "delay_ps": 1_000_000}},
    "traffic": [
        {"kind": "udp_cbr", "src": ["h0"], "dst": "h2", "rate_bps": 1_000_000_000},
        {"kind": "burst", "src": ["h0"], "dst": "h2", "frames": 1},
        {"kind": "tcp_bulk", "src": ["h0"], "dst": "h2", "bytes": 1000},
        {"kind": "tcp_incast", "client": "h0", "servers": ["h1"], "response_bytes": 1000},
        {"kind": "tcp_flows", "flows": [{"src": "h0", "dst": "h1", "bytes": 1000}]},
        {"kind": "rdma_write", "src": ["h1"], "dst": "h3", "message_bytes": 1000},
        {"kind": "rdma_flows", "flows": [{"src": "h1", "dst": "h3", "bytes": 1000},
                                         {"src": "h3", "dst": "h1", "bytes": 1000, "after": [0]}]},
    ],
}

# Defaults that are the schema's alone, with the reason.
PYTHON_ONLY = {
    "name": "the schema names a scenario after its file ('scenario' without one); the core keeps any name",
    "seed": "the schema's default seed is 1; the core is always given one",
    "traffic[*].name": "the schema names unnamed entries '<kind><index>'; the core is always given the name",
}


def _diff(a, b, path=""):
    """Paths where the two resolved documents differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for key in sorted(set(a) | set(b)):
            out += _diff(a.get(key, "<missing>"), b.get(key, "<missing>"), f"{path}.{key}" if path else key)
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += _diff(x, y, f"{path}[{i}]")
        return out
    return [] if a == b else [(path, a, b)]


def _generic(path):
    import re

    return re.sub(r"\[\d+\]", "[*]", path)


def test_every_schema_default_is_the_cores(core):
    """Resolve the minimal scenario in Python, let the core fill what is left,
    and compare with the core filling the same minimal scenario by itself: any
    difference is a default written differently in the two places."""
    python = json.loads(core.fill_defaults(json.dumps(fabricsim.loads(MINIMAL_YAML).to_resolved())))
    own = json.loads(core.fill_defaults(json.dumps(MINIMAL_CORE)))
    differences = [(p, a, b) for p, a, b in _diff(python, own) if _generic(p) not in PYTHON_ONLY]
    assert differences == []
    # The comparison covers every section: each model, kind and transport.
    text = json.dumps(own)
    for needle in ('"model": "intelligent"', '"model": "voq"', '"model": "static"', '"kind": "drr"',
                   '"kind": "rdma_write"', '"kind": "rdma_flows"', '"dcqcn"', '"pacing_bps"', '"links_per_spine"', '"loss"'):
        assert needle in text, needle


def test_defaults_of_per_entry_transport_sections_are_the_cores(core):
    """A traffic entry's ``tcp`` and ``roce`` sections, given with nothing in
    them, resolve to the core's defaults too."""
    doc = yaml.safe_load(MINIMAL_YAML)
    doc["traffic"][2]["tcp"] = {}
    doc["traffic"][5]["roce"] = {}
    python = json.loads(core.fill_defaults(json.dumps(from_dict(doc).to_resolved())))
    own = json.loads(core.fill_defaults(json.dumps(MINIMAL_CORE)))
    assert python["traffic"][2]["tcp"] == own["tcp"]
    assert python["traffic"][5]["roce"] == own["roce"]


# --------------------------------------------------------------------------
# Bounds: probe every number of a scenario that uses every section.

FULL_YAML = """
name: full
seed: 3
duration: 100us
drain_limit: 1ms
load: 50%
network:
  ethernet_overhead: 20B
  classes: 8
  switch:
    forwarding: cut_through
    latency: 500ns
    buffer: {model: shared, size: 4MB, cell: 256B, per_packet_overhead: 0B, alpha: 1, reserved_per_queue: 0B,
             ingress_alpha: 1, pools: [2MB, 1MB], class_pool: [0, 0, 0, 1, 0, 0, 0, 0]}
    ecn: {kmin: 10KB, kmax: 100KB, pmax: 0.5, classes: [0, 3]}
    scheduler: drr
    drr_quantum: 1500B
    drr_weights: [1, 2, 1, 4, 1, 1, 1, 1]
    pfc: {classes: [3], xoff_alpha: 0.125, resume_offset: 3KB, mtu: 9216B, quanta: 65535, refresh: 10us}
  host: {latency: 100ns, nic_buffer: 100MB}
  switch_overrides:
    leaf0:
      pfc: null
      buffer: {model: intelligent, size: 8MB, afd_a: 1.8, afd_b: 1.7, dpp_packets: 120, dpp_class: 7,
               queue_desired: 150KB, elephant_bytes: 1MB, etrap_age: 50us, afd_period: 25us, dpp_age: 5ms,
               afd_queue_unit: 16B, port_max: 2MB}
    spine0: {pfc: null, buffer: {model: voq, size: 100MB, voq_limit: 5ms}}
    leaf1: {pfc: null, buffer: {model: static, port_size: 1MB, queue_size: 500KB}}
    spine1: {pfc: null, buffer: {model: shared, size: 4MB, slices: 2, port_slice: [0, 1, 0, 1]}}
topology:
  kind: leaf_spine
  leaves: 2
  spines: 2
  hosts_per_leaf: [3, 2]
  links_per_spine: 2
  host_link: {rate: 10Gbps, delay: 1us, loss: 0.001}
  fabric_link: {rate: 40Gbps, delay: 1us}
tcp:
  {cc: dctcp, mtu: 1500B, header: 52B, l2_header: 18B, min_frame: 64B, init_cwnd: 10, rwnd: 1MB, min_rto: 1ms,
   initial_rto: 10ms, max_rto: 1s, clock_granularity: 1us, delayed_ack: {count: 2, timeout: 1ms, quickack: 16},
   ecn: true, dctcp_g: 0.0625, byte_counting: true, dupack_threshold: 3, pacing_rate: 10Gbps}
roce:
  mtu: 1024B
  header: 62B
  ack_every: 1
  ack_class: 6
  cnp_class: 7
  rto: 1ms
  dcqcn: {g: 0.00390625, initial_alpha: 1, alpha_interval: 55us, rate_decrease_interval: 50us,
          rate_increase_timer: 55us, byte_counter: 10MB, fast_recovery_stages: 5, rate_ai: 5Mbps,
          rate_hai: 50Mbps, min_rate: 100Mbps, cnp_interval: 50us}
traffic:
  - {kind: udp_cbr, name: cbr, src: [h0], dst: h3, rate: 1Gbps, frame_size: 1500B, start: 0s, stop: 50us,
     max_frames: 100, class: 1, ecn: true}
  - {kind: udp_poisson, name: poi, src: h1, dst: h4, rate: 10%, frame_size: 64B}
  - {kind: burst, name: b, src: [h2], dst: h3, frames: 10, frame_size: 9000B, class: 2}
  - {kind: tcp_bulk, name: bulk, src: [h0], dst: h4, streams: 2, size: 50KB, start: 1us, tcp: {cc: cubic}}
  - {kind: tcp_bulk, name: timed, src: h1, dst: h3, duration: 20us}
  - {kind: tcp_incast, name: inc, client: h3, servers: [h0, h1], response_size: 10KB, flows_per_server: 2,
     rounds: 2, gap: 1us}
  - {kind: tcp_flows, name: fl, flows: [{src: h0, dst: h3, size: 5KB, start: 2us}]}
  - {kind: workload, name: wl, cdf: websearch_dctcp, load: 20%, load_scale: 1, pattern: all_to_all,
     hosts: [h0, h1, h3], start: 0s, stop: 50us, max_flows: 1000}
  - {kind: rdma_write, name: rd, src: [h2], dst: h4, qps: 2, messages: 2, message_size: 8KB, window: 2}
fct: {warmup: 0s, cooldown: 0s, buckets: [10KB, 100KB]}
stats: {queue_sample_interval: 1us, sample_hosts: true, throughput_interval: 10us,
        pcap: [{node: leaf0, port: 1, direction: tx, snaplen: 128B, max_packets: 1000}]}
"""

NUMBERS = [0, 1, -1, 0.5, 255, 256, 65_535, 65_536, 2**31, 2**32, 2**53 + 1, 2**63, 2**64 - 1, 2**64, 10**30,
           1e300, math.inf, -math.inf, math.nan]
UNIT = {"ps": None, "ns": None, "us": None, "ms": None, "s": None, "B": None, "KB": None, "MB": None,
        "Gbps": None, "Mbps": None, "%": None}
QUANTITIES = ["0{u}", "1{u}", "18446744073709551615{u}", "18446744073709551616{u}", "1e30{u}", "0.0001{u}"]


def _leaves(node, path=()):
    """Paths of every number, and of every string with a unit, in a document."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _leaves(value, (*path, i))
    elif isinstance(node, bool):
        return
    elif isinstance(node, (int, float)):
        yield path, None
    elif isinstance(node, str):
        for unit in sorted(UNIT, key=len, reverse=True):
            if node.endswith(unit) and node[: -len(unit)].replace(".", "", 1).isdigit():
                yield path, unit
                break


def _dotted(path):
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


def _set(doc, path, value):
    node = doc
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value


def _cases():
    doc = yaml.safe_load(FULL_YAML)
    for path, unit in _leaves(doc):
        probes = NUMBERS if unit is None else [q.format(u=unit) for q in QUANTITIES] + [2**64, -1]
        yield pytest.param(path, probes, id=_dotted(path))


def test_the_full_scenario_is_valid(core):
    fabricsim.check(fabricsim.loads(FULL_YAML))


@pytest.mark.parametrize("path, probes", list(_cases()))
def test_a_value_the_schema_accepts_the_core_accepts_or_rejects_by_field(core, path, probes):
    """For every number of the full scenario and values around every integer
    type's range, infinities and NaN: the schema rejects the value at its
    field, or the core builds the world or rejects it naming a field, never
    with a parser error about its JSON types."""
    base = yaml.safe_load(FULL_YAML)
    where = _dotted(path)
    for value in probes:
        doc = copy.deepcopy(base)
        _set(doc, path, value)
        try:
            scenario = from_dict(doc)
        except ScenarioError as exc:
            # At this field, or at one it must agree with (start and stop, classes and a class).
            assert all(issue.path for issue in exc.issues), (where, value, str(exc))
            continue
        try:
            fabricsim.check(scenario)
        except ScenarioError as exc:
            for issue in exc.issues:
                assert issue.path and "invalid scenario" not in issue.message, (where, value, str(exc))


# --------------------------------------------------------------------------
# JSON Schema export


def test_the_json_schema_is_valid_and_accepts_every_shipped_scenario(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    from pathlib import Path

    from fabricsim.cli.main import main

    out = tmp_path / "scenario.schema.json"
    assert main(["schema", "--out", str(out)]) == 0
    schema = json.loads(out.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    root = Path(__file__).resolve().parents[2]
    scenarios = sorted((root / "scenarios").glob("*.yaml"))
    # the reproductions' scenario files too (a bare "0" time, ``jitter: true``)
    scenarios += [p for p in sorted((root / "python" / "fabricsim" / "reproductions" / "data").glob("*/*.yaml"))
                  if p.name not in ("sweep.yaml", "claims.yaml")]
    assert scenarios
    for path in scenarios:
        errors = [e.message for e in validator.iter_errors(yaml.safe_load(path.read_text()))]
        assert errors == [], path.name
    assert not validator.is_valid(yaml.safe_load(FULL_YAML.replace("kind: leaf_spine", "kind: ring")))
    assert not validator.is_valid({**yaml.safe_load(FULL_YAML), "colour": "blue"})
    assert not validator.is_valid({**yaml.safe_load(FULL_YAML), "duration": "10 parsecs"})
    assert validator.is_valid(yaml.safe_load(FULL_YAML))
    # What the loader refuses, the schema refuses: a load above 100 %.
    datamining = yaml.safe_load((root / "scenarios" / "leafspine-datamining.yaml").read_text())
    assert not validator.is_valid({**datamining, "load": "200%"})
    assert validator.is_valid({**datamining, "load": "100%"})
    # Defaults as they are written in a scenario, and the docstrings as descriptions.
    switch = schema["$defs"]["Switch"]["properties"]
    assert switch["latency"]["default"] == "500ns"
    assert schema["$defs"]["Tcp"]["properties"]["limit_output_bytes"]["default"] == "4MiB"
    assert schema["$defs"]["Tcp"]["properties"]["rmem"]["anyOf"][1]["type"] == "array"
    assert "Linux" in schema["$defs"]["Tcp"]["description"]


def test_the_json_schema_goes_to_stdout(capsys):
    from fabricsim.cli.main import main

    assert main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out)["title"] == "fabricsim scenario"
