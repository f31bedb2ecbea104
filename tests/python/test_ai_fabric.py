"""The AI-fabric experiment (fabricsim.experiments.ai_fabric, `fabricsim ai-fabric`) on a small rail fabric:
every point runs to its end with its checks, the table agrees with each run's own tables, the page shows every
point's numbers, bad input names its option, and two runs write byte-identical files."""

from pathlib import Path

import polars as pl
import pytest

import fabricsim
from fabricsim.cli.main import main
from fabricsim.errors import ScenarioError

ROOT = Path(__file__).resolve().parents[2]

#: 2 servers x 2 GPUs, 2 rails, 2 spines at 100G: a ring of two per rail beside an all-to-all of all four,
#: two iterations, and a light storage workload (a few flows).
SMALL = """
name: ai-rail-small
description: 2 servers x 2 GPUs, 2 rails, 2 spines, 100G
seed: 1
duration: 100us
network:
  switch:
    latency: 500ns
    buffer: {model: shared, size: 4MB}
    ecn: {threshold: 100KB}
topology:
  kind: rail
  servers: 2
  gpus_per_server: 2
  spines: 2
  nic_link: {rate: 100Gbps, delay: 1us}
  fabric_link: {rate: 100Gbps, delay: 1us}
tcp: {cc: dctcp, init_cwnd: 200, rwnd: 4MB, min_rto: 1ms}
traffic:
  - {kind: collective, name: allreduce_rail0, algorithm: all_reduce, size: 256KB, iterations: 2, compute: 10us,
     hosts: [s0g0, s1g0]}
  - {kind: collective, name: allreduce_rail1, algorithm: all_reduce, size: 256KB, iterations: 2, compute: 10us,
     hosts: [s0g1, s1g1]}
  - {kind: collective, name: moe_alltoall, algorithm: all_to_all, size: 256KB, iterations: 2, compute: 10us,
     hosts: [s0g0, s0g1, s1g0, s1g1]}
  - {kind: workload, name: storage, cdf: alibaba_storage_hpcc, load: 10%}
"""

MODES = ["ecmp", "spray_random", "adaptive"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The experiment run twice into two folders: by the command line (two workers) and from Python (one)."""
    pytest.importorskip("fabricsim._core", reason="the compiled core is not built")
    from fabricsim.experiments.ai_fabric import ai_fabric

    tmp = tmp_path_factory.mktemp("ai_fabric")
    scenario = tmp / "small.yaml"
    scenario.write_text(SMALL)
    a, b = tmp / "a", tmp / "b"
    status = main(["ai-fabric", str(scenario), "--out", str(a), "--fail-at", "20us", "--detect", "10us",
                   "--workers", "2", "--no-progress"])
    assert status == 0
    outcome = ai_fabric(scenario, b, fail_at="20us", detect="10us", workers=1)
    return scenario, a, b, outcome


def test_every_point_runs_to_its_end_with_its_checks(runs):
    _, a, _, outcome = runs
    table = pl.read_parquet(a / "ai_fabric.parquet")
    assert table.equals(outcome.table)
    assert outcome.ran == 6 and outcome.failed == 0 and outcome.errors == []
    assert table.select("load_balancing", "failure").rows() == [
        (mode, failure) for mode in MODES for failure in ("none", "rail0-spine0 down at 20us (detect 10us)")]
    assert table["status"].to_list() == ["done"] * 6
    for column in ("conservation_ok", "buffer_accounting_ok", "collectives_completed"):
        assert table[column].to_list() == [True] * 6, column
    assert table["drain_limit_reached"].to_list() == [False] * 6
    # The failure drops frames on the dead link in every mode; nothing else is dropped.
    failed = table.filter(pl.col("failure") != "none")
    assert (failed["drops_link_down"] > 0).all() and (failed["drops_link_down"] == failed["packets_dropped"]).all()
    assert table.filter(pl.col("failure") == "none")["packets_dropped"].to_list() == [0, 0, 0]
    assert (table["pfc_pause_frames"] == 0).all()
    # Per point: two algorithms x two iterations, the training iterations, and every entry's own rows.
    its = pl.read_parquet(a / "ai_fabric_iterations.parquet")
    assert its.height == 6 * (2 * 2 + 2 + 3 * 2)
    assert its["completed"].all()


def test_the_table_is_each_runs_own_tables(runs):
    _, a, _, _ = runs
    table = pl.read_parquet(a / "ai_fabric.parquet")
    for row in table.iter_rows(named=True):
        point = a / "points" / row["point_id"]
        coll = pl.read_parquet(point / "collectives.parquet")
        a2a = coll.filter(pl.col("algorithm") == "all_to_all")
        assert row["all_to_all_time_max_ps"] == a2a["time_ps"].max()
        assert row["all_to_all_busbw_min_gbps"] == a2a["busbw_gbps"].min()
        rings = coll.filter(pl.col("algorithm") == "all_reduce")
        assert row["all_reduce_time_max_ps"] == rings["time_ps"].max()
        assert row["job_time_ps"] == coll["end_ps"].max() - coll["start_ps"].min()
        fct = pl.read_parquet(point / "fct.parquet").filter(
            (pl.col("traffic") == "storage") & (pl.col("bucket") == "all")).row(0, named=True)
        assert row["storage_p99_fct_ps"] == fct["p99_fct_ps"] and row["storage_flows"] == fct["count"] > 0
        buffers = pl.read_parquet(point / "buffers.parquet")
        assert row["buffer_peak_bytes"] == buffers["high_water_bytes"].max()
        flows = pl.read_parquet(point / "flows.parquet")
        assert row["timeouts"] == flows["timeouts"].sum()
        summary = fabricsim.Result.read(point).summary
        assert row["packets_dropped"] == summary["packets_dropped"]


def test_the_page_shows_every_points_numbers(runs):
    from fabricsim.outputs.report.html import fmt_bytes, fmt_count, fmt_time

    _, a, _, _ = runs
    page = (a / "ai_fabric.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "Traceback" not in page
    assert 'data-plot="ai_fabric_timeline"' in page and 'data-plot="ai_fabric_fct_storage"' in page
    assert (a / "plots" / "ai_fabric_timeline.svg").is_file()
    assert not any(tag in page for tag in ("<script", "<link", "<img", 'src="'))  # self-contained: inline SVG
    table = pl.read_parquet(a / "ai_fabric.parquet")
    for row in table.iter_rows(named=True):
        for column in ("job_time_ps", "iteration_time_max_ps", "all_reduce_time_max_ps", "all_to_all_time_max_ps",
                       "storage_p99_fct_ps"):
            assert f"<td>{fmt_time(row[column])}</td>" in page, (column, row[column])
        assert f"<td>{fmt_bytes(row['buffer_peak_bytes'])}</td>" in page
        assert f"<td>{fmt_count(row['drops_link_down'])}</td>" in page
    assert "rail0 -&gt; spine0" in page  # drop sites named by the port's peer, escaped once


def test_two_runs_write_byte_identical_files(runs):
    from fabricsim.experiments.ai_fabric import ai_fabric

    scenario, a, b, _ = runs
    names = ["ai_fabric.parquet", "ai_fabric_iterations.parquet", "ai_fabric.html",
             "plots/ai_fabric_timeline.svg", "plots/ai_fabric_fct_storage.svg"]
    for name in names:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    # Into the same folder again: every point is already done, and the files stay the same.
    before = {name: (b / name).read_bytes() for name in names}
    again = ai_fabric(scenario, b, fail_at="20us", detect="10us", workers=1)
    assert again.ran == 0 and again.skipped == 6
    assert {name: (b / name).read_bytes() for name in names} == before


@pytest.mark.parametrize("args, needle", [
    (["--load-balancing", "hashing"], "argument --load-balancing: invalid choice: 'hashing'"),
    (["--load-balancing", "ecmp", "--load-balancing", "ecmp"], "--load-balancing: 'ecmp' is given twice"),
    (["--fail-link", "rail0", "nosuch"], '--fail-link: no node named "nosuch"'),
    (["--fail-link", "rail0", "s0g1"], "--fail-link: no link joins rail0 and s0g1"),
    (["--fail-at", "5"], "argument --fail-at: expected a time"),
    (["--detect", "soon"], "argument --detect: expected a time"),
    (["--workers", "0"], "argument --workers: must be >= 1"),
    (["--transport", "rdma"], "argument --transport: invalid choice: 'rdma'"),
    (["--set", "failures=[]"], "--set: 'failures=[]': the experiment sets failures itself"),
    (["--set", "network.switch.load_balancing=adaptive"], "the experiment sets network.switch.load_balancing itself"),
])
def test_bad_input_names_the_option_and_runs_nothing(core, capsys, tmp_path, args, needle):
    scenario = tmp_path / "small.yaml"
    scenario.write_text(SMALL)
    try:
        status = main(["ai-fabric", str(scenario), "--out", str(tmp_path / "out"), *args])
    except SystemExit as exc:
        status = exc.code
    err = capsys.readouterr().err
    assert status == 2 and needle in err, err
    assert "Traceback" not in err and not (tmp_path / "out").exists()


def test_a_scenario_without_collectives_is_refused(core, tmp_path):
    from fabricsim.experiments.ai_fabric import ai_fabric

    scenario = tmp_path / "udp.yaml"
    scenario.write_text((ROOT / "scenarios" / "ai-rail-alltoall.yaml").read_text().replace(
        "kind: collective", "kind: workload\n    cdf: websearch_dctcp\n    load: 10%").replace(
        "    algorithm: all_to_all\n", "").replace("    size: 4MB\n", ""))
    with pytest.raises(ScenarioError, match="traffic: the experiment times collectives"):
        ai_fabric(scenario, tmp_path / "out")
    with pytest.raises(ScenarioError, match="load_balancing: unknown value 'hash'"):
        ai_fabric(ROOT / "scenarios" / "ai-rail-64gpu.yaml", tmp_path / "out", load_balancing=["hash"])
    assert not (tmp_path / "out").exists()


def test_the_shipped_scenario_is_64_gpus_on_8_rails_and_8_spines(core):
    from fabricsim.runner import check

    sc = fabricsim.load(ROOT / "scenarios" / "ai-rail-64gpu.yaml")
    resolved = check(sc)
    names = [n["name"] for n in resolved["topology"]["nodes"]]
    assert len(names) == 64 + 8 + 8 and {f"rail{g}" for g in range(8)} <= set(names)
    collectives = [t for t in sc.traffic if t.kind == "collective"]
    rings = [t for t in collectives if t.algorithm == "all_reduce"]
    assert len(rings) == 8 and all({h[-2:] for h in t.hosts} == {f"g{i}"} for i, t in enumerate(rings))
    (a2a,) = [t for t in collectives if t.algorithm == "all_to_all"]
    assert len(a2a.hosts) == 64 and all(t.iterations == 3 for t in collectives)
    assert [t.name for t in sc.traffic if t.kind == "workload"] == ["storage"]


def test_collectives_over_roce_run_every_point_with_their_checks(core, tmp_path):
    """``--transport roce``: every collective entry runs as RDMA WRITEs (the storage workload stays TCP). Without
    the failure nothing is lost; with it the frames on the dead link are lost, go-back-N repairs them and a tail
    waits for the NIC's retransmission timeout (67.108864 ms), which the job time shows."""
    scenario = tmp_path / "small.yaml"
    scenario.write_text(SMALL)
    out = tmp_path / "out"
    status = main(["ai-fabric", str(scenario), "--out", str(out), "--fail-at", "20us", "--detect", "10us",
                   "--load-balancing", "ecmp", "--transport", "roce", "--workers", "1", "--no-progress"])
    assert status == 0
    table = pl.read_parquet(out / "ai_fabric.parquet")
    assert table["status"].to_list() == ["done"] * 2
    for column in ("conservation_ok", "buffer_accounting_ok", "collectives_completed"):
        assert table[column].to_list() == [True] * 2, column
    clean, failed = table.row(0, named=True), table.row(1, named=True)
    assert clean["packets_dropped"] == clean["timeouts"] == clean["retransmits"] == 0
    assert failed["drops_link_down"] == failed["packets_dropped"] > 0 and failed["timeouts"] > 0
    assert failed["job_time_ps"] > 67_108_864_000 > clean["job_time_ps"]
    for row in table.iter_rows(named=True):
        flows = pl.read_parquet(out / "points" / row["point_id"] / "flows.parquet")
        kinds = dict(flows.group_by("name").agg(pl.col("kind").unique()).iter_rows())
        assert all(kinds[name] == ["rdma"] for name in ("allreduce_rail0", "allreduce_rail1", "moe_alltoall"))
        assert kinds["storage"] == ["tcp_flow"]
    page = (out / "ai_fabric.html").read_text(encoding="utf-8")
    assert "traffic.2.transport=roce" in page
    assert "Transports: all-reduce over RoCEv2; all-to-all over RoCEv2." in page


def test_a_bad_transport_is_named(core, tmp_path):
    from fabricsim.experiments.ai_fabric import ai_fabric

    with pytest.raises(ScenarioError, match="transport: unknown value 'udp'; allowed: tcp, roce"):
        ai_fabric(ROOT / "scenarios" / "ai-rail-64gpu.yaml", tmp_path / "out", transport="udp")
    assert not (tmp_path / "out").exists()


def test_trimming_switches_show_their_trims_on_the_page(core, tmp_path):
    """Collectives over RoCE with selective repeat through switches that trim (docs/models/trimming.md), data
    queues of 20 KB: the congested ports trim instead of dropping, and the page adds a "trimmed" column."""
    from fabricsim.experiments.ai_fabric import ai_fabric

    scenario = tmp_path / "small.yaml"
    scenario.write_text(SMALL)
    out = tmp_path / "out"
    overrides = ["network.switch.buffer={model: static, port_size: 40KB, queue_size: 20KB}",
                 "network.switch.trimming={}", "roce.recovery=selective_repeat", "roce.dcqcn={enabled: false}",
                 "roce.rto=1ms"]
    ai_fabric(scenario, out, load_balancing=["spray_random"], transport="roce", overrides=overrides,
              fail_at="20us", detect="10us", workers=1)
    table = pl.read_parquet(out / "ai_fabric.parquet")
    assert table["status"].to_list() == ["done"] * 2 and all(table["conservation_ok"])
    clean = table.row(0, named=True)
    assert clean["packets_trimmed"] > 0 and clean["packets_dropped"] == clean["timeouts"] == 0
    page = (out / "ai_fabric.html").read_text(encoding="utf-8")
    assert "<th>trimmed</th>" in page or ">trimmed<" in page
    assert "Trimmed: data packets the switches cut to their header" in page
