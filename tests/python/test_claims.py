"""The reports' claims beside the simulation: the shipped claim registries, the
one verdict rule, every claim id mapped to an extractor or a stated reason, and
the claims tables of the golden tests computed from real tables."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fabricsim.reproductions import NAMES, get, golden
from fabricsim.reproductions.claims import (
    Claim,
    Simulated,
    band,
    counts,
    evaluate,
    load_claims,
    parse_claims,
    rule_out,
    summary_line,
    verdict,
)

SHARED = Path(__file__).resolve().parents[3] / "shared" / "claims"


def claim(**kw) -> Claim:
    doc = {"id": "x", "test": "t", "quantity": "q", "kind": "measured", "value": 10.0, "unit": "s"}
    doc.update(kw)
    return parse_claims({"claims": [doc]})[0]


def test_a_measured_claim_matches_within_25_percent_without_a_spread():
    c = claim(value=10.0)
    assert band(c) == (7.5, 12.5)
    assert verdict(c, Simulated(12.4)) == "matches"
    assert verdict(c, Simulated(12.6)) == "misses"
    assert verdict(c, Simulated(7.4)) == "misses"


def test_a_range_is_widened_at_both_ends_and_a_spread_replaces_the_tolerance():
    assert band(claim(value=[12, 18])) == (9.0, 22.5)
    c = claim(value=[93.9, 94.6], spread=[93.9, 94.6])
    assert verdict(c, Simulated(94.0)) == "matches"
    assert verdict(c, Simulated(93.0)) == "misses"


def test_outside_the_band_a_claim_with_a_direction_can_be_right_in_direction_only():
    c = claim(value=17, unit="%", direction="competitor > trident3")
    assert verdict(c, Simulated(3.0, holds=True)) == "direction only"
    assert verdict(c, Simulated(3.0, holds=False)) == "misses"
    assert verdict(c, Simulated(16.0, holds=True)) == "matches"


def test_a_stated_claim_is_judged_by_its_direction_and_must_be_given_one():
    c = claim(kind="stated", value=None, direction="a > b")
    assert verdict(c, Simulated(holds=True, text="a 3, b 2")) == "matches"
    assert verdict(c, Simulated(holds=False)) == "misses"
    with pytest.raises(ValueError, match="direction"):
        verdict(c, Simulated(1.0))
    assert verdict(c, None) == "not run"


def test_counts_say_matches_n_of_the_judged_claims():
    c = claim(value=10.0, direction="up")
    rows = evaluate([c, claim(id="y"), claim(id="z")],
                    {"x": lambda t, f: Simulated(10.0), "y": "needs a model of X", "z": lambda t, f: None},
                    {}, False)
    assert [r.verdict for r in rows] == ["matches", "not simulated", "not run"]
    n = counts(rows)
    assert n["matches"] == 1 and n["judged"] == 1 and n["not simulated"] == 1
    assert rows[0].ratio == 1.0
    with pytest.raises(KeyError, match="neither an extractor nor a stated reason"):
        evaluate([c], {}, {}, False)


def test_a_ruled_out_note_stays_on_a_miss_and_is_counted_apart():
    rows = evaluate([claim(id="a"), claim(id="b")],
                    {"a": lambda t, f: Simulated(3.0), "b": lambda t, f: Simulated(10.0)}, {}, False)
    ruled = rule_out(rows, {"a": "a class at 3 carries at most 3", "b": "would not apply"})
    assert [(r.verdict, r.ruled_out) for r in ruled] == [("misses", "a class at 3 carries at most 3"),
                                                         ("matches", None)]
    assert counts(ruled)["ruled out"] == 1 and counts(ruled)["misses"] == 1
    assert "1 missed with the experiment that rules the models out" in summary_line(ruled)
    with pytest.raises(KeyError, match="do not exist: nope"):
        rule_out(rows, {"nope": "x"})


@pytest.mark.parametrize("name", NAMES)
def test_ruled_out_notes_name_claims_of_the_report(name):
    report = get(name)
    ids = {c.id for c in load_claims(name)}
    assert set(report.ruled_out) <= ids
    for cid, text in report.ruled_out.items():
        assert callable(report.claims[cid]) and len(text) > 40, cid


def test_the_experiment_behind_esg_incast_ruled_out_notes_runs_and_shows_a_busy_port(core, capsys):
    """scripts/esg-incast-mechanisms.py, which the esg-trident3 job-time notes cite: as modelled,
    both devices finish 256 x 1 MB within 7 % of the port's ideal time and within 1 % of each
    other, with conservation; a changed setting reaches the point (fq pacing changes the
    competitor's run)."""
    import runpy

    script = runpy.run_path(str(Path(__file__).resolve().parents[2] / "scripts" / "esg-incast-mechanisms.py"))
    assert script["main"](["--size-mb", "1", "--only", "as modelled", "--only", "fq"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if "| 1 MB |" in line]
    assert len(lines) == 2, lines
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines]
    t3, comp, ratio = (float(x) for x in cells[0][2:5])
    assert 1.0 <= t3 <= 1.07 and 1.0 <= comp <= 1.07 and abs(ratio - 1) < 0.01
    assert all(c[-1] == "holds" for c in cells)
    assert cells[0][2:] != cells[1][2:]


@pytest.mark.parametrize("name", NAMES)
def test_every_claim_has_an_extractor_or_a_stated_reason(name):
    claims = load_claims(name)
    mapping = get(name).claims
    ids = [c.id for c in claims]
    assert len(ids) == len(set(ids))
    missing = [i for i in ids if i not in mapping]
    assert not missing, f"{name}: claims without an extractor or a reason: {missing}"
    unknown = sorted(set(mapping) - set(ids))
    assert not unknown, f"{name}: entries for claims the registry does not have: {unknown}"
    for cid, entry in mapping.items():
        assert callable(entry) or (isinstance(entry, str) and len(entry.strip()) > 10), cid
    tests = {t.name for t in get(name).tests}
    for c in claims:
        if callable(mapping[c.id]):
            assert c.test is None or c.test in tests, (c.id, c.test)


@pytest.mark.parametrize("name", NAMES)
def test_the_shipped_claims_equal_the_published_registry(name):
    source = SHARED / f"{name}.yaml"
    if not source.is_file():
        pytest.skip(f"no claim registry beside the checkout ({source})")
    from fabricsim.reproductions.base import data_dir

    assert (data_dir(name) / "claims.yaml").read_bytes() == source.read_bytes()


@pytest.mark.parametrize("name", [n for n in NAMES if get(n).golden_tests])
def test_the_golden_tests_claims_are_computed_from_their_tables(name):
    """The golden snapshot's tables (the default scale of the cheapest tests)
    give every claim of those tests that has an extractor a verdict."""
    report = get(name)
    tables = golden.parse(golden.golden_path(name).read_text(encoding="utf-8"))
    claims = [c for c in load_claims(name) if c.test in report.golden_tests]
    rows = evaluate(claims, report.claims, tables, False, list(report.golden_tests))
    for r in rows:
        if callable(report.claims[r.claim.id]) and report.golden_select is None:
            assert r.verdict not in ("not run",), (r.claim.id, r.reason)
    json.dumps([r.as_dict() for r in rows])


def test_an_assumption_explains_a_missed_claim_apart_from_the_prediction():
    """The nearest setting of the space under which the claim matches is named;
    the verdict stays the prediction's and the counts keep explanations apart."""
    import polars as pl

    from fabricsim.reproductions.base import Assumption
    from fabricsim.reproductions.claims import explain

    c = claim(value=80.0, spread=[78, 84], unit="%", direction="competitor below line rate")
    tables = {"t/results": pl.DataFrame({"device": ["a", "b"], "pct": [100.0, 100.0]})}

    def extractor(t, full):
        row = t["t/results"].filter(pl.col("device") == "b").row(0, named=True)
        return Simulated(row["pct"], holds=row["pct"] < 99.9)

    space = (("b runs at 95 %", {"x": 1}), ("b runs at 81 %", {"x": 2}), ("b runs at 70 %", {"x": 3}))
    a = Assumption("b's pipe", "t", {"device": "b"}, space, why="not public")
    alt = {("b's pipe", i): {"t/results": pl.DataFrame({"device": ["b"], "pct": [v]})}
           for i, v in enumerate((95.0, 81.0, 70.0))}
    rows = evaluate([c], {"x": extractor}, tables, False)
    assert rows[0].verdict == "misses"
    (row,) = explain(rows, {"x": extractor}, [a], tables, alt, False)
    assert row.verdict == "misses" and row.explained
    assert row.explanation.startswith("matches if b runs at 81 %")
    assert counts([row])["matches"] == 0 and counts([row])["explained"] == 1
    (none,) = explain(rows, {"x": extractor}, [a], tables, {("b's pipe", 0): alt[("b's pipe", 0)]}, False)
    assert not none.explained and none.explanation == "none in the space (1 settings of b's pipe tried)"


@pytest.mark.parametrize("name", NAMES)
def test_assumptions_rerun_points_of_their_test_and_never_change_the_prediction(name):
    from fabricsim.reproductions.job import plan

    report = get(name)
    predictions = plan(report, False)
    everything = plan(report, False, explain=True)
    assert [p for p in everything if p.explain is None] == predictions
    for a in report.assumptions:
        assert a.test in {t.name for t in report.tests} and a.space and a.why
        mine = [p for p in everything if p.explain and p.explain[0] == a.name]
        assert len(mine) == len(a.space) * sum(
            1 for p in predictions if p.test == a.test and all(p.params.get(k) == v for k, v in a.only.items()))
        assert all(p.params["assume"] for p in mine)


def test_an_assumption_replaces_only_the_rows_matching_all_of_its_keys():
    import polars as pl

    from fabricsim.reproductions.claims import _substituted

    base = pl.DataFrame({"device": ["a", "b", "b"], "size": [1, 1, 2], "v": [1.0, 2.0, 3.0]})
    alt = pl.DataFrame({"device": ["b"], "size": [1], "v": [9.0]})
    out = _substituted({"t/r": base}, {"t/r": alt}, {"device": "b", "size": 1})["t/r"]
    assert sorted(out.rows()) == [("a", 1, 1.0), ("b", 1, 9.0), ("b", 2, 3.0)]


def test_an_assumption_replaces_rows_that_label_its_points_their_own_way():
    """A point's parameter may be written differently in its rows (tolly's stack ``scenario:tcp`` is the
    rows' ``scenario tcp``): the rows replaced are those holding what the assumption's rows hold in the
    ``only`` columns, here the TCP rows of device b, and never the UDP ones."""
    import polars as pl

    from fabricsim.reproductions.claims import _substituted

    base = pl.DataFrame({"device": ["a", "b", "b", "b"], "stack": ["scenario tcp", "scenario tcp", "scenario tcp",
                                                                    "scenario udp"],
                         "size": [1, 1, 2, 1], "v": [1.0, 2.0, 3.0, 4.0]})
    alt = pl.DataFrame({"device": ["b", "b"], "stack": ["scenario tcp", "scenario tcp"], "size": [1, 2], "v": [8.0, 9.0]})
    out = _substituted({"t/r": base}, {"t/r": alt}, {"device": "b", "stack": "scenario:tcp"})["t/r"]
    assert sorted(out.rows()) == [("a", "scenario tcp", 1, 1.0), ("b", "scenario tcp", 1, 8.0),
                                  ("b", "scenario tcp", 2, 9.0), ("b", "scenario udp", 1, 4.0)]
