"""The cyclic garbage collector paused while the package imports large modules.

Importing pydantic, building the schema's validators and importing polars
create hundreds of thousands of objects that live as long as the process, few
of them garbage: the collector's generational passes would walk them again
and again, and the interpreter's exit would collect and deallocate them one
by one. :func:`paused` turns the collector off for the duration of a
``with`` block. When the last block open in any thread ends, and the
collector was on before the first one began, it turns the collector on again;
a caller that turned it off keeps it off. Every pause is for a first time
only: :func:`import_module` pauses for a module not imported yet, and the
schema pauses to build a validator not built yet, so what a process repeats
(a sweep's worker running point after point) pauses nothing more.

In the ``fabricsim`` command (:func:`freeze_after_pauses`), the end of the
outermost block also freezes the objects alive (:func:`gc.freeze`: moved to
the permanent generation, which no collection walks), and :func:`freeze`
freezes every object alive when the command's work is done, since the
process ends next. Reference counting frees what it always frees, frozen or
not; what a freeze keeps is garbage in reference cycles among the objects
alive at that moment. A program that imports the package as a library keeps
all of its objects collectable: nothing is frozen there.
"""

from __future__ import annotations

import gc
import importlib
import sys
import threading
from types import ModuleType
from contextlib import contextmanager
from typing import Iterator

__all__ = ["freeze", "freeze_after_pauses", "import_module", "paused"]

_lock = threading.Lock()
_open = 0  # blocks open in all threads
_was_enabled = False  # whether the collector was on when the first of them began
_freezes = False  # whether the end of the outermost block freezes (the command)


def freeze_after_pauses() -> None:
    """From now on the end of the outermost pause freezes the objects alive:
    for the ``fabricsim`` command, whose process ends when its work is done."""
    global _freezes
    _freezes = True


@contextmanager
def paused() -> Iterator[None]:
    """The collector off inside the block (re-entrant, shared by threads); in the
    command, the objects alive frozen at the end of the outermost one."""
    global _open, _was_enabled
    with _lock:
        if _open == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _open += 1
    try:
        yield
    finally:
        with _lock:
            _open -= 1
            if _open == 0 and _was_enabled:
                if _freezes:
                    gc.freeze()
                gc.enable()


def freeze() -> None:
    """Move the objects alive now out of the collector's reach (:func:`gc.freeze`)."""
    gc.freeze()


def import_module(name: str) -> ModuleType:
    """``importlib.import_module(name)``, paused (:func:`paused`) only when the
    module is not imported yet: a process that imports it again on every run
    (a sweep's worker) freezes nothing more."""
    module = sys.modules.get(name)
    if module is not None:
        return module
    with paused():
        return importlib.import_module(name)
