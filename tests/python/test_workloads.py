"""Workloads: CDF tables and sampling, the workload traffic kind, FCT metrics."""

from pathlib import Path

import numpy as np
import pytest

import fabricsim
from fabricsim.workloads import flowgen
from fabricsim.errors import ScenarioError
from fabricsim.outputs.fct import flow_table
from fabricsim.schema import loads
from fabricsim.workloads import CdfError, builtin_names, load_cdf, parse_cdf

ROOT = Path(__file__).resolve().parents[2]
SHARED_MEANS = {  # README of the source tables: (linear, step)
    "websearch_dctcp": (1_711_250, 2_434_900),
    "datamining_vl2_pfabric": (7_470_236, 13_821_966),
    "enterprise_imc10": (195_357, 269_334),
    "fb_hadoop_homa": (121_849, 127_797),
    "google_all_rpc": (2_890, 2_927),
}


def test_builtin_tables_are_packaged():
    names = builtin_names()
    assert len(names) == 15 and "datamining_vl2_pfabric" in names
    data = Path(fabricsim.__file__).parent / "workloads" / "data"
    assert (data / "README.md").is_file()


@pytest.mark.parametrize("name", sorted(SHARED_MEANS))
def test_means_match_the_published_table(name):
    cdf = load_cdf(name)
    linear, step = SHARED_MEANS[name]
    assert cdf.mean("linear") == pytest.approx(linear, abs=1)
    assert cdf.mean("step") == pytest.approx(step, abs=1)


def test_bucket_shares_of_datamining():
    flows, volume = load_cdf("datamining_vl2_pfabric").bucket_shares()
    assert [round(100 * f, 1) for f in flows] == [82.4, 8.8, 4.2, 4.7]
    assert round(100 * volume[-1], 1) == 98.3


@pytest.mark.parametrize("name", [n for n in builtin_names()])
def test_linear_sampling_mean_within_2_percent(name):
    cdf = load_cdf(name)
    # At least 100k samples, more where the tail is heavy enough that the
    # standard error of a 100k-sample mean exceeds 0.5% (4 sigma < 2%).
    second = sum(m * (a * a + a * b + b * b) / 3 for a, b, m in cdf._pieces("linear"))
    mean = cdf.mean("linear")
    cv = (second - mean * mean) ** 0.5 / mean
    n = max(100_000, int((cv / 0.005) ** 2))
    sizes = cdf.sample(np.random.default_rng(2024), min(n, 20_000_000))
    assert sizes.min() >= 1
    assert sizes.mean() == pytest.approx(mean, rel=0.02)


def test_step_sampling_returns_listed_sizes_only():
    cdf = load_cdf("enterprise_imc10")
    sizes = cdf.sample(np.random.default_rng(1), 200_000, "step")
    assert set(np.unique(sizes)) <= set(cdf.sizes.astype(int))
    assert sizes.mean() == pytest.approx(cdf.mean("step"), rel=0.02)
    assert np.mean(sizes == 1460) == pytest.approx(0.5, abs=0.01)


def test_user_file_and_errors(tmp_path):
    path = tmp_path / "mine.cdf"
    path.write_text("1000 0.5\n3000 1\n")
    cdf = load_cdf(str(path))
    assert cdf.mean("linear") == pytest.approx(0.5 * 1000 + 0.5 * 2000)
    with pytest.raises(CdfError):
        parse_cdf("1000 0.5\n500 1\n")
    with pytest.raises(CdfError):
        parse_cdf("1000 0.5\n")
    with pytest.raises(CdfError):
        load_cdf("no_such_table")


SCENARIO = """
seed: 7
duration: {duration}
load: {load}
load_basis: {basis}
topology: {{kind: leaf_spine, leaves: 2, spines: 2, hosts_per_leaf: [24, 1], links_per_spine: 2,
  host_link: {{rate: 10Gbps, delay: 1us}}, fabric_link: {{rate: 40Gbps, delay: 1us}}}}
traffic:
  - {{kind: workload, cdf: {cdf}, pattern: many_to_one, requester: h24}}
  - {{kind: workload, cdf: {cdf}, pattern: {pattern}, hosts: [h0, h1, h2, h3, h4, h5], load_scale: 0.5}}
"""


def _scenario(duration="20ms", load="60%", cdf="enterprise_imc10", pattern="all_to_all", basis="wire"):
    return loads(SCENARIO.format(duration=duration, load=load, cdf=cdf, pattern=pattern, basis=basis))


def test_offered_load_matches_target_within_2_percent():
    # load_basis: payload counts application bytes
    sc = _scenario(duration="30s", basis="payload")
    flows = flowgen.generate(sc, 0)
    assert len(flows) > 100_000
    offered = sum(f["bytes"] for f in flows) * 8 / 30.0
    assert offered == pytest.approx(0.6 * 10e9, rel=0.02)
    assert {f["dst"] for f in flows} == {"h24"}
    assert len({f["src"] for f in flows}) == 24
    # all_to_all: every one of the 6 hosts offers 30% of its 10G link
    east = flowgen.generate(sc, 1)
    assert sum(f["bytes"] for f in east) * 8 / 30.0 == pytest.approx(6 * 0.3 * 10e9, rel=0.02)
    assert all(f["src"] != f["dst"] for f in east)
    starts = [f["start_ps"] for f in flows]
    assert starts == sorted(starts) and starts[-1] < 30 * 10**12


def _wire_rate(sc, flows, seconds):
    sizes = np.array([f["bytes"] for f in flows])
    return flowgen.flow_wire_bytes(sizes, sc.tcp, sc.network.ethernet_overhead).sum() * 8 / seconds


def test_wire_basis_offers_the_load_on_the_wire():
    # load_basis: wire (the default) counts SYN and data frames with headers,
    # preamble and gap: 95% offers 95% of the link, not the ~101% of a payload basis.
    wire = _scenario(duration="30s", load="95%")
    flows = flowgen.generate(wire, 0)
    assert _wire_rate(wire, flows, 30.0) == pytest.approx(0.95 * 10e9, rel=0.02)
    payload = _scenario(duration="30s", load="95%", basis="payload")
    flows = flowgen.generate(payload, 0)
    assert _wire_rate(payload, flows, 30.0) > 1.0 * 10e9
    assert sum(f["bytes"] for f in flows) * 8 / 30.0 == pytest.approx(0.95 * 10e9, rel=0.02)


@pytest.mark.parametrize("name", ["enterprise_imc10", "websearch_dctcp", "google_all_rpc"])
@pytest.mark.parametrize("method", ["linear", "step"])
def test_mean_segments_per_flow_is_exact(name, method):
    # Against a fine quadrature of the inverse CDF (4 M midpoints).
    cdf = load_cdf(name)
    sizes = cdf.sizes_at((np.arange(4_000_000) + 0.5) / 4_000_000, method)
    quadrature = np.maximum(np.ceil(sizes / 1448), 1).mean()
    assert cdf.mean_segments(1448, method) == pytest.approx(quadrature, rel=1e-3)


def test_summary_compares_offered_and_carried_load():
    result = fabricsim.run(_scenario(duration="20ms", load="50%"))
    load = result.summary["load"]
    assert set(load) == {"workload0", "workload1"}
    requester = load["workload0"]
    assert requester["link"] == "leaf1 -> h24" and requester["load_basis"] == "wire"
    assert requester["load"] == 0.5
    assert 0 < requester["offered_payload"] < requester["offered_wire"]
    assert 0 < requester["carried"] <= 1.0
    assert load["workload1"]["link"].startswith("h0 -> leaf0, h1 -> leaf0")


def test_expansion_is_deterministic_and_seeded():
    a, b = _scenario().to_resolved(), _scenario().to_resolved()
    assert a == b
    assert a["traffic"][0]["kind"] == "tcp_flows"
    c = _scenario().with_seed(8).to_resolved()
    assert c["traffic"][0]["flows"] != a["traffic"][0]["flows"]


def test_permutation_pattern_is_a_derangement():
    flows = flowgen.generate(_scenario(duration="1s", pattern="permutation"), 1)
    pairs = {(f["src"], f["dst"]) for f in flows}
    assert len({s for s, _ in pairs}) == 6 and all(s != d for s, d in pairs)
    assert len({s for s, _ in pairs}) == len(pairs)  # one destination per source


def test_workload_validation_errors():
    with pytest.raises(ScenarioError, match="requester"):
        loads("duration: 1ms\nload: 10%\ntopology: {kind: star, hosts: 3, link: {rate: 10Gbps, delay: 1us}}\n"
              "traffic: [{kind: workload, cdf: enterprise_imc10, pattern: many_to_one}]")
    sc = loads("duration: 1ms\ntopology: {kind: star, hosts: 3, link: {rate: 10Gbps, delay: 1us}}\n"
               "traffic: [{kind: workload, cdf: enterprise_imc10}]")
    with pytest.raises(ScenarioError, match=r"traffic\[0\]\.load"):
        sc.to_resolved()
    sc = loads("duration: 1ms\nload: 10%\ntopology: {kind: star, hosts: 3, link: {rate: 10Gbps, delay: 1us}}\n"
               "traffic: [{kind: workload, cdf: enterprise_imc10, hosts: [h0, h9]}]")
    with pytest.raises(ScenarioError, match=r"traffic\[0\]\.hosts\[1\]: unknown host 'h9'"):
        sc.to_resolved()


def test_ideal_fct_is_exact_for_a_lone_short_flow():
    sc = loads("""
duration: 10ms
topology: {kind: leaf_spine, leaves: 2, spines: 2, hosts_per_leaf: [2, 1],
  host_link: {rate: 10Gbps, delay: 1us}, fabric_link: {rate: 40Gbps, delay: 1us}}
traffic:
  - kind: tcp_flows
    flows:
      - {src: h0, dst: h2, size: 1000B}
      - {src: h1, dst: h2, size: 14480B, start: 1ms}
      - {src: h0, dst: h1, size: 1448B, start: 2ms}
""")
    table = flow_table(fabricsim.run(sc))
    assert table.height == 3
    for fct, ideal in zip(table["fct_ps"].to_list(), table["ideal_fct_ps"].to_list()):
        assert fct == pytest.approx(ideal, rel=1e-6)


def test_run_writes_fct_table(tmp_path):
    sc = _scenario(duration="5ms")
    result = fabricsim.run(sc)
    assert result.summary["conservation_ok"]
    fct = result.fct
    buckets = ["<=100KB", "100KB-1MB", "1MB-10MB", ">10MB", "all"]
    assert fct.filter(fct["traffic"] == "all")["bucket"].to_list() == buckets
    assert fct.filter(fct["bucket"] == "all")["count"][0] > 0
    written = result.write(tmp_path / "out")
    assert (tmp_path / "out" / "fct.parquet") in written
    assert "Flow completion time by flow size" in (tmp_path / "out" / "report.html").read_text()


def test_fct_is_given_per_traffic_entry_and_overall():
    result = fabricsim.run(_scenario(duration="10ms"))
    fct = result.fct
    assert fct["traffic"].unique(maintain_order=True).to_list() == ["all", "workload0", "workload1"]
    counts = {t: fct.filter((fct["traffic"] == t) & (fct["bucket"] == "all"))["count"][0]
              for t in ("all", "workload0", "workload1")}
    assert counts["workload0"] > 0 and counts["workload1"] > 0
    assert counts["all"] == counts["workload0"] + counts["workload1"]
    # Each entry's own statistics, not the pool's: per-entry means bracket the overall one.
    means = {t: fct.filter((fct["traffic"] == t) & (fct["bucket"] == "all"))["mean_fct_ps"][0] for t in counts}
    assert min(means["workload0"], means["workload1"]) <= means["all"] <= max(means["workload0"], means["workload1"])


def test_warmup_and_cooldown_exclude_flows():
    sc = _scenario(duration="5ms")
    result = fabricsim.run(sc)
    everything = flow_table(result, warmup=0, cooldown=0)
    window = flow_table(result, warmup=1_000_000_000, cooldown=1_000_000_000)
    starts = window.filter(window["counted"])["start_ps"]
    assert starts.min() >= 1_000_000_000 and starts.max() <= 4_000_000_000
    assert window["counted"].sum() < everything["counted"].sum() == everything.height


def test_bench_scenario_has_enough_flows():
    from fabricsim.bench.workload import datamining_bench_scenario

    resolved = datamining_bench_scenario(min_flows=2_000)
    assert sum(len(e["flows"]) for e in resolved["traffic"]) >= 2_000


def test_shipped_workload_scenarios_match_their_headers_and_docs():
    import yaml

    from fabricsim import units

    docs = (ROOT / "docs" / "models" / "workloads.md").read_text()
    for name, cdf, window in (("leafspine-datamining", "datamining_vl2_pfabric", "1 s"),
                              ("leafspine-enterprise", "enterprise_imc10", "100 ms")):
        path = ROOT / "scenarios" / f"{name}.yaml"
        text = path.read_text()
        header = "".join(line for line in text.splitlines(True) if line.startswith("#"))
        raw = yaml.safe_load(text)
        # The basis of `load` is explicit in the file, and the header describes this file's workload.
        assert raw["load_basis"] == "wire" and "load_basis: wire" in header
        assert f"Workload: {cdf}" in header
        assert all(entry["cdf"] == cdf for entry in raw["traffic"])
        # The arrivals window the docs give is the scenario's duration.
        sc = fabricsim.load(path)
        assert sc.duration == units.parse_time(window.replace(" ", ""))
        assert f"{window} for {'data mining' if 'datamining' in name else 'enterprise'}" in docs
    assert "datamining_vl2" not in (ROOT / "scenarios" / "leafspine-enterprise.yaml").read_text().split("name:")[0]


def test_carried_load_sums_the_bins_of_the_chosen_links_in_row_order():
    """``carried`` from the ``carried_links`` bins: only whole bins inside the
    window, only the chosen links (a link listed twice takes its last rate, as
    a mapping of the links would), each bin's bits summed in row order, so the
    value has the bits of a plain loop over the rows."""
    from types import SimpleNamespace

    import polars as pl

    from fabricsim.outputs.load import _carried

    rng = np.random.default_rng(7)
    n = 5000
    carried = pl.DataFrame({
        "time_ps": (rng.integers(0, 100, n) * 1_000).astype("uint64"),
        "src": rng.choice(["a", "b", "c"], n),
        "dst": rng.choice(["x", "y"], n),
        "busy_ps": rng.integers(0, 1_000, n).astype("uint64"),
    })
    result = SimpleNamespace(
        scenario=SimpleNamespace(stats=SimpleNamespace(throughput_interval=1_000)),
        tables=lambda: {"carried_links": carried},
    )
    links = pl.DataFrame({"src": ["a", "b", "a"], "dst": ["x", "y", "x"], "rate_bps": [10**9, 25 * 10**9, 4 * 10**10]})
    rate = {(s, d): r for s, d, r in links.iter_rows()}
    bits = 0.0
    for t, s, d, busy in carried.iter_rows():
        if 10_000 <= t < 90_000 and (s, d) in rate:
            bits += busy * 1e-12 * rate[(s, d)]
    expected = bits / (1e10 * 80_000 * 1e-12)
    assert _carried(result, links, 9_500, 90_500, 1e10) == expected  # bins 10,000 .. 89,000
    assert _carried(result, links, 10_000, 10_999, 1e10) is None  # no whole bin
    assert _carried(result, links.filter(pl.col("src") == "c"), 0, 100_000, 1e10) == 0.0


def test_a_workload_that_offers_much_less_than_it_asks_is_a_warning():
    """Heavy-tailed sizes in a short arrivals window can offer half the asked
    load; the summary's warnings say so (not only the load section)."""
    scenario = loads((ROOT / "scenarios" / "leafspine-datamining.yaml").read_text(), ["duration=0.5s"])
    result = fabricsim.run(scenario)
    offered = result.summary["load"]["responses"]["offered_wire"]
    assert offered < 0.9 * 0.6
    assert any("workload 'responses' offered" in w and "60%" in w for w in result.summary["warnings"])


def test_ping_pongs_cut_short_by_the_end_of_the_run_are_a_warning():
    text = (ROOT / "scenarios" / "pt-sdn.yaml").read_text()
    result = fabricsim.run(loads(text, ["duration=2.2ms"]))
    assert any("ping_pong 'sockperf' asked for 200 messages" in w for w in result.summary["warnings"])
