"""The output directory of a run: checked before the simulation, cleared of a previous run's files before writing.

A run directory holds ``summary.json`` (its mark), ``timing.json``,
``scenario.yaml``, one ``<table>.parquet`` per table, ``report.html``,
``plots/*.svg`` and packet captures ``pcap/*.pcapng`` / ``pcap/*.pcap``. Writing a run into a directory that holds a previous run
removes that run's files first (and only those: other files stay), so a
report never mixes two runs. A directory that is not empty and is not a run
directory is refused: its files are not ours to remove or to mix with.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from fabricsim.errors import OutputError

__all__ = ["MARK", "prepare", "remove_previous_run"]

MARK = "summary.json"
_OWN_SUFFIXES = (".parquet",)
_OWN_NAMES = ("summary.json", "timing.json", "scenario.yaml", "report.html")


def _is_own(path: Path) -> bool:
    name = path.name
    return name in _OWN_NAMES or name.endswith(_OWN_SUFFIXES) or name.endswith(".tmp")


def prepare(directory: str | os.PathLike[str]) -> Path:
    """Check that a run can be written to ``directory`` before anything is
    simulated: it is created if missing, must be writable, and must be empty
    or hold a previous run. Raises :class:`~fabricsim.errors.OutputError`."""
    path = Path(directory)
    where = str(path)
    if path.exists() and not path.is_dir():
        raise OutputError([(where, "exists and is not a directory")])
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError([(where, exc.strerror or str(exc))]) from None
    try:
        entries = [entry.name for entry in os.scandir(path)]
    except OSError as exc:
        raise OutputError([(where, exc.strerror or str(exc))]) from None
    if entries and MARK not in entries:
        shown = ", ".join(sorted(entries)[:5]) + (", ..." if len(entries) > 5 else "")
        raise OutputError(
            [(where, f"the directory is not empty and holds no previous run ({shown}); choose a new or empty one")]
        )
    try:
        with tempfile.NamedTemporaryFile(dir=path, prefix=".fabricsim-write-check-"):
            pass
    except OSError as exc:
        raise OutputError([(where, f"not writable: {exc.strerror or exc}")]) from None
    return path


def remove_previous_run(directory: Path) -> None:
    """Remove the files of a previous run from ``directory`` (see the module
    documentation); files that are not a run's are left alone."""
    if not (directory / MARK).is_file():
        return
    for entry in directory.iterdir():
        if entry.is_file() and _is_own(entry):
            entry.unlink()
    for folder, suffixes in (("plots", (".svg",)), ("pcap", (".pcapng", ".pcap", ".tmp"))):
        sub = directory / folder
        if sub.is_dir():
            for entry in sub.iterdir():
                if entry.is_file() and entry.suffix in suffixes:
                    entry.unlink()
            if not any(sub.iterdir()):
                sub.rmdir()
