"""``fabricsim dumbbell``: the real-Linux TCP dumbbell (:mod:`fabricsim.validation.dumbbell`).

``record`` measures the reference setups in Linux (root) and writes the
recordings; ``markdown``, ``readers``, ``twin``, ``cadence`` and ``grid``
print the tables of docs/validation/linux.md from the recordings, with their
fabricsim twins (no root). Paths default to the stored recordings under
``python/fabricsim/validation/data/``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from fabricsim.errors import FabricsimError, unknown_value

__all__ = ["add_parser"]

#: :data:`fabricsim.validation.dumbbell.GRID_DIMENSIONS`' names, as ``grid`` flags.
GRID_FLAGS = ("pacing", "host", "router", "reader")


def _selected(args: argparse.Namespace, path: Path) -> list[dict[str, Any]]:
    from fabricsim.validation.dumbbell import recorded

    return [e for e in recorded(path) if not args.only or any(part in e["name"] for part in args.only)]


def _check_values(flag: str, given: list[str] | str | None, allowed: dict[str, Any]) -> None:
    for value in [given] if isinstance(given, str) else given or []:
        if value not in allowed:
            raise FabricsimError(f"--{flag}: {unknown_value(value, list(allowed))}")


def _readers(args: argparse.Namespace) -> int:
    from fabricsim.validation.dumbbell import RESULTS, reader_markdown, reader_runs_markdown

    experiments = _selected(args, args.path or RESULTS)
    print(reader_markdown(experiments, seeds=tuple(range(1, args.seeds + 1))))
    print()
    print(reader_runs_markdown(experiments))
    return 0


def _grid(args: argparse.Namespace) -> int:
    from fabricsim.validation.dumbbell import GRID_DIMENSIONS, RESULTS, TRACED_RESULTS, grid_markdown, twin_grid

    for dim in GRID_DIMENSIONS:
        _check_values(dim, getattr(args, dim), GRID_DIMENSIONS[dim])
    only = {dim: getattr(args, dim) for dim in GRID_DIMENSIONS if getattr(args, dim)}
    all_rows = []
    for path in args.path or [RESULTS, TRACED_RESULTS]:
        experiments = [e for e in _selected(args, path) if e["setup"]["size"] is None and e["setup"]["senders"] > 1]
        rows = twin_grid(experiments, tuple(range(1, args.seeds + 1)), args.workers, only)
        all_rows += [{"recording": path.name, **row} for row in rows]
        print(f"{path.name}:\n\n{grid_markdown(experiments, rows)}\n", flush=True)
    if args.json:
        args.json.write_text(json.dumps(all_rows, indent=0) + "\n")
    return 0


def _band(args: argparse.Namespace) -> int:
    from fabricsim.validation.dumbbell import GRID_RESULTS
    from fabricsim.validation.dumbbell.band import OTHER_RECORDINGS, band_markdown, judge_recordings

    path = args.path or GRID_RESULTS
    if not path.exists():
        raise FabricsimError(f"band: no recordings at {path}; record them with `fabricsim dumbbell record --grid` (root)")
    # A stored recording's misses are also judged against the other host load's grid and the
    # recordings of the same points at another time.
    path = next((stored for stored in OTHER_RECORDINGS if stored.resolve() == path.resolve()), path)
    points = judge_recordings([path], seed=args.seed, workers=args.workers, shaped_router=args.shaped_router,
                              select=lambda p: _selected(args, p))[path]
    print(band_markdown(points))
    if args.json:
        args.json.write_text(json.dumps([p.to_dict() for p in points], indent=1) + "\n")
    return 0


def _cadence(args: argparse.Namespace) -> int:
    from fabricsim.validation.dumbbell import GRID_DIMENSIONS, UNPACED_RESULTS, cadence_markdown

    _check_values("host", args.host, GRID_DIMENSIONS["host"])
    print(cadence_markdown(_selected(args, args.path or UNPACED_RESULTS), seed=args.seed, host=args.host))
    return 0


def _twin(args: argparse.Namespace) -> int:
    from fabricsim.validation.dumbbell import RESULTS, twin_markdown

    print(twin_markdown(_selected(args, args.path or RESULTS), seeds=tuple(range(1, args.seeds + 1))))
    return 0


def _markdown(args: argparse.Namespace) -> int:
    from fabricsim.validation.dumbbell import RESULTS, markdown

    print(markdown(_selected(args, args.path or RESULTS), with_simulation=not args.no_simulation))
    return 0


def _record(args: argparse.Namespace) -> int:
    from fabricsim.validation.dumbbell import (
        GRID_RESULTS,
        REFERENCE_SETUPS,
        RESULTS,
        grid_setups,
        DumbbellSetup,
        dumbbells,
        measure,
        recorded,
        write_recorded,
    )
    from fabricsim.validation.linux import LabError

    out = args.out or (GRID_RESULTS if args.grid else RESULTS)
    duration = DumbbellSetup.duration_s if args.duration is None else args.duration
    existing = {e["name"]: e for e in recorded(out)} if out.exists() else {}
    if args.reprobe_latency:
        return _reprobe(args, out, list(existing.values()))
    setups = REFERENCE_SETUPS
    if args.grid:
        if args.rate or args.buffer:
            raise FabricsimError("record: --grid has its own rates and buffers (drop --rate and --buffer)")
        setups = grid_setups(mtu=args.mtu, duration_s=10.0 if args.duration is None else args.duration)
    elif args.rate or args.unpaced:
        setups = dumbbells(args.rate or "1Gbps", args.buffer, duration, args.unpaced)
    elif args.buffer or duration != DumbbellSetup.duration_s:
        raise FabricsimError("record: --buffer and --duration apply to the dumbbells of --rate or --unpaced")
    # Experiments of the file that are not among these setups stay, first.
    names = {setup.name for setup in setups}
    experiments = [e for name, e in existing.items() if name not in names]
    for setup in setups:
        if args.only and not any(part in setup.name for part in args.only):
            if setup.name in existing:
                experiments.append(existing[setup.name])
            continue
        print(f"measuring {setup.name} ({args.repeats} repeats)", flush=True)
        try:
            experiments.append(
                measure(
                    setup,
                    repeats=args.repeats,
                    max_attempts=args.max_attempts,
                    nice=args.nice,
                    pause_s=args.pause,
                    latency_s=args.latency,
                    starved_share=args.starved_share,
                    awake_latency=args.awake_latency,
                )
            )
        except LabError as exc:
            print(f"  {exc}", flush=True)
            if setup.name in existing:
                experiments.append(existing[setup.name])
            continue
        write_recorded(out, experiments)
    # The setups after the last one measured were kept above but not yet written.
    write_recorded(out, experiments)
    return 0


def _reprobe(args: argparse.Namespace, out: Any, experiments: list[dict[str, Any]]) -> int:
    """``record --reprobe-latency``: every stored experiment of ``out`` (or those of
    ``--only``) gets its one-way latency probed again with the CPUs kept awake."""
    from fabricsim.validation.dumbbell import write_recorded
    from fabricsim.validation.dumbbell.measurement import reprobe_latency
    from fabricsim.validation.linux import LabError, unavailable_reason

    if not experiments:
        raise FabricsimError(f"record --reprobe-latency: no recordings at {out}")
    reason = unavailable_reason(("ip", "tc", "sockperf"))
    if reason:
        raise FabricsimError(f"record --reprobe-latency: the lab is not available here: {reason}")
    for record in experiments:
        if args.only and not any(part in record["name"] for part in args.only):
            continue
        print(f"probing {record['name']} ({len(record['runs'])} runs)", flush=True)
        try:
            reprobe_latency(record, latency_s=args.latency, nice=args.nice)
        except LabError as exc:
            print(f"  {exc}", flush=True)
            continue
        write_recorded(out, experiments)
    return 0


def _only(command: argparse.ArgumentParser, what: str = "experiments") -> None:
    command.add_argument("--only", action="append", default=[], help=f"only {what} whose name contains this")


def add_parser(commands: Any) -> None:
    command = commands.add_parser(
        "dumbbell",
        help="the real-Linux TCP dumbbell: record it (root), print its tables and its fabricsim twin's",
        description=(
            "The TCP dumbbell in real Linux network namespaces and its fabricsim twin "
            "(docs/validation/linux.md). PATH defaults to the stored recordings."
        ),
    )
    sub = command.add_subparsers(dest="dumbbell_command", required=True, metavar="ACTION")

    rec = sub.add_parser("record", help="measure the reference setups in Linux (root) and write the results JSON")
    rec.add_argument("--out", type=Path, help="recordings file (default: the stored dumbbell.json)")
    rec.add_argument("--repeats", type=int, default=3)
    rec.add_argument("--max-attempts", type=int, help="runs in all, CPU-starved ones included (3 x repeats)")
    rec.add_argument("--nice", type=int, default=0, help="niceness of the traffic processes (negative: priority)")
    _only(rec, "setups")
    rec.add_argument(
        "--unpaced",
        action="store_true",
        help="every namespace's default congestion control is the experiment's (no BBR pacing inherited)",
    )
    rec.add_argument("--rate", help="record the 2x1 and 4x1 Reno and CUBIC dumbbells at this bottleneck rate")
    rec.add_argument("--buffer", help="their bfifo (default: 2 ms at --rate, as 250KB at 1Gbps)")
    rec.add_argument("--duration", type=float, help="their seconds (default 20)")
    rec.add_argument("--pause", type=float, default=20.0, help="seconds between a starved run and the next")
    rec.add_argument(
        "--grid",
        action="store_true",
        help="record the grid (rates x bfifo sizes x 1-8 senders x reno/cubic, unpaced, 10 s) into "
        "dumbbell-grid.json.gz",
    )
    rec.add_argument("--mtu", type=int, choices=(1500, 9000), default=9000, help="the grid's MTU (9000)")
    rec.add_argument("--latency", type=float, default=3.0, help="seconds of the one-way latency probe per run (3)")
    rec.add_argument("--awake-latency", action="store_true",
                     help="probe the one-way latency with every CPU kept busy at the lowest priority (no idle wake-ups)")
    rec.add_argument("--reprobe-latency", action="store_true",
                     help="probe the latency of the stored experiments of --out again, CPUs kept awake, and keep "
                          "their earlier probes as one_way_latency_idle_us")
    rec.add_argument(
        "--starved-share",
        type=float,
        default=0.97,
        help="a run below this share of the bottleneck's payload rate counts as CPU-starved and runs again (0.97)",
    )
    rec.set_defaults(handler=_record)

    md = sub.add_parser("markdown", help="print the tables of the recorded results (and their fabricsim twins)")
    md.add_argument("--path", type=Path)
    md.add_argument("--no-simulation", action="store_true")
    _only(md)
    md.set_defaults(handler=_markdown)

    rd = sub.add_parser("readers", help="Linux against the twin with the ideal and the measured reader")
    rd.add_argument("--path", type=Path)
    rd.add_argument("--seeds", type=int, default=3)
    _only(rd)
    rd.set_defaults(handler=_readers)

    tw = sub.add_parser("twin", help="Linux against the lab twin over seeds, with the lab's CPU headroom")
    tw.add_argument("--path", type=Path)
    tw.add_argument("--seeds", type=int, default=3)
    _only(tw)
    tw.set_defaults(handler=_twin)

    cd = sub.add_parser(
        "cadence", help="the kernel's receiver (ACKs, backlog, reads, RTT outside the bfifo) against the twin's"
    )
    cd.add_argument("--path", type=Path, help="recordings file (default: the stored dumbbell-unpaced.json)")
    cd.add_argument("--seed", type=int, default=1)
    _only(cd)
    cd.add_argument("--host", default="ideal", metavar="NAME", help="the twin's hosts (a grid host value)")
    cd.set_defaults(handler=_cadence)

    bd = sub.add_parser(
        "band", help="the twin against the recorded grid: ratios to the kernel and whether each is in its band"
    )
    bd.add_argument("--path", type=Path, help="recordings file (default: the stored dumbbell-grid.json.gz)")
    bd.add_argument("--seed", type=int, default=1)
    bd.add_argument("--workers", type=int, default=1)
    bd.add_argument("--json", type=Path, help="also write every point here")
    bd.add_argument("--shaped-router", action="store_true",
                    help="the twin's bottleneck as the lab builds it: the router's veth shaped by an htb class")
    _only(bd)
    bd.set_defaults(handler=_band)

    gr = sub.add_parser("grid", help="the twin over pacing x host model x router CPU x reader, as ratios to Linux")
    gr.add_argument("--path", type=Path, action="append", help="recordings (default: both)")
    gr.add_argument("--seeds", type=int, default=3)
    gr.add_argument("--workers", type=int, default=1)
    _only(gr)
    gr.add_argument("--json", type=Path, help="also write every row (per seed) here")
    for dim in GRID_FLAGS:
        gr.add_argument(f"--{dim}", action="append", metavar="VALUE", help=f"only these {dim} values (repeatable)")
    gr.set_defaults(handler=_grid)
