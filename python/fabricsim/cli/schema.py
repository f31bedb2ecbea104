"""``fabricsim schema``: the scenario schema as JSON Schema, for editors (:mod:`fabricsim.schema.jsonschema`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from fabricsim.errors import OutputError

__all__ = ["add_parser"]


def _schema(args: argparse.Namespace) -> int:
    from fabricsim.schema.jsonschema import scenario_json_schema_text

    text = scenario_json_schema_text()
    if args.out is None:
        sys.stdout.write(text)
        return 0
    path = Path(args.out)
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise OutputError([(str(path), exc.strerror or str(exc))]) from None
    print(f"wrote {path}; select it in a scenario file with a first line")
    print(f"# yaml-language-server: $schema={path}")
    return 0


def add_parser(commands: Any) -> None:
    command = commands.add_parser(
        "schema", help="print the scenario schema as JSON Schema (for editors that check and complete YAML)"
    )
    command.add_argument("--out", metavar="FILE", help="write it to FILE instead of standard output")
    command.set_defaults(handler=_schema)
