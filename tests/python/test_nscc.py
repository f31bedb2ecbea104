"""NSCC from YAML (`roce.cc: nscc`): entropy spraying with the path
reaction keeps traffic off a degraded spine link where oblivious spraying
does not, both runs balance their books, the same seed gives the same
tables, and bad settings are named by field."""

import polars as pl
import pytest

import fabricsim
from fabricsim import ScenarioError
from fabricsim.schema import loads

DEGRADED = """
duration: 5ms
seed: 1
network:
  switch:
    ecn: {kmin: 20KB, kmax: 80KB, pmax: 1.0}
topology:
  kind: leaf_spine
  leaves: 2
  spines: 4
  hosts_per_leaf: 4
  host_link: {rate: 100Gbps, delay: 1us}
  fabric_link: {rate: 100Gbps, delay: 1us}
failures:
  - {between: [leaf0, spine0], at: 0us, rate: 25Gbps}
roce:
  cc: nscc
  recovery: selective_repeat
  dupthresh: 64
  cc_params: {entropies: 256, path_reaction: REACTION}
traffic:
  - {kind: rdma_write, src: [h0], dst: h4, message_size: 4MB}
  - {kind: rdma_write, src: [h1], dst: h5, message_size: 4MB}
  - {kind: rdma_write, src: [h2], dst: h6, message_size: 4MB}
  - {kind: rdma_write, src: [h3], dst: h7, message_size: 4MB}
"""


def slow_link_share(result) -> float:
    """The share of leaf0's uplink bytes that took the degraded link to spine0."""
    up = result.links.filter((pl.col("src") == "leaf0") & pl.col("dst").str.starts_with("spine"))
    return int(up.filter(pl.col("dst") == "spine0")["bytes"].sum()) / int(up["bytes"].sum())


def test_the_path_reaction_keeps_traffic_off_a_degraded_spine_link():
    runs = {r: fabricsim.run(loads(DEGRADED.replace("REACTION", r))) for r in ("true", "false")}
    for result in runs.values():
        s = result.summary
        assert s["conservation_ok"] and s["buffer_accounting_ok"] and s["drained"]
        assert s["rdma_qps_completed"] == 4
    reacting, oblivious = slow_link_share(runs["true"]), slow_link_share(runs["false"])
    # Without the reaction each entropy is as likely: about a quarter of the
    # bytes; with it, near the slow link's share of the capacity (25/325).
    assert oblivious > 0.2, oblivious
    assert reacting < 0.125, reacting
    assert runs["true"].flows["fct_ps"].max() < runs["false"].flows["fct_ps"].max()


def test_a_sprayed_run_gives_the_same_tables_twice():
    a = fabricsim.run(loads(DEGRADED.replace("REACTION", "true")))
    b = fabricsim.run(loads(DEGRADED.replace("REACTION", "true")))
    assert a.flows.equals(b.flows) and a.links.equals(b.links)


def test_bad_nscc_settings_name_the_field():
    def issue(text: str):
        with pytest.raises(ScenarioError) as err:
            loads(text)
        return err.value.issues[0]

    base = DEGRADED.replace("REACTION", "true")
    e = issue(base.replace("recovery: selective_repeat", "recovery: go_back_n"))
    assert e.path == "roce.recovery" and "selective_repeat" in e.message
    e = issue(base.replace("entropies: 256", "entropies: 0"))
    assert e.path == "roce.cc_params.entropies" and "1 to 65536" in e.message
    e = issue(base.replace("entropies: 256", "entropies: 256, target: 1"))
    assert e.path == "roce.cc_params.target"
    e = issue(base.replace("entropies: 256", "entropies: 256, gamma: 2"))
    assert e.path == "roce.cc_params.gamma"
    # With one entropy (the QP's own path) go-back-N is fine.
    loads(base.replace("recovery: selective_repeat", "recovery: go_back_n").replace("entropies: 256", "entropies: 1"))


def test_the_json_schema_names_nscc_and_checks_its_parameters():
    jsonschema = pytest.importorskip("jsonschema")
    from fabricsim.schema.jsonschema import scenario_json_schema

    schema = scenario_json_schema()
    assert {"dcqcn", "hpcc", "nscc"} <= set(schema["$defs"]["Roce"]["properties"]["cc"]["enum"])
    validator = jsonschema.Draft202012Validator(schema)
    scenario = {
        "duration": "1ms",
        "topology": {"kind": "star", "hosts": 2, "link": {"rate": "100Gbps", "delay": "1us"}},
        "roce": {"cc": "nscc", "recovery": "selective_repeat", "cc_params": {"entropies": 16}},
        "traffic": [{"kind": "rdma_write", "src": ["h1"], "dst": "h0", "message_size": "1MB"}],
    }
    assert not list(validator.iter_errors(scenario))
    for bad in ({"entropies": 0}, {"target": 1}, {"gamma": 2}):
        scenario["roce"]["cc_params"] = bad
        assert list(validator.iter_errors(scenario)), bad
    scenario["roce"] = {"cc": "nscc2"}
    assert list(validator.iter_errors(scenario))
