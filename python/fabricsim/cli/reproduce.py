"""``fabricsim reproduce``: re-run every test of a published benchmark report on models of
the devices it compares, and write its tables and figures (see docs/reproduce.md)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["add_parser"]


def _minutes(seconds: float) -> str:
    return f"~{seconds / 60:.0f} min" if seconds >= 90 else f"~{seconds:.0f} s"


def _list() -> int:
    from fabricsim.reproductions import NAMES, get

    for name in NAMES:
        report = get(name)
        sys.stdout.write(f"{name:18} {report.title}  (default scale {_minutes(report.estimate_s())} on 2 cores)\n")
        for t in report.tests:
            n = len(t.points(False))
            sys.stdout.write(f"    {t.name:16} {t.title}: {n} points, {_minutes(n * t.seconds / 2)}; "
                             f"--full {len(t.points(True))} points\n")
        sys.stdout.write(f"    devices: {', '.join(report.devices)}\n")
    return 0


def _print_claims(name: str, outcome: Any, as_json: bool, wall: float) -> int:
    """The claims table of the page, as text or JSON, on stdout."""
    from fabricsim.reproductions import claims as C
    from fabricsim.reproductions.page import claim_rows
    from fabricsim.reproductions.registry import get

    report = get(name)
    rows = claim_rows(report, outcome.tables, outcome.full, outcome.tests, outcome.explanations)
    if as_json:
        sys.stdout.write(C.to_json(rows) + "\n")
        return 1 if outcome.failed else 0
    from rich.console import Console
    from rich.table import Table

    console = Console(file=sys.stdout, width=max(100, Console().width), highlight=False)
    sys.stdout.write(f"{name}: {C.summary_line(rows)} ({len(outcome.points)} points, {outcome.failed} failed, "
                     f"{wall:.0f} s); page: {outcome.page}\n")
    sys.stdout.flush()
    table = Table("claim", "conditions", "report", "simulated", "sim/report", "verdict", show_lines=False)
    for r in rows:
        sim = r.simulated_text() + (f" [{r.simulated.scale}]" if r.simulated and r.simulated.scale else "")
        verdict = r.verdict + (" (explained)" if r.explained else " (ruled out)" if r.ruled_out else "")
        note = ((r.reason or "") + (f" [explanation: {r.explanation}]" if r.explanation else "")
                + (f" [ruled out: {r.ruled_out}]" if r.ruled_out else ""))
        table.add_row(r.claim.id, C.conditions_text(r.claim.conditions), r.claim.report_text(),
                      sim + note, f"{r.ratio:.3g}" if r.ratio is not None else "", verdict)
    console.print(table)
    return 1 if outcome.failed else 0


def _reproduce(args: argparse.Namespace) -> int:
    from fabricsim.errors import FabricsimError
    from fabricsim.reproductions import job

    if args.list or not args.name:
        if not args.list:
            raise FabricsimError("name a reproduction or give --list")
        return _list()
    if args.update_golden:
        from fabricsim.reproductions.golden import update

        for path in update(args.name):
            sys.stdout.write(f"wrote {path}\n")
        return 0
    out = Path(args.out or f"reproduce-{args.name}")
    started = time.perf_counter()
    outcome = job.run_reproduction(args.name, out, full=args.full, tests=args.test, backend=args.backend,
                                   explain=not args.no_explain,
                                   workers=args.workers, ray_address=args.ray_address,
                                   progress=sys.stderr.isatty() if args.progress is None else args.progress)
    wall = time.perf_counter() - started
    if args.claims:
        return _print_claims(args.name, outcome, args.json, wall)
    sys.stdout.write(f"{args.name}: {len(outcome.points)} points, {outcome.ran} run, {outcome.skipped} already done, "
                     f"{outcome.failed} failed, {wall:.0f} s\n")
    if outcome.cpu:
        total = sum(seconds for _, seconds in outcome.cpu.values())
        sys.stdout.write(f"CPU of the points run: {total:.0f} s\n")
        for label, (n, seconds) in outcome.cpu.items():
            sys.stdout.write(f"  {label}: {seconds:.0f} s ({n} points)\n")
    for e in outcome.errors[:10]:
        sys.stdout.write(f"  failed: {e}\n")
    sys.stdout.write(f"wrote {outcome.page}\n")
    return 1 if outcome.failed else 0


def add_parser(commands: Any) -> None:
    from fabricsim.reproductions import NAMES

    command = commands.add_parser(
        "reproduce", help="re-run the tests of a published switch benchmark report and write its tables and figures",
        description="Reproductions: " + ", ".join(NAMES) + ". `fabricsim reproduce --list` shows their tests.",
    )
    command.add_argument("name", nargs="?", metavar="NAME", help="reproduction (see --list)")
    command.add_argument("--list", action="store_true", help="list reproductions, their tests and run-time estimates")
    command.add_argument("--out", metavar="DIR", help="output directory (default reproduce-NAME); rerun to resume")
    command.add_argument("--full", action="store_true", help="the report's own sizes and durations (slow)")
    command.add_argument("--test", action="append", metavar="T", help="run only this test (repeatable)")
    command.add_argument("--backend", default="local", choices=("local", "ray"), help="where points run")
    command.add_argument("--workers", type=int, metavar="N", help="parallel points (default: cores)")
    command.add_argument("--ray-address", metavar="ADDR", help="Ray cluster address (--backend ray)")
    progress = command.add_mutually_exclusive_group()
    progress.add_argument("--progress", action="store_true", default=None,
                          help="show the progress bar even without a terminal")
    progress.add_argument("--no-progress", dest="progress", action="store_false", help="never show a progress bar")
    command.add_argument("--claims", action="store_true",
                         help="after the run (or resume), print every claim of the report beside the simulated value, "
                              "with its verdict (the page's claims tables)")
    command.add_argument("--json", action="store_true", help="with --claims: the claims as JSON")
    command.add_argument("--no-explain", action="store_true",
                         help="skip the points that search the report's assumptions for explanations of missed claims")
    command.add_argument("--update-golden", action="store_true",
                         help="refresh tests/golden/reproduce/NAME.txt from the golden tests at the default scale")
    command.set_defaults(handler=_reproduce)
