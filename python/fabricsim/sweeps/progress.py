"""The progress bar of a job over points (sweeps and reproductions)."""

from __future__ import annotations

from typing import Any, Callable

__all__ = ["point_bar"]


def point_bar(
    enabled: bool, title: str, total: int, done: int, describe: Callable[[Any], str]
) -> Callable[[Any, Any], None]:
    """A rich progress bar on stderr over ``total`` points, ``done`` of them
    already finished. Call the result with each finished point and its record
    (the bar shows ``ok`` or ``FAILED`` and ``describe(point)``), and with
    ``(None, None)`` to close it."""
    if not enabled:
        return lambda point, record: None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    bar = Progress(TextColumn(f"[bold]{title}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   TimeRemainingColumn(), TextColumn("{task.fields[last]}"), console=Console(stderr=True))
    bar.start()
    task = bar.add_task(title, total=total, completed=done, last="")

    def update(point: Any, record: Any) -> None:
        if point is None:
            bar.stop()
            return
        mark = "ok" if record["status"] == "done" else "FAILED"
        bar.update(task, advance=1, last=f"{mark} {describe(point)}"[:70])

    return update
