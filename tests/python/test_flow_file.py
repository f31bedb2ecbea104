"""tcp_flows from a Parquet or CSV file (fabricsim.workloads.flowfile)."""

from __future__ import annotations

import polars as pl
import pytest

import fabricsim
from fabricsim import ScenarioError

HEAD = """
duration: 200us
topology: {kind: star, hosts: 4, link: {rate: 10Gbps, delay: 1us}}
traffic:
"""
LISTED = HEAD + """  - {kind: tcp_flows, name: f, flows: [{src: h1, dst: h0, size: 20000B, start: 0},
      {src: h2, dst: h0, size: 30KB, start: 5us}, {src: h3, dst: h1, size: 1500B, start: 10us}]}
"""


def test_a_flow_file_gives_the_same_run_as_the_same_flows_listed_in_yaml(core, tmp_path):
    # CSV with units in the cells; Parquet with integers (bytes, picoseconds).
    (tmp_path / "flows.csv").write_text("src,dst,size,start\nh1,h0,20000,0\nh2,h0,30KB,5us\nh3,h1,1500B,10us\n")
    pl.DataFrame({"src": ["h1", "h2", "h3"], "dst": ["h0", "h0", "h1"], "size": [20_000, 30_000, 1500],
                  "start": [0, 5_000_000, 10_000_000]}).write_parquet(tmp_path / "flows.parquet")
    listed = fabricsim.run(fabricsim.loads(LISTED)).flows
    for name in ("flows.csv", "flows.parquet"):
        scenario = tmp_path / f"{name}.yaml"
        scenario.write_text(HEAD + f"  - {{kind: tcp_flows, name: f, flows_file: {name}}}\n")  # beside the scenario
        got = fabricsim.run(fabricsim.load(scenario)).flows
        assert got.equals(listed), name
        assert got["size_bytes"].to_list() == [20_000, 30_000, 1500]


@pytest.mark.parametrize("frame, path, message", [
    ({"src": ["h1"], "dst": ["h0"], "bytes": [10]}, "traffic[0].flows_file", "unknown column 'bytes'; allowed: src, dst, size, start"),
    ({"src": ["h1"], "size": [10]}, "traffic[0].flows_file", "missing column 'dst'"),
    ({"src": ["h1", "h2"], "dst": ["h0", "h0"], "size": ["1KB", "lots"]}, "traffic[0].flows[1].size", "(got 'lots')"),
    ({"src": ["h1"], "dst": ["h0"], "size": [0]}, "traffic[0].flows[0].size", "must be 1 B to 2^53 B"),
    ({"src": ["h1"], "dst": ["h0"], "size": [10], "start": ["5"]}, "traffic[0].flows[0].start", "unit"),
])
def test_a_bad_flow_file_is_refused_naming_the_row_and_column(tmp_path, frame, path, message):
    pl.DataFrame(frame).write_parquet(tmp_path / "f.parquet")
    scenario = tmp_path / "s.yaml"
    scenario.write_text(HEAD + "  - {kind: tcp_flows, flows_file: f.parquet}\n")
    with pytest.raises(ScenarioError) as err:
        fabricsim.check(fabricsim.load(scenario))
    assert err.value.issues[0].path == path, str(err.value)
    assert message in str(err.value)


def test_a_missing_file_and_both_kinds_of_list_are_refused(tmp_path):
    scenario = tmp_path / "s.yaml"
    scenario.write_text(HEAD + "  - {kind: tcp_flows, flows_file: nowhere.parquet}\n")
    with pytest.raises(ScenarioError, match=r"traffic\[0\]\.flows_file: .*nowhere\.parquet: file not found"):
        fabricsim.check(fabricsim.load(scenario))
    with pytest.raises(ScenarioError, match="give either a list of flows or a flows_file, not both"):
        fabricsim.loads(HEAD + "  - {kind: tcp_flows, flows_file: f.csv, flows: [{src: h1, dst: h0, size: 1KB}]}\n")
    with pytest.raises(ScenarioError, match="give a list of at least one flow, or a flows_file"):
        fabricsim.loads(HEAD + "  - {kind: tcp_flows, flows: []}\n")


def test_a_million_flows_from_a_file_resolve_without_yaml(tmp_path):
    """The fuzz campaign's 10^6 explicit flows: from YAML, 53 MB and 3.7 GiB to
    read; from Parquet, read and resolved directly (0.8 s here)."""
    n = 1_000_000
    pl.DataFrame({"src": ["h1"] * n, "dst": ["h0"] * n, "size": [1000] * n,
                  "start": list(range(0, n * 1000, 1000))}).write_parquet(tmp_path / "m.parquet")
    scenario = tmp_path / "s.yaml"
    scenario.write_text(HEAD + "  - {kind: tcp_flows, flows_file: m.parquet}\n")
    flows = fabricsim.load(scenario).to_resolved()["traffic"][0]["flows"]
    assert len(flows) == n and flows[-1] == {"src": "h1", "dst": "h0", "bytes": 1000, "start_ps": (n - 1) * 1000}
