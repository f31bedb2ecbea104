"""Arguments shared by subcommands."""

from __future__ import annotations

import argparse

__all__ = ["scenario_arguments"]


def scenario_arguments(command: argparse.ArgumentParser) -> None:
    """``SCENARIO`` and repeatable ``--set KEY=VALUE`` overrides."""
    command.add_argument("scenario", metavar="SCENARIO", help="scenario YAML file")
    command.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a scenario setting, e.g. --set traffic.0.rate=5Gbps (repeatable; in a sweep, for every point)",
    )
