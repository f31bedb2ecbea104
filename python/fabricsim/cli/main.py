"""The ``fabricsim`` command: ``run``, ``validate``, ``devices``, ``burst-absorption``, ``forwarding``,
``fairness``, ``rfc2544``, ``power``, ``ai-fabric``, ``workloads``, ``sweep``, ``report``, ``reproduce``, ``dumbbell``, ``bench``
and ``schema``.

Exit status: 0 on success, 2 for problems the user can fix (invalid scenario,
missing file, unwritable output; reported as ``error: ...``), 1 when the
simulation cannot go on (``error: simulated time stopped advancing ...``, the
partial results written) and for internal errors (``internal error: ...``; set
``FABRICSIM_DEBUG=1`` for a traceback), 130 when interrupted (``run`` writes
the results up to the interruption).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback
from typing import Sequence

from fabricsim import gcpause
from fabricsim.errors import FabricsimError, SimulationError

__all__ = ["main"]

#: Subcommand modules of :mod:`fabricsim.cli`, in --help order, each with the
#: commands it adds (``run`` also adds ``validate``). A command line naming one
#: of these commands imports and builds only that module's parser: building all
#: of them costs more than the rest of the command line (each parser looks up
#: its messages' translations, some modules import their registries).
COMMANDS = {
    "run": ("run", "validate", "validate linux"),
    "devices": ("devices",),
    "burst": ("burst-absorption",),
    "forwarding": ("forwarding",),
    "fairness": ("fairness",),
    "rfc2544": ("rfc2544",),
    "power": ("power",),
    "ai_fabric": ("ai-fabric",),
    "workloads": ("workloads",),
    "sweep": ("sweep",),
    "report": ("report",),
    "reproduce": ("reproduce",),
    "dumbbell": ("dumbbell",),
    "bench": ("bench",),
    "schema": ("schema",),
}


class _Version(argparse.Action):
    """``--version``: the installed version, looked up only when asked for."""

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        import fabricsim

        print(f"{parser.prog} {fabricsim.__version__}")
        parser.exit()


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser: with every subcommand, or only with ``command``'s
    module when ``command`` names one (the help and errors of that command are
    the same either way)."""
    parser = argparse.ArgumentParser(
        prog="fabricsim", description="Deterministic packet-level simulator of data-center switch fabrics."
    )
    parser.add_argument("--version", action=_Version, nargs=0, help="show the version and exit")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    modules = [name for name, names in COMMANDS.items() if command in names] or list(COMMANDS)
    for name in modules:
        importlib.import_module(f"fabricsim.cli.{name}").add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``fabricsim`` command; returns the exit status.

    Called as the command (``argv`` not given), its pauses of the collector
    freeze what they built, and it freezes the objects alive before returning
    (:func:`fabricsim.gcpause.freeze_after_pauses`, :func:`fabricsim.gcpause.freeze`),
    since the process ends next; called with ``argv`` (from a program), it
    freezes nothing."""
    # The command validates only its own scenario schema: pydantic's search of every installed
    # distribution for third-party validation plugins (about 0.1 s) is skipped unless the
    # environment asks for plugins explicitly.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    as_command = argv is None
    if as_command:
        gcpause.freeze_after_pauses()
    try:
        return _main(list(sys.argv[1:] if argv is None else argv))
    finally:
        if as_command:
            # The process ends next: with every object alive now frozen, the interpreter's
            # exit neither collects nor tears down the modules, schema and tables one by one
            # (about 0.04 s of CPU, a tenth of a small run's whole command).
            gcpause.freeze()


def _main(argv: list[str]) -> int:
    if argv[:2] == ["validate", "linux"]:  # a command of its own, with its own options and help
        argv = ["validate linux", *argv[2:]]
    args = _parser(argv[0] if argv else None).parse_args(argv)
    try:
        return int(args.handler(args))
    except SimulationError as exc:
        if os.environ.get("FABRICSIM_DEBUG") == "1":
            traceback.print_exc()
        for line in str(exc).splitlines() or [type(exc).__name__]:
            print(f"error: {line}", file=sys.stderr)
        return 1
    except FabricsimError as exc:
        for line in str(exc).splitlines() or [type(exc).__name__]:
            print(f"error: {line}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if os.environ.get("FABRICSIM_DEBUG") == "1":
            traceback.print_exc()
        print(f"internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
