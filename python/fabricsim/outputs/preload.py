"""Importing what the HTML report needs in a background thread while the core runs.

A run that will draw its report pays, in a fresh process, about half a second
of CPU to import polars, numpy and matplotlib, pick matplotlib's backend and
load its font list before the first plot (BENCHMARKS.md, "The run report beside
the core run"). The core releases the GIL while it builds the world and runs, so
:func:`fabricsim.runner.run` (with ``prepare_report=True``, as ``fabricsim run``
without ``--no-report`` does) starts :class:`Preload` just before the core
starts and waits for it as soon as the core is done, before the main thread
imports anything itself: the two threads never import at the same time, so
there is no import-lock ordering between them to deadlock on. The overlap
pays while a core is free. A run without a progress bar is one call into
the core, which takes the GIL back only every million events or so to look
for signals; with a progress bar the core hands back 200 times over the
scenario's duration, each time possibly waiting up to Python's switch
interval (5 ms) for the preload to let the GIL go, so while the preload is
alive it hands back ten times less often.

The thread only imports modules and looks up the default font, as the report
would on its first plot; it draws nothing. If anything in it fails, the
exception is kept on :attr:`Preload.error` and otherwise ignored: the report
step then imports the same modules itself, as it does without the preload,
and fails (or not) as it would have.
"""

from __future__ import annotations

import importlib
import sys
import threading
from typing import Callable, Optional

from fabricsim import gcpause

__all__ = ["REPORT_MODULES", "Preload", "warm_report"]

#: What writing a run's report imports, in import order: the result (polars and
#: numpy with it) and the report modules, then matplotlib through
#: ``plots.pyplot()`` (:func:`warm_report`) and the two backends a plot uses
#: (Agg measures text, SVG writes the figure).
REPORT_MODULES = (
    "fabricsim.outputs.results",
    "fabricsim.outputs.report",
    "fabricsim.outputs.report.plots",
    "matplotlib.backends.backend_agg",
    "matplotlib.backends.backend_svg",
)


def warm_report() -> None:
    """Import :data:`REPORT_MODULES` and matplotlib's ``pyplot`` on the
    report's backend, and look up the report's default font (matplotlib's
    font list is read on import; the lookup of a font in it is cached for the
    process). Nothing is drawn; the garbage collector is paused meanwhile
    (:mod:`fabricsim.gcpause`) unless every module is imported already."""
    if all(name in sys.modules for name in REPORT_MODULES):
        _warm_report()
        return
    with gcpause.paused():
        _warm_report()


def _warm_report() -> None:
    for name in REPORT_MODULES[:3]:
        importlib.import_module(name)
    from fabricsim.outputs.report.plots import pyplot

    pyplot()
    for name in REPORT_MODULES[3:]:
        importlib.import_module(name)
    from matplotlib.font_manager import FontProperties, findfont

    findfont(FontProperties())


class Preload:
    """:func:`warm_report` (or ``target``) running in a daemon thread from
    construction; :meth:`wait` joins it. An exception in the thread is kept
    on :attr:`error`, never raised or printed."""

    def __init__(self, target: Callable[[], None] = warm_report) -> None:
        self.error: Optional[BaseException] = None
        self._target = target
        self._thread = threading.Thread(target=self._body, name="fabricsim-report-preload", daemon=True)
        self._thread.start()

    def _body(self) -> None:
        try:
            self._target()
        except BaseException as exc:  # kept, not raised: the report step imports again and fails as it would
            self.error = exc

    def alive(self) -> bool:
        """Whether the thread is still running."""
        return self._thread.is_alive()

    def wait(self) -> None:
        """Return once the thread has finished."""
        self._thread.join()
