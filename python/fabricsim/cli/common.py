"""Arguments shared by subcommands."""

from __future__ import annotations

import argparse
from contextlib import contextmanager
from typing import Callable, Iterator, Optional

from fabricsim.errors import ScenarioError

__all__ = ["FRAME_SIZE", "flag_names", "integer", "scenario_arguments"]


def scenario_arguments(command: argparse.ArgumentParser, sweep: bool = False) -> None:
    """``SCENARIO`` and repeatable ``--set KEY=VALUE`` overrides (``sweep``: applied to every point)."""
    command.add_argument("scenario", metavar="SCENARIO", help="scenario YAML file")
    command.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a scenario setting, e.g. --set traffic.0.rate=5Gbps (repeatable"
             + ("; applied to every point of the sweep)" if sweep else ")"),
    )


def integer(minimum: int, maximum: Optional[int] = None) -> Callable[[str], int]:
    """An argparse ``type``: a whole number from ``minimum`` to ``maximum``
    (argparse names the flag in its error and exits with status 2)."""
    allowed = f"from {minimum:,} to {maximum:,}" if maximum is not None else f">= {minimum:,}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number {allowed}, got {text!r}") from None
        if value < minimum or (maximum is not None and value > maximum):
            raise argparse.ArgumentTypeError(f"must be {allowed} (got {text})")
        return value

    return parse


FRAME_SIZE = integer(64, 65535)
"""An Ethernet frame size in bytes, as the scenarios' ``frame_size`` allows."""


@contextmanager
def flag_names(**flags: str) -> Iterator[None]:
    """Name the command-line flag in an experiment's error about one of its
    parameters: ``flag_names(sources="--sources")`` turns the issue
    ``sources: must be ...`` into ``--sources: must be ...``."""
    try:
        yield
    except ScenarioError as exc:
        if not any(issue.path in flags for issue in exc.issues):
            raise
        raise ScenarioError([(flags.get(i.path, i.path), i.message) for i in exc.issues], exc.source) from None
