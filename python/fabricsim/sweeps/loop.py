"""The resumable loop over a job's points, shared by sweeps and reproductions.

For each point, in order: a point the catalog says is ``done`` and whose files
are still there is skipped; a point whose ``point.json`` was written before an
interruption (or by an earlier job into the same folder) is adopted into the
catalog; every other point is marked ``running`` and run on the backend. Each
finished point's row is written to the catalog as it arrives (only this, the
parent process, writes the catalog), failures are counted with their error (listed in the points' order),
and one progress bar covers the whole job.

What differs between jobs (the catalog row, the task a worker runs, how a
finished point is recognised) comes from a :class:`PointJob`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Generic, Optional, Sequence, TypeVar

from fabricsim.sweeps.progress import point_bar

__all__ = ["LoopResult", "PointJob", "run_points"]

P = TypeVar("P")
Record = dict[str, Any]


@dataclass(frozen=True)
class PointJob(Generic[P]):
    """How one kind of job treats its points.

    ``adopt(point)``: the record of a finished point from its folder, or None;
    ``row(point, record)``: the catalog row of a point with ``record`` (a
    finished point's record, or ``{"status": "running"}``); ``task(point)``: the
    arguments of the backend's target for the point; ``describe(point)``: the
    point in the progress bar and in error messages.
    """

    title: str
    adopt: Callable[[P], Optional[Record]]
    row: Callable[[P, Record], dict[str, Any]]
    task: Callable[[P], tuple[Any, ...]]
    describe: Callable[[P], str]


@dataclass
class LoopResult:
    ran: int = 0
    skipped: int = 0
    adopted: int = 0
    failed: int = 0
    errors: list[str] = field(default_factory=list)


def run_points(
    catalog: Any,
    points: Sequence[P],
    job: PointJob[P],
    execute: Callable[[list[tuple[P, tuple[Any, ...]]]], Any],
    progress: bool = False,
) -> LoopResult:
    """Run the points of ``job`` that are not finished yet; see the module docstring.
    ``point.id`` keys the catalog; ``execute(tasks)`` yields ``(point, record)`` as
    points finish (:mod:`fabricsim.sweeps.backends`)."""
    result = LoopResult()
    known = catalog.status()
    order = {id(point): index for index, point in enumerate(points)}
    failures: list[tuple[int, str]] = []

    def finish(point: P, record: Record) -> None:
        catalog.upsert(job.row(point, record))
        if record["status"] != "done":
            result.failed += 1
            failures.append((order[id(point)], f"{job.describe(point)}: {record.get('error')}"))

    tasks = []
    for point in points:
        adopted = job.adopt(point)
        if adopted is not None and known.get(point.id) == "done":  # type: ignore[attr-defined]
            result.skipped += 1
        elif adopted is not None:
            finish(point, adopted)
            result.adopted += 1
        else:
            catalog.upsert(job.row(point, {"status": "running", "error": None}))
            tasks.append((point, job.task(point)))

    bar = point_bar(progress, job.title, len(points), result.skipped + result.adopted, job.describe)
    try:
        if tasks:
            for point, record in execute(tasks):
                finish(point, record)
                result.ran += 1
                bar(point, record)
    finally:
        bar(None, None)
        # in the points' order, not the order they finished in: pages and messages
        # are the same whatever the number of workers
        result.errors = [text for _, text in sorted(failures)]
    return result
