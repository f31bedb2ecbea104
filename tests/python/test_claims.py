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
