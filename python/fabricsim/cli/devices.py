"""``fabricsim devices``: the switch device presets."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from fabricsim import devices

__all__ = ["add_parser"]


def _devices(args: argparse.Namespace) -> int:
    if args.json:
        listing = [{"name": name, "summary": devices.get(name).summary} for name in devices.names()]
        sys.stdout.write(json.dumps(listing, indent=1) + "\n")
        return 0
    width = max(len(name) for name in devices.names())
    for name in devices.names():
        sys.stdout.write(f"{name:<{width}}  {devices.get(name).summary}\n")
    return 0


def add_parser(commands: Any) -> None:
    command = commands.add_parser("devices", help="list the switch device presets")
    command.add_argument("--json", action="store_true", help="print a JSON list of {name, summary} instead")
    command.set_defaults(handler=_devices)
