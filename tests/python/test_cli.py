"""The command line: a clean run, and clear errors (no traceback, no panic) on bad input."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

GOOD = """
name: t
duration: 1ms
topology: {kind: star, hosts: 2, link: {rate: 10Gbps, delay: 1us}}
traffic: [{kind: udp_cbr, src: h0, dst: h1, rate: 1Gbps}]
"""


def fabricsim(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "fabricsim", *args], capture_output=True, text=True, cwd=cwd)


def write(tmp_path, text, name="s.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_run_writes_outputs(core, tmp_path):
    p = write(tmp_path, GOOD)
    r = fabricsim("run", str(p), "--out", str(tmp_path / "out"), "--no-progress")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out" / "summary.json").is_file()


@pytest.mark.parametrize("shipped", [None, "leafspine-datamining.yaml"])
def test_run_without_the_report_then_report_gives_the_same_files(core, tmp_path, shipped):
    """`run --no-report` writes every table and no report; `fabricsim report DIR`
    then draws the report a plain run writes, byte for byte. The data-mining
    leaf-spine has two workload entries (their load is listed in the order
    summary.json keeps) and switch latencies (the slowdown plot's ideal FCT
    needs the nodes' latencies, read back from nodes.parquet)."""
    if shipped is None:
        args = [str(write(tmp_path, GOOD))]
    else:
        args = [str(Path(__file__).resolve().parents[2] / "scenarios" / shipped), "--set", "duration=20ms"]
    full, bare = tmp_path / "full", tmp_path / "bare"
    assert fabricsim("run", *args, "--out", str(full), "--no-progress").returncode == 0
    r = fabricsim("run", *args, "--out", str(bare), "--no-progress", "--no-report")
    assert r.returncode == 0, r.stderr
    assert not (bare / "report.html").exists() and not (bare / "plots").exists()
    assert shipped is None or (full / "plots" / "slowdown.svg").is_file()
    tables = sorted(f.name for f in full.glob("*.parquet"))
    assert tables and tables == sorted(f.name for f in bare.glob("*.parquet"))
    r = fabricsim("report", str(bare))
    assert r.returncode == 0, r.stderr
    for f in sorted(full.rglob("*")):
        if f.is_file() and f.name != "timing.json":
            assert (bare / f.relative_to(full)).read_bytes() == f.read_bytes(), f.relative_to(full)


def test_set_overrides_a_field(core, tmp_path):
    p = write(tmp_path, GOOD)
    r = fabricsim("run", str(p), "--out", str(tmp_path / "o"), "--no-progress", "--set", "traffic.0.rate=2Gbps",
                  "--seed", "3")
    assert r.returncode == 0, r.stderr


BAD = {
    "broken_yaml": ("name: [unclosed\nduration: 1ms\n", ["line"]),
    "unknown_key": (GOOD + "colour: blue\n", ["colour"]),
    "negative_rate": (GOOD.replace("rate: 1Gbps", "rate: -5Gbps"), ["traffic[0].rate"]),
    "unknown_model": (GOOD + "network: {switch: {buffer: {model: magic}}}\n", ["model", "static"]),
    "unknown_topology": (GOOD.replace("kind: star", "kind: ring"), ["topology", "star", "leaf_spine"]),
    "unknown_host": (GOOD.replace("dst: h1", "dst: h9"), ["traffic[0].dst", "h9"]),
    "disconnected": (
        """
name: t
duration: 1ms
topology:
  kind: explicit
  nodes: [{name: a, kind: host}, {name: b, kind: host}, {name: s, kind: switch}]
  links: [{a: a, b: s, rate: 10Gbps, delay: 1us}]
traffic: [{kind: udp_cbr, src: a, dst: b, rate: 1Gbps}]
""",
        ["disconnected"],
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_gives_a_clear_error(core, tmp_path, case):
    text, needles = BAD[case]
    p = write(tmp_path, text)
    r = fabricsim("run", str(p), "--out", str(tmp_path / "out"), "--no-progress")
    assert r.returncode != 0
    err = r.stderr
    assert "Traceback" not in err and "panicked" not in err, err
    for needle in needles:
        assert needle in err, (needle, err)


def test_missing_file(tmp_path):
    r = fabricsim("run", str(tmp_path / "nope.yaml"), "--out", str(tmp_path / "out"))
    assert r.returncode != 0
    assert "nope.yaml" in r.stderr and "Traceback" not in r.stderr


def test_bench_quick_json(core):
    r = fabricsim("bench", "--quick", "--json", "--scenario", "single-port-md1")
    assert r.returncode == 0, r.stderr
    assert '"events_per_sec"' in r.stdout
    # Timings are labelled with how the core was compiled.
    from fabricsim import _core

    build = json.loads(r.stdout)["machine"]["build"]
    assert build == _core.BUILD
    assert build in ("optimized", "optimized, profile-guided", "instrumented for profiling (slow)", "debug")


def test_devices_json_lists_what_the_text_lists():
    text = fabricsim("devices")
    listing = fabricsim("devices", "--json")
    assert text.returncode == listing.returncode == 0, listing.stderr
    rows = json.loads(listing.stdout)
    assert rows and all(set(row) == {"name", "summary"} for row in rows)
    lines = [line.split(None, 1) for line in text.stdout.splitlines()]
    assert [[row["name"], row["summary"]] for row in rows] == lines
