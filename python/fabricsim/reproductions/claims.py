"""A report's claims beside the simulation: every number the report publishes
(``data/<report>/claims.yaml``), the value the simulation gives at the same
conditions, and a verdict computed by one rule.

Each report module maps every claim id to either an *extractor* (a function of
the reproduction's tables that returns a :class:`Simulated` value, or ``None``
when the tables it reads are missing because its test did not run) or a
*reason* string saying why the simulation cannot produce it.

The verdict rule (:func:`verdict`), the same for every report:

- a ``stated`` claim (a direction in words, no number) *matches* when the
  simulation shows the stated direction, else it *misses*;
- a ``measured`` or ``derived`` claim *matches* when the simulated value lies in
  the report's own spread of that quantity (``spread``) where the report gives
  one, else within 25 % of the report's value (of either end of a range:
  ``[low - 25 % |low|, high + 25 % |high|]``); outside that band it is right
  *in direction only* when the claim states a direction and the simulation
  shows it, else it *misses*;
- a claim whose extractor found no table is *not run*; a claim with a reason
  is *not simulated*.

Counts (:func:`counts`) are "matches N of M", M being the claims judged
(matches, direction only, misses). A claim the prediction misses may carry
the experiment or argument that rules the models out for it (a report's
``ruled_out``, :func:`rule_out`): shown beside the verdict, which stays a miss,
and counted apart. A value met only under an assumption that
is not the public-facts model (an *explanation*) is never a ``Simulated``
prediction: it would be counted apart.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Sequence, Union

import yaml

__all__ = [
    "TOLERANCE",
    "VERDICTS",
    "Claim",
    "ClaimRow",
    "Simulated",
    "band",
    "counts",
    "explain",
    "frame",
    "pick",
    "evaluate",
    "rule_out",
    "load_claims",
    "verdict",
]

#: Relative band around a report's value when the report gives no spread.
TOLERANCE = 0.25
#: Every verdict, in the order the counts list them.
VERDICTS = ("matches", "direction only", "misses", "not run", "not simulated")
JUDGED = ("matches", "direction only", "misses")


@dataclass(frozen=True)
class Claim:
    """One published number (or stated direction) of a report."""

    id: str
    test: Optional[str]
    quantity: str
    conditions: dict[str, Any]
    value: Union[None, float, tuple[float, float]]
    unit: Optional[str]
    kind: str  # measured | derived | stated
    direction: Optional[str]
    spread: Optional[tuple[float, float]]
    note: Optional[str]
    where: Optional[str]

    def report_text(self) -> str:
        """The report's value as the page shows it."""
        if self.value is None:
            return self.direction or "(stated)"
        unit = f" {self.unit}" if self.unit and self.unit not in ("ratio", "count") else ""
        if isinstance(self.value, tuple):
            return f"{_num(self.value[0])}–{_num(self.value[1])}{unit}"
        return f"{_num(self.value)}{unit}"


@dataclass(frozen=True)
class Simulated:
    """What the simulation gives for a claim.

    ``value``: the number, in the claim's unit (None for a stated claim);
    ``holds``: whether the simulation shows the claim's direction (None when
    the claim states none); ``text``: the value as shown, when a number alone
    does not say it; ``scale``: how the simulated conditions differ from the
    report's (e.g. the default scale's smaller transfers), None when they are the
    report's own.
    """

    value: Optional[float] = None
    holds: Optional[bool] = None
    text: Optional[str] = None
    scale: Optional[str] = None


Extractor = Callable[[Mapping[str, Any], bool], Optional[Simulated]]
#: Claim id -> extractor, or the reason the simulation cannot produce it.
ClaimMap = Mapping[str, Union[Extractor, str]]


@dataclass(frozen=True)
class ClaimRow:
    """One line of the claims table."""

    claim: Claim
    simulated: Optional[Simulated]
    verdict: str
    reason: Optional[str] = None
    #: For a claim the prediction misses: the nearest assumption that reproduces it
    #: ("matches if ..."), or "none in the space ..." (None where no assumption applies).
    explanation: Optional[str] = None
    #: Whether ``explanation`` names a setting under which the claim matches.
    explained: bool = False
    #: For a claim the prediction misses and no assumption explains: the
    #: experiment or argument that rules the models out for it.
    ruled_out: Optional[str] = None

    @property
    def ratio(self) -> Optional[float]:
        """Simulated / report value (the middle of a range); None without both numbers."""
        sim = self.simulated.value if self.simulated else None
        ref = self.claim.value
        if sim is None or ref is None:
            return None
        mid = (ref[0] + ref[1]) / 2 if isinstance(ref, tuple) else ref
        return sim / mid if mid else None

    def simulated_text(self) -> str:
        if self.simulated is None:
            return ""
        if self.simulated.text is not None:
            return self.simulated.text
        if self.simulated.value is None:
            return ""
        unit = self.claim.unit if self.claim.unit and self.claim.unit not in ("ratio", "count") else ""
        return f"{_num(self.simulated.value)} {unit}".strip()

    def as_dict(self) -> dict[str, Any]:
        c, s = self.claim, self.simulated
        ref = list(c.value) if isinstance(c.value, tuple) else c.value
        return {
            "id": c.id, "test": c.test, "kind": c.kind, "quantity": c.quantity, "conditions": c.conditions,
            "report_value": ref, "report_spread": list(c.spread) if c.spread else None, "unit": c.unit,
            "direction": c.direction, "simulated_value": s.value if s else None,
            "simulated_text": self.simulated_text() or None, "direction_holds": s.holds if s else None,
            "scale": s.scale if s else None, "ratio": self.ratio, "verdict": self.verdict, "reason": self.reason,
            "explanation": self.explanation, "explained": self.explained, "ruled_out": self.ruled_out,
        }


def _num(x: float) -> str:
    if x == 0:
        return "0"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.4g}"


def _pair(value: Any, field: str, claim_id: str) -> Union[None, float, tuple[float, float]]:
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        if len(value) != 2:
            raise ValueError(f"claim {claim_id}: {field} must be a number or [low, high], got {value!r}")
        low, high = float(value[0]), float(value[1])
        return (min(low, high), max(low, high))
    return float(value)


def parse_claims(doc: Mapping[str, Any]) -> list[Claim]:
    """The claims of one claims document (a report's ``claims.yaml`` as a dict)."""
    out = []
    for item in doc.get("claims") or []:
        cid = str(item["id"])
        kind = item.get("kind")
        if kind not in ("measured", "derived", "stated"):
            raise ValueError(f"claim {cid}: kind must be measured, derived or stated, got {kind!r}")
        spread = _pair(item.get("spread"), "spread", cid)
        out.append(Claim(
            id=cid, test=item.get("test"), quantity=str(item.get("quantity") or ""),
            conditions=dict(item.get("conditions") or {}), value=_pair(item.get("value"), "value", cid),
            unit=item.get("unit"), kind=kind, direction=item.get("direction"),
            spread=spread if isinstance(spread, tuple) else None, note=item.get("note"), where=item.get("where"),
        ))
    return out


def load_claims(report: str) -> list[Claim]:
    """The claims shipped with reproduction ``report`` (``data/<report>/claims.yaml``)."""
    from fabricsim.reproductions.base import data_dir

    path = data_dir(report) / "claims.yaml"
    return parse_claims(yaml.safe_load(path.read_text(encoding="utf-8")))


def band(claim: Claim) -> Optional[tuple[float, float]]:
    """The interval a simulated value must fall in to match ``claim`` (None for a stated claim)."""
    if claim.value is None:
        return None
    if claim.spread is not None:
        return claim.spread
    low, high = claim.value if isinstance(claim.value, tuple) else (claim.value, claim.value)
    return (low - TOLERANCE * abs(low), high + TOLERANCE * abs(high))


def verdict(claim: Claim, sim: Optional[Simulated]) -> str:
    """The verdict of ``sim`` against ``claim`` by the rule in the module docstring."""
    if sim is None:
        return "not run"
    if claim.kind == "stated" or claim.value is None:
        if sim.holds is None:
            raise ValueError(f"claim {claim.id}: a stated claim needs the simulation's direction (holds)")
        return "matches" if sim.holds else "misses"
    if sim.value is None or (isinstance(sim.value, float) and math.isnan(sim.value)):
        return "not run"
    low, high = band(claim)  # type: ignore[misc]
    if low <= sim.value <= high:
        return "matches"
    if claim.direction and sim.holds:
        return "direction only"
    return "misses"


def evaluate(claims: Sequence[Claim], mapping: ClaimMap, tables: Mapping[str, Any], full: bool,
             tests: Optional[Sequence[str]] = None) -> list[ClaimRow]:
    """Every claim's row: its simulated value and verdict (claims of tests not in
    ``tests`` are "not run" when ``tests`` is given)."""
    rows = []
    for claim in claims:
        entry = mapping.get(claim.id)
        if entry is None:
            raise KeyError(f"claim {claim.id} has neither an extractor nor a stated reason")
        if isinstance(entry, str):
            rows.append(ClaimRow(claim, None, "not simulated", entry))
            continue
        if tests and claim.test is not None and claim.test not in tests:
            rows.append(ClaimRow(claim, None, "not run"))
            continue
        try:
            sim = entry(tables, full)
        except (KeyError, IndexError, TypeError, ValueError, ZeroDivisionError) as exc:
            sim = None
            rows.append(ClaimRow(claim, None, "not run", f"its tables are incomplete ({type(exc).__name__}: {exc})"))
            continue
        rows.append(ClaimRow(claim, sim, verdict(claim, sim)))
    return rows


def _substituted(tables: Mapping[str, Any], alternative: Mapping[str, Any], only: Mapping[str, Any]) -> dict[str, Any]:
    """The prediction's tables with the rows an assumption's points replace swapped
    for theirs: rows whose ``only`` columns hold what the assumption's rows hold there
    go (a row may label a point's parameter its own way, e.g. a stack ``scenario:tcp``
    as ``scenario tcp``; a column the assumption's rows lack compares with ``only``'s
    value), the assumption's rows come in."""
    import polars as pl

    out = dict(tables)
    for key, alt in alternative.items():
        base = tables.get(key)
        if base is None or base.height == 0:
            out[key] = alt
            continue
        tests = [pl.col(c) == v for c, v in only.items() if c in base.columns and c not in alt.columns]
        shared = [c for c in only if c in base.columns and c in alt.columns]
        if shared:
            tests.append(pl.struct(shared).is_in(alt.select(pl.struct(shared)).to_series().unique().implode()))
        replaced = pl.all_horizontal(tests) if tests else pl.lit(True)
        out[key] = pl.concat([base.filter(~replaced), alt], how="diagonal_relaxed")
    return out


def explain(rows: Sequence[ClaimRow], mapping: ClaimMap, assumptions: Sequence[Any], tables: Mapping[str, Any],
            explanations: Mapping[tuple[str, int], Mapping[str, Any]], full: bool) -> list[ClaimRow]:
    """``rows`` with an explanation for each claim the prediction misses (or gets right in
    direction only) whose test has assumptions: the first setting of their spaces, in order,
    under which the claim matches, else "none in the space". The verdict stays the prediction's."""
    from dataclasses import replace

    out = []
    for row in rows:
        entry = mapping.get(row.claim.id)
        mine = [a for a in assumptions if a.test == row.claim.test]
        if row.verdict not in ("misses", "direction only") or not callable(entry) or not mine:
            out.append(row)
            continue
        found: Optional[str] = None
        tried = []
        for a in mine:
            for index, (text, _) in enumerate(a.space):
                alt = explanations.get((a.name, index))
                if alt is None:
                    continue
                tried.append(text)
                try:
                    sim = entry(_substituted(tables, alt, a.only), full)
                except (KeyError, IndexError, TypeError, ValueError, ZeroDivisionError):
                    continue
                if sim is not None and verdict(row.claim, sim) == "matches":
                    shown = ClaimRow(row.claim, sim, "matches").simulated_text()
                    found = f"matches if {text}" + (f" (then {shown})" if shown else "")
                    break
            if found:
                break
        if found:
            out.append(replace(row, explanation=found, explained=True))
        elif tried:
            spaces = ", ".join(dict.fromkeys(a.name for a in mine))
            out.append(replace(row, explanation=f"none in the space ({len(tried)} settings of {spaces} tried)"))
        else:
            out.append(row)
    return out


def rule_out(rows: Sequence[ClaimRow], ruled_out: Mapping[str, str]) -> list[ClaimRow]:
    """``rows`` with the report's ``ruled_out`` text on each claim the prediction
    misses (or gets right in direction only) that no assumption explains. A
    claim that matches, or that an assumption explains, keeps no such text:
    the note is about a miss. Raises ``KeyError`` for an id that is no claim."""
    from dataclasses import replace

    unknown = sorted(set(ruled_out) - {r.claim.id for r in rows})
    if unknown:
        raise KeyError(f"ruled_out names claims that do not exist: {', '.join(unknown)}")
    out = []
    for row in rows:
        text = ruled_out.get(row.claim.id)
        if text and row.verdict in ("misses", "direction only") and not row.explained:
            out.append(replace(row, ruled_out=text))
        else:
            out.append(row)
    return out


def counts(rows: Sequence[ClaimRow]) -> dict[str, int]:
    """How many rows got each verdict, plus ``judged`` (matches + direction only + misses),
    ``explained`` (claims the prediction misses that a named assumption reproduces) and
    ``ruled out`` (misses listed with the experiment that rules the models out)."""
    out = {v: 0 for v in VERDICTS}
    for r in rows:
        out[r.verdict] += 1
    out["judged"] = sum(out[v] for v in JUDGED)
    out["explained"] = sum(1 for r in rows if r.explained)
    out["ruled out"] = sum(1 for r in rows if r.ruled_out)
    return out


def summary_line(rows: Sequence[ClaimRow]) -> str:
    c = counts(rows)
    extra = [f"{c[v]} {v}" for v in ("direction only", "misses", "not run", "not simulated") if c[v]]
    explained = f"; {c['explained']} more explained by a named assumption" if c["explained"] else ""
    ruled = f"; {c['ruled out']} missed with the experiment that rules the models out" if c["ruled out"] else ""
    return (f"matches {c['matches']} of {c['judged']}" + (f" ({', '.join(extra)})" if extra else "")
            + explained + ruled)


def to_json(rows: Sequence[ClaimRow]) -> str:
    return json.dumps([r.as_dict() for r in rows], indent=1, sort_keys=True)


def conditions_text(conditions: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={'/'.join(str(x) for x in v) if isinstance(v, list) else v}"
                     for k, v in conditions.items())


def frame(tables: Mapping[str, Any], key: str) -> Any:
    """Table ``key`` (``<test>/<table>``) of the reproduction; KeyError (so: not run) when missing or empty."""
    found = tables.get(key)
    if found is None or found.height == 0:
        raise KeyError(f"table {key} missing")
    return found


def pick(tables: Mapping[str, Any], key: str, **where: Any) -> dict[str, Any]:
    """The one row of table ``key`` whose columns equal ``where`` (KeyError when there is none)."""
    import polars as pl

    found = frame(tables, key)
    for column, value in where.items():
        if column not in found.columns:
            raise KeyError(f"table {key} has no column {column}")
        found = found.filter(pl.col(column) == value)
    if found.height == 0:
        raise KeyError(f"table {key} has no row with {where}")
    return found.row(0, named=True)
