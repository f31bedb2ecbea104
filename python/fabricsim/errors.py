"""Exceptions raised by fabricsim for problems the user can fix."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Iterable, NamedTuple, Sequence

__all__ = [
    "FabricsimError",
    "Issue",
    "OutputError",
    "RunInterrupted",
    "ScenarioError",
    "SimulationError",
    "unknown_key",
    "unknown_value",
]


class FabricsimError(Exception):
    """Base class of the errors fabricsim reports to users (bad input, unwritable output)."""


class Issue(NamedTuple):
    """One problem found in a scenario.

    ``path`` is the dotted field path (``traffic[1].rate``), empty when the
    problem concerns the document as a whole.
    """

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class ScenarioError(FabricsimError):
    """A scenario is invalid; carries every problem found.

    ``str()`` gives one line per issue, prefixed by the source (usually the
    file name), the first :attr:`SHOWN` of them and then how many more there
    are (all are in :attr:`issues`)::

        scenario.yaml: topology.hosts: must be >= 1 (got -3)
    """

    SHOWN = 20

    def __init__(self, issues: Iterable[tuple[str, str]], source: str | None = None) -> None:
        self.issues = [Issue(*issue) for issue in issues]
        self.source = source
        super().__init__(self.issues, source)

    def __str__(self) -> str:
        prefix = f"{self.source}: " if self.source else ""
        lines = [f"{prefix}{issue}" for issue in self.issues[: self.SHOWN]]
        hidden = len(self.issues) - self.SHOWN
        if hidden > 0:
            lines.append(f"{prefix}... and {hidden:,} more {'issue' if hidden == 1 else 'issues'} of the same scenario")
        return "\n".join(lines)


class OutputError(FabricsimError):
    """Some output files could not be written.

    ``failures`` lists (path, reason); ``written`` the files that were written.
    """

    def __init__(self, failures: Iterable[tuple[str, str]], written: Iterable[Path] = ()) -> None:
        self.failures = list(failures)
        self.written = list(written)
        super().__init__(self.failures, self.written)

    def __str__(self) -> str:
        return "\n".join(f"cannot write {path}: {reason}" for path, reason in self.failures)


class SimulationError(FabricsimError):
    """The simulation could not go on: simulated time stopped advancing (the
    core's stall guard names the component), or the core failed internally.

    ``result`` holds the results computed up to the failure (a
    :class:`fabricsim.Result` whose summary has ``error``), or ``None`` when
    the core's state was lost (an internal error).
    """

    def __init__(self, message: str, result: object = None) -> None:
        self.result = result
        super().__init__(message)


class RunInterrupted(KeyboardInterrupt):
    """A run stopped by Ctrl-C (``KeyboardInterrupt``). ``result`` holds the
    results up to the interruption (its summary has ``interrupted: true``),
    or ``None`` when the run had not started."""

    def __init__(self, result: object = None) -> None:
        self.result = result
        super().__init__("interrupted")


def _names(values: Iterable[object]) -> str:
    return ", ".join(str(value) for value in values)


def unknown_value(value: object, allowed: Sequence[str]) -> str:
    """Message for a value outside an enumeration, listing the allowed ones."""
    return f"unknown value {value!r}; allowed: {_names(allowed)}"


def unknown_key(key: object, allowed: Sequence[str]) -> str:
    """Message for an unexpected mapping key, listing the allowed ones."""
    message = f"unknown key {key!r}; allowed: {_names(allowed)}"
    close = difflib.get_close_matches(str(key), allowed, n=1)
    return f"{message} (did you mean {close[0]!r}?)" if close else message
