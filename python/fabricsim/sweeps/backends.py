"""Where the points of a sweep run: a local process pool or a Ray cluster. Each point is :func:`run_point`."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from fabricsim import build
from fabricsim.runner import run
from fabricsim.schema import load
from fabricsim.sweeps.catalog import metrics_of
from fabricsim.sweeps.grid import Point, SweepError

__all__ = ["local_backend", "ray_backend", "run_point"]


def run_point(scenario_path: str, overrides: Sequence[str], seed: int, out_dir: str) -> dict[str, Any]:
    """Run one point and write its outputs; never raises (errors are returned).

    The record (also written to ``point.json`` last, for resuming) names the
    point's Parquet files relative to its directory; ``timing`` (wall time) is
    returned beside it, and kept in the point's ``timing.json``.
    """
    started = time.perf_counter()
    directory = Path(out_dir)
    timing: dict[str, Any] = {}
    try:
        if directory.exists():
            shutil.rmtree(directory)
        scenario = load(scenario_path, list(overrides))
        result = run(scenario, seed=seed)
        files = [p.name for p in result.write(directory, report=False) if p.suffix == ".parquet"]
        metrics = metrics_of(result)
        timing = dict(result.timing)
        record = {"status": "done", "error": None, "metrics": metrics, "files": files, "seed": seed,
                  "build": build.fingerprint()}
        marker = directory / "point.json"
        marker.with_suffix(".tmp").write_text(json.dumps(record, sort_keys=True, default=str), encoding="utf-8")
        os.replace(marker.with_suffix(".tmp"), marker)
    except Exception as exc:  # one failed point never stops the sweep
        message = str(exc).strip().replace("\n", "; ") or type(exc).__name__
        record = {"status": "failed", "error": f"{type(exc).__name__}: {message}", "metrics": {}, "files": [],
                  "seed": seed}
    record["timing"] = timing
    record["elapsed_s"] = time.perf_counter() - started
    return record


def _die_with_parent(parent: int) -> None:
    """Worker initializer: the worker ends when the sweep's process does, even
    when that one is killed (SIGKILL leaves no chance to stop the pool).

    On Linux the kernel sends SIGKILL to the worker when its parent exits
    (``prctl(PR_SET_PDEATHSIG)``); everywhere a watchdog thread also checks
    every half second that the parent is still there (a worker busy in the
    core has released the GIL, so the thread runs).
    """
    import threading

    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            pr_set_pdeathsig = 1
            libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):  # no libc prctl: the watchdog alone
            pass
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(0.5)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="fabricsim-parent-watch", daemon=True).start()


def _stop_pool(pool: Any, futures: Any) -> None:
    """Cancel every queued point and end the workers now: an interrupted job keeps
    the points that finished (their rows are in the catalog) and runs no more."""
    for future in futures:
        future.cancel()
    processes = list((getattr(pool, "_processes", None) or {}).values())
    for process in processes:
        with contextlib.suppress(Exception):
            process.kill()
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        with contextlib.suppress(Exception):
            process.join(timeout=1)


def local_backend(workers: int, target: Callable[..., dict[str, Any]] = run_point
                  ) -> Callable[[list[tuple[Point, tuple[Any, ...]]]], Any]:
    """Runs ``target(*args)`` for each task in a process pool (``target`` must be importable by name)."""

    def execute(tasks: list[tuple[Point, tuple[Any, ...]]]) -> Any:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        context = multiprocessing.get_context("spawn")  # no fork of polars/rayon threads
        pool = ProcessPoolExecutor(
            max_workers=workers, mp_context=context, initializer=_die_with_parent, initargs=(os.getpid(),)
        )
        futures = {}
        try:
            futures = {pool.submit(target, *args): point for point, args in tasks}
            for future in as_completed(futures):
                point = futures[future]
                try:
                    record = future.result()
                except Exception as exc:  # a worker died
                    record = {"status": "failed", "error": f"worker failed: {type(exc).__name__}: {exc}",
                              "metrics": {}, "files": [], "seed": point.seed}
                yield point, record
        except BaseException:  # Ctrl-C, or the consumer stopped: no queued point starts
            _stop_pool(pool, futures)
            raise
        pool.shutdown(wait=True)

    return execute


def ray_backend(address: Optional[str], workers: int, target: Callable[..., dict[str, Any]] = run_point
                ) -> Callable[[list[tuple[Point, tuple[Any, ...]]]], Any]:
    try:
        import ray
    except ImportError:
        raise SweepError("the ray backend needs Ray: pip install 'fabricsim[ray]' (or pip install ray)") from None

    def execute(tasks: list[tuple[Point, tuple[Any, ...]]]) -> Any:
        if not ray.is_initialized():
            if address:
                ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
            else:
                ray.init(num_cpus=workers, ignore_reinit_error=True, log_to_driver=False, include_dashboard=False)
        remote = ray.remote(num_cpus=1)(target)
        pending = {remote.remote(*args): point for point, args in tasks}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                point = pending.pop(ref)
                try:
                    record = ray.get(ref)
                except Exception as exc:
                    record = {"status": "failed", "error": f"ray task failed: {type(exc).__name__}: {exc}",
                              "metrics": {}, "files": [], "seed": point.seed}
                yield point, record

    return execute
