"""The run report and the run's warnings: human units, named ports, what was
simulated, what matters, collapsed counters, warning banners, the section
extension point; the sweep report's p99 and spread over repeats."""

import json
import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

import fabricsim
from fabricsim.outputs.report import run as report_run
from fabricsim.outputs.report import render_html

ROOT = Path(__file__).resolve().parents[2]

INCAST = """
name: incast-report
duration: 2ms
network: {switch: {buffer: {model: static, port_size: 100KB}}}
topology: {kind: star, hosts: 5, link: {rate: 10Gbps, delay: 1us}}
tcp: {min_rto: 1ms}
traffic:
  - {kind: tcp_incast, name: incast, client: h0, servers: [h1, h2, h3, h4], response_size: 500KB}
  - {kind: udp_cbr, name: bg, src: h4, dst: h0, rate: 8Gbps, stop: 1ms}
"""


@pytest.fixture(scope="module")
def incast_page(request):
    pytest.importorskip("fabricsim._core")
    result = fabricsim.run(fabricsim.loads(INCAST))
    return result, render_html(result)


def test_tables_and_cards_show_human_units(incast_page):
    result, page = incast_page
    # No raw picosecond or byte counts in cards and tables (the Parquet files keep them).
    fct = result.flows.filter(pl.col("fct_ps").is_not_null())["fct_ps"].to_list()
    for value in fct:
        assert f"{value:,}" not in page and f">{value}<" not in page
    assert re.search(r"<td>\d+(\.\d+)? ms</td>", page) or re.search(r"<td>\d+(\.\d+)? us</td>", page)
    assert "simulated time<b>" in page and re.search(r"simulated time<b>[\d.]+ ms</b>", page)
    assert "fct_ps" not in page.split("All counters")[0]


def test_ports_are_named_by_what_they_connect(incast_page):
    _, page = incast_page
    assert "sw0 -&gt; h0" in page or "sw0 -> h0" in page
    assert " port 0" not in page and " port 1<" not in page


def test_page_says_what_was_simulated_and_what_matters(incast_page):
    _, page = incast_page
    top = page.split("<h2>What matters")[0]
    assert "What was simulated" in top
    assert "star: 5 hosts on one switch (sw0); links 10 Gb/s, 1 us" in top
    assert "static, 100 KB per port" in top
    matters = page.split("What matters in this run")[1].split("<h2>")[0]
    assert "packets dropped" in matters and "Deepest queue: sw0 -&gt; h0" in matters
    assert "Latency of class 0" in matters and "p99.9" in matters
    # The full counters are kept, collapsed at the end.
    assert re.search(r"<details><summary>\d+ summary counters", page)


def test_udp_flow_with_losses_is_reported_as_lossy(incast_page):
    result, page = incast_page
    bg = result.flows.filter(pl.col("name") == "bg").row(0, named=True)
    assert bg["status"] == "lossy" and 0 < bg["loss_ratio"] < 1 and bg["completed"]
    assert "<td>lossy</td>" in page
    assert "UDP flow(s) finished with losses" in page


def test_latency_percentiles_per_flow_and_per_class(incast_page):
    result, page = incast_page
    flows = result.flows
    assert {"latency_p50_ps", "latency_p99_ps", "latency_p999_ps"} <= set(flows.columns)
    classes = report_run.class_latency(result)
    row = classes.row(0, named=True)
    assert row["min_ps"] <= row["p50_ps"] <= row["p99_ps"] <= row["p999_ps"] <= row["max_ps"]
    assert row["packets"] == result.tables()["latency_hist"]["packets"].sum()
    assert "Latency by traffic class" in page


def test_fct_section_has_cdf_and_slowdown_plots(core):
    result = fabricsim.run(fabricsim.load(ROOT / "scenarios" / "leafspine-enterprise.yaml", ["duration=10ms"]))
    page = render_html(result)
    for plot in ("fct-cdf", "slowdown", "largest-flows", "carried"):
        assert f'data-plot="{plot}"' in page
    assert "<h3>responses</h3>" in page and "<h3>east_west</h3>" in page


def test_a_section_can_be_added_and_a_broken_one_does_not_take_the_page_down(incast_page, monkeypatch):
    result, _ = incast_page
    monkeypatch.setattr(report_run, "SECTIONS", report_run.SECTIONS)

    def pipeline(r):
        return "<h2>Pipeline</h2><p>stages</p>"

    def broken(r):
        raise KeyError("column")

    report_run.register_section(pipeline)
    report_run.register_section(broken, before=report_run._queues)
    page = render_html(result)
    assert page.index("<h2>Pipeline</h2>") < page.index("<h2>All counters</h2>")
    assert "the broken section could not be drawn: KeyError" in page
    assert page.index("could not be drawn") < page.index("<h2>Queues</h2>")


# --------------------------------------------------------------------------
# Warnings

TINY_BUFFER = """
name: tiny
duration: 1ms
network: {switch: {buffer: {model: static, port_size: 1000}}}
topology: {kind: star, hosts: 2, link: {rate: 10Gbps, delay: 1us}}
traffic: [{kind: udp_cbr, src: h0, dst: h1, rate: 1Gbps}]
"""

CUT = """
name: cut
duration: 1ms
drain_limit: 5ms
topology: {kind: star, hosts: 2, link: {rate: 10Gbps, delay: 1us}}
traffic: [{kind: tcp_bulk, src: h1, dst: h0, size: 20MB}]
"""


def test_a_buffer_smaller_than_a_frame_is_warned_about(core, tmp_path):
    result = fabricsim.run(fabricsim.loads(TINY_BUFFER))
    warnings = result.summary["warnings"]
    assert len(warnings) == 1 and "network.switch.buffer.port_size is 1,000 B" in warnings[0]
    assert "smaller than the largest frame (1,500 B" in warnings[0] and "without a unit is in bytes" in warnings[0]
    assert result.summary["packets_dropped"] == result.summary["packets_created"]
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY_BUFFER)
    r = subprocess.run([sys.executable, "-m", "fabricsim", "run", str(path), "--out", str(tmp_path / "o"),
                        "--no-progress"], capture_output=True, text=True)
    assert r.returncode == 0 and "WARNING: network.switch.buffer.port_size" in r.stderr
    assert json.loads((tmp_path / "o" / "summary.json").read_text())["warnings"] == warnings
    r = subprocess.run([sys.executable, "-m", "fabricsim", "validate", str(path)], capture_output=True, text=True)
    assert r.returncode == 0 and "WARNING: network.switch.buffer.port_size" in r.stderr
    assert 'class="banner' in (tmp_path / "o" / "report.html").read_text()


def test_a_run_cut_at_its_drain_limit_warns_in_summary_cli_and_report(core, tmp_path):
    path = tmp_path / "cut.yaml"
    path.write_text(CUT)
    r = subprocess.run([sys.executable, "-m", "fabricsim", "run", str(path), "--out", str(tmp_path / "o"),
                        "--no-progress"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["drain_limit_reached"] is True and summary["flows_incomplete"] == 1
    assert any(w.startswith("drain limit reached: the run stopped at 6ms") for w in summary["warnings"])
    assert "20.0 MB (h1 -> h0)" in summary["warnings"][0]
    assert "WARNING: drain limit reached" in r.stderr
    page = (tmp_path / "o" / "report.html").read_text()
    banner = page.split('role="alert"')[1].split("</div>")[0]
    assert "drain limit reached" in banner and "1 incomplete" in page
    # The report is rebuilt from the stored files with the same banner.
    (tmp_path / "o" / "report.html").unlink()
    r = subprocess.run([sys.executable, "-m", "fabricsim", "report", str(tmp_path / "o")], capture_output=True,
                       text=True)
    assert r.returncode == 0 and "drain limit reached" in (tmp_path / "o" / "report.html").read_text()


def test_a_clean_run_has_no_warnings(core):
    result = fabricsim.run(fabricsim.load(ROOT / "scenarios" / "quickstart.yaml"))
    assert result.summary["warnings"] == []
    assert 'role="alert"' not in render_html(result)


# --------------------------------------------------------------------------
# The sweep report


def test_sweep_report_shows_p99_and_spread_over_repeats():
    from fabricsim.sweeps.report import render_sweep_html

    rows = []
    for load in ("30%", "60%"):
        for repeat, p99 in enumerate((1e9, 3e9, 2e9)):
            rows.append({"point_id": f"{load}-{repeat}", "repeat": repeat, "seed": repeat, "status": "done",
                         "error": None, "load": load, "fct_all_count": 100, "fct_all_mean_ps": 5e8,
                         "fct_all_p99_ps": p99 * (2 if load == "60%" else 1), "fct_all_mean_slowdown": 2.0,
                         "fct_all_p99_slowdown": 9.0})
    page = render_sweep_html(pl.DataFrame(rows), ["load"], title="s")
    assert 'data-plot="p99-fct-by-flow-size"' in page
    assert "Spread over repeats" in page
    # p99 FCT over the three repeats of 30 %: mean 2 ms, sd 1 ms, range [1, 3] ms.
    assert "2 ± 1 [1, 3]" in page


@pytest.mark.parametrize("classes", [1, 2], ids=["one-class", "two-classes"])
def test_queue_plot_draws_each_ports_sum_over_its_classes(classes, monkeypatch):
    """Ports with one row per sample time are drawn as they are; where several
    classes share a port and time, their sum (the same series either way)."""
    from fabricsim.outputs.tables import RunTables

    rows = []
    for t in (30, 10, 20):  # out of time order
        for node, port, base in (("sw0", 1, 100), ("sw0", 2, 5000), ("sw1", 1, 700)):
            for c in range(classes):
                rows.append({"time_ps": t, "node": node, "port": port, "class": c, "bytes": base * t + c, "packets": 1})
    queues = pl.DataFrame(rows, schema_overrides={"time_ps": pl.UInt64, "port": pl.UInt32, "class": pl.UInt8,
                                                   "bytes": pl.UInt64, "packets": pl.UInt64})
    drawn = {}

    def capture(name, series, *args):
        drawn.update({label: (list(times), list(values)) for label, times, values in series})
        return ""

    monkeypatch.setattr(report_run, "step_plot", capture)
    report_run._queue_plot(RunTables({}, queues=queues), {}, top=2)
    expected = {}
    for node, port, base in (("sw0", 2, 5000), ("sw1", 1, 700)):  # the two highest peaks
        expected[f"{node} port {port}"] = ([10, 20, 30], [sum(base * t + c for c in range(classes)) / 1e3
                                                          for t in (10, 20, 30)])
    assert drawn == expected


def test_table_cells_of_one_column_share_one_number_format():
    """No exponent beside plain numbers: 961,500 and 14,880,000 are written alike."""
    from fabricsim.outputs.report.html import fmt

    assert [fmt(x) for x in (14_880_000.0, 961_500.0, 1234.6, 99.99, 0.5)] == [
        "14,880,000", "961,500", "1,235", "99.99", "0.5"]
    assert fmt(0.00012) == "1.200e-04"


def test_what_matters_names_the_deepest_host_nic_queue():
    """A host's own transmit queue can be the deepest of a run; the page says so."""
    import fabricsim
    from fabricsim.outputs.report.run import render_html

    sc = fabricsim.loads(
        "name: nic\nduration: 200us\ntopology: {kind: star, hosts: 3, link: {rate: 10Gbps, delay: 1us}}\n"
        "traffic:\n  - {kind: udp_cbr, name: a, src: h1, dst: h0, rate: 6Gbps}\n"
        "  - {kind: udp_cbr, name: b, src: h1, dst: h2, rate: 6Gbps}\n")
    page = render_html(fabricsim.run(sc))
    assert "Deepest host NIC queue: h1 -&gt; sw0" in page


def test_udp_streams_get_no_fct_and_small_buckets_say_their_size():
    import fabricsim
    from fabricsim.outputs.report.run import render_html

    sc = fabricsim.loads(
        "name: mix\nduration: 300us\ntopology: {kind: star, hosts: 3, link: {rate: 10Gbps, delay: 1us}}\n"
        "traffic:\n  - {kind: udp_cbr, name: stream, src: h1, dst: h0, rate: 1Gbps}\n"
        "  - {kind: tcp_bulk, name: transfer, src: h2, dst: h0, size: 50KB}\n")
    result = fabricsim.run(sc)
    page = render_html(result)
    assert "FCT (transfers)" in page
    import re

    table = page[page.rindex("<table", 0, page.index("FCT (transfers)")):]
    headers = re.findall(r"<th>(.*?)</th>", table.split("</tr>")[0])
    column = headers.index("FCT (transfers)")

    def cell(flow):
        row = table[table.index(f"<td>{flow}</td>"):].split("</tr>")[0]
        return re.findall(r"<td>(.*?)</td>", "<td>" + row.split("<td>", 1)[1])[column]

    assert cell("stream") == "–" and cell("transfer").endswith("s")
    assert "A p99 over fewer than 100 flows" in page
