"""``fabricsim reproduce``: the registry, the plan of points, resume through the
catalog, and golden snapshots of the cheapest tests of each report at the
default scale (tolerances in fabricsim.reproductions.golden)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fabricsim.cli.main import main
from fabricsim.reproductions import NAMES, get
from fabricsim.reproductions import golden
from fabricsim.reproductions.job import ReproduceError, plan, run_reproduction


def test_list_shows_every_report_with_its_tests_and_an_estimate(capsys):
    assert main(["reproduce", "--list"]) == 0
    text = capsys.readouterr().out
    for name in ("esg-trident3", "pt-pensando", "miercom-buffers", "esnet-buffers", "tolly-lightfleet"):
        assert name in text
        for test in get(name).tests:
            assert test.name in text
    assert "min on 2 cores" in text or "s on 2 cores" in text


def test_unknown_reproduction_is_an_error_listing_the_known_ones(capsys):
    assert main(["reproduce", "nope"]) == 2
    err = capsys.readouterr().err
    assert "unknown reproduction 'nope'" in err and "esnet-buffers" in err


def test_unknown_test_is_an_error_listing_the_report_tests():
    with pytest.raises(ReproduceError, match="allowed: buffer_size, pacing, packet_queue"):
        plan(get("esnet-buffers"), False, ["nope"])


@pytest.mark.parametrize("name", NAMES)
def test_every_test_has_points_at_both_scales_on_every_compared_device(name):
    report = get(name)
    for full in (False, True):
        points = plan(report, full)
        assert len({p.id for p in points}) == len(points)
        for test in report.tests:
            mine = [p for p in points if p.test == test.name]
            assert mine, (name, test.name, full)
            json.dumps([p.params for p in mine])
            devices = ({p.params.get("device") for p in mine}
                       | {d for p in mine for d in p.params.get("devices") or ()}) - {None}
            if devices:
                assert len(devices) >= 2
    # The default scale of a whole report fits in 15 minutes on 2 cores (by the estimate).
    assert report.estimate_s() < 15 * 60


def test_full_scale_uses_the_report_sizes():
    inc = [p.params for p in plan(get("esg-trident3"), True, ["incast"])]
    assert sorted({p["size_mb"] for p in inc}) == [200, 1000, 2000, 4000, 10000]
    fct = plan(get("miercom-buffers"), True)
    assert {p.params["duration_s"] for p in fct} == {300}


def test_miercom_derives_the_5mb_nexus_only_where_its_cap_cannot_have_dropped(core):
    """A point runs the 5 MB Nexus and takes the 10 MB one's rows from that run when its buffers never
    came within a frame of 5 MB: the same numbers as running the 10 MB model itself."""
    import fabricsim
    from fabricsim.reproductions import miercom_buffers as M

    params = {"duration_s": 0.05, "cc": "newreno", "datamining_cdf": "datamining_vl2_hkust",
              "workload": "datamining", "load_pct": 20}
    both = M.fct({**params, "devices": ["nexus-ib-5mb", "nexus-ib-10mb"]}, False)
    alone = M.fct({**params, "devices": ["nexus-ib-10mb"]}, False)
    derived = [r for r in both["summary"] if r["device"] == "nexus-ib-10mb"]
    assert [r["derived_from"] for r in both["summary"]] == [None, "nexus-ib-5mb"]
    assert derived[0]["max_buffer_bytes"] + M._LARGEST_FRAME <= 5_000_000
    strip = lambda r: {k: v for k, v in r.items() if k != "derived_from"}
    assert [strip(r) for r in derived] == [strip(r) for r in alone["summary"]]
    assert [r for r in both["buckets"] if r["device"] == "nexus-ib-10mb"] == alone["buckets"]

    def scenario(device):
        return fabricsim.from_dict(M._scenario(params, device))

    ten, five, deep = scenario("nexus-ib-10mb"), scenario("nexus-ib-5mb"), scenario("jericho-deep")
    assert M.lower_cap(ten, five) == M.lower_cap(five, ten) == 5_000_000
    assert M.lower_cap(ten, deep) is None and M.lower_cap(deep, five) is None
    hosts = fabricsim.from_dict(M._scenario({**params, "assume": M.HOSTS[0][1]}, "nexus-ib-5mb"))
    assert M.lower_cap(ten, hosts) is None  # anything else differs: run it


def test_miercom_expected_flow_count_is_the_generator_rate_times_the_share_of_mice():
    """The 5-minute count of the requester's flows <= 100 KB against the closed form from the table's
    published statistics (../shared/workloads/summary.csv: mean 12,658,199 B with linear interpolation,
    82.31 % of flows <= 100 KB): 300 s x 2 Gb/s / (8 x mean) x share on the payload basis; the wire basis
    offers fewer flows by the headers' share of a flow's wire bytes."""
    from fabricsim.reproductions.miercom_buffers import expected_mice

    payload = expected_mice("datamining_vl2_hkust", "linear", "payload", 20)
    assert payload == pytest.approx(300 * 2e9 / (8 * 12_658_199) * 0.8231, rel=1e-4)
    assert expected_mice("datamining_vl2_hkust", "linear", "payload", 95) == pytest.approx(payload * 95 / 20)
    assert 0.93 < expected_mice("datamining_vl2_hkust", "linear", "wire", 20) / payload < 0.95
    points = [p.params for p in plan(get("miercom-buffers"), False)]
    assert {p["datamining_cdf"] for p in points} == {"datamining_vl2_hkust"}


def test_a_second_run_skips_finished_points_and_reruns_only_missing_ones(core, tmp_path):
    out = tmp_path / "r"
    first = run_reproduction("tolly-lightfleet", out, tests=["power"], workers=1, page=False)
    assert (first.ran, first.skipped, first.failed) == (3, 0, 0)
    # What the points cost is kept in the catalog and summed per test, for the points this call ran.
    assert first.cpu["power"][0] == 3 and first.cpu["power"][1] > 0
    again = run_reproduction("tolly-lightfleet", out, tests=["power"], workers=1, page=False)
    assert (again.ran, again.skipped) == (0, 3)
    assert again.cpu == {}
    # An interrupted point (no point.json) runs again; the tables are the same.
    victim = out / "points" / first.points[1].id
    shutil.rmtree(victim)
    third = run_reproduction("tolly-lightfleet", out, tests=["power"], workers=1, page=False)
    assert (third.ran, third.skipped) == (1, 2)
    assert third.tables["power/results"].equals(first.tables["power/results"])
    assert (out / "power__results.parquet").is_file()


def _edited_copy(tmp_path, monkeypatch, report, name, extra):
    """A copy of ``report``'s scenario files with ``extra`` appended to ``name``,
    used by the plan in place of the package's."""
    from fabricsim.reproductions import job
    from fabricsim.reproductions.base import data_dir

    copy = tmp_path / "data" / report
    shutil.copytree(data_dir(report), copy)
    with open(copy / name, "a", encoding="utf-8") as f:
        f.write(extra)
    monkeypatch.setattr(job, "data_dir", lambda r: copy if r == report else data_dir(r))


def test_point_ids_cover_the_scenario_file_each_test_runs(tmp_path, monkeypatch):
    report = get("esg-trident3")
    before = {(p.test, json.dumps(p.params, sort_keys=True)): p.id for p in plan(report, False)}
    _edited_copy(tmp_path, monkeypatch, "esg-trident3", "incast.yaml", "\nduration: 20ms\n")
    after = {(p.test, json.dumps(p.params, sort_keys=True)): p.id for p in plan(report, False)}
    assert before.keys() == after.keys()
    changed = {k[0] for k in before if before[k] != after[k]}
    # Only the test that runs incast.yaml gets new ids, every point of it.
    assert changed == {"incast"}
    assert all(before[k] != after[k] for k in before if k[0] == "incast")


def test_editing_a_scenario_file_reruns_its_points_into_the_same_out(core, tmp_path, monkeypatch):
    out = tmp_path / "r"
    first = run_reproduction("tolly-lightfleet", out, tests=["power"], workers=1, page=False)
    assert (first.ran, first.skipped, first.failed) == (3, 0, 0)
    _edited_copy(tmp_path, monkeypatch, "tolly-lightfleet", "tolly-latency.yaml", "\n# edited\n")
    edited = run_reproduction("tolly-lightfleet", out, tests=["power"], workers=1, page=False)
    assert (edited.ran, edited.skipped, edited.failed) == (3, 0, 0)
    assert {p.id for p in edited.points}.isdisjoint(p.id for p in first.points)
    # The rerun's rows are the ones collected (the page shows the edited scenario's results).
    assert edited.tables["power/results"].height == first.tables["power/results"].height
    again = run_reproduction("tolly-lightfleet", out, tests=["power"], workers=1, page=False)
    assert (again.ran, again.skipped) == (0, 3)


def test_golden_comparison_catches_a_changed_number():
    import polars as pl

    frame = pl.DataFrame({"device": ["a"], "x": [1.0]})
    text = golden.snapshot("t", {"t/results": frame})
    assert golden.compare(text, {"t/results": frame}) == []
    assert golden.compare(text, {"t/results": frame.with_columns(pl.col("x") * (1 + 1e-9))}) == []
    problems = golden.compare(text, {"t/results": frame.with_columns(pl.col("x") * 1.01)})
    assert problems and "x" in problems[0]


@pytest.mark.parametrize("name", [n for n in NAMES if get(n).golden_tests])
def test_default_scale_tables_match_the_golden_snapshot(core, name):
    path = golden.golden_path(name)
    if not path.is_file():
        pytest.fail(f"no golden snapshot: run `fabricsim reproduce {name} --update-golden`")
    problems = golden.compare(path.read_text(encoding="utf-8"), golden.tables(name, workers=2))
    assert not problems, "\n".join(problems[:20]) + f"\n(refresh: fabricsim reproduce {name} --update-golden)"


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_whole_report_runs_at_the_default_scale(core, name, tmp_path):
    out = run_reproduction(name, tmp_path / name, workers=2)
    assert out.failed == 0, out.errors
    assert out.page is not None and out.page.stat().st_size > 10_000
    for test in get(name).tests:
        assert any(key.startswith(test.name + "/") for key in out.tables), test.name


def test_scenario_copies_in_the_package_equal_the_shipped_scenarios():
    """The reproductions' copies of shipped scenarios (package data, so an
    installed package has them) must not drift from ``scenarios/``."""
    repo = Path(__file__).resolve().parents[2]
    data = repo / "python" / "fabricsim" / "reproductions" / "data"
    import yaml

    def name(path):
        return yaml.safe_load(path.read_text()).get("name")

    # A file of its own (another scenario name, like esg-trident3's incast) is not a copy.
    copies = [
        p for p in sorted(data.glob("*/*.yaml"))
        if (repo / "scenarios" / p.name).is_file() and name(p) == name(repo / "scenarios" / p.name)
    ]
    assert len(copies) >= 8
    for copy in copies:
        assert copy.read_bytes() == (repo / "scenarios" / copy.name).read_bytes(), copy.relative_to(repo)


def test_a_reproduction_page_is_byte_identical_whatever_the_number_of_workers(core, tmp_path):
    """Points finish in any order on two workers; the tables, the claims and the page follow the plan."""
    pages = []
    for workers in (1, 2):
        out = run_reproduction("pt-pensando", tmp_path / f"w{workers}", tests=["latency"], workers=workers)
        assert out.failed == 0, out.errors
        pages.append(out.page.read_bytes())
        assert (tmp_path / f"w{workers}" / "latency__results.parquet").is_file()
    assert pages[0] == pages[1]
