"""``fabricsim devices``: the switch device presets."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from fabricsim import devices

__all__ = ["add_parser"]


def _devices(args: argparse.Namespace) -> int:
    width = max(len(name) for name in devices.names())
    for name in devices.names():
        sys.stdout.write(f"{name:<{width}}  {devices.get(name).summary}\n")
    return 0


def add_parser(commands: Any) -> None:
    command = commands.add_parser("devices", help="list the switch device presets")
    command.set_defaults(handler=_devices)
