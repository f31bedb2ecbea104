"""The cyclic garbage collector paused while the package imports large modules.

Importing pydantic, building the schema's validators and importing polars
create hundreds of thousands of objects that live as long as the process, few
of them garbage: the collector's generational passes walk them again and
again (about a tenth of the schema's import). :func:`paused` turns the
collector off for the duration of a ``with`` block and on again when the last
block open in any thread ends, if it was on before the first one began (a
caller that turned it off keeps it off). Reference counting frees what it
always frees meanwhile; only cycles wait for the next collection.

:func:`freeze` moves every object alive to the collector's permanent
generation, so that no later collection, the one at the interpreter's exit
included, walks them again: the ``fabricsim`` command calls it when its work
is done, since the process ends next: with the objects frozen, the
interpreter's exit neither collects nor deallocates them one by one.
"""

from __future__ import annotations

import gc
import threading
from contextlib import contextmanager
from typing import Iterator

__all__ = ["freeze", "paused"]

_lock = threading.Lock()
_open = 0  # blocks open in all threads
_was_enabled = False  # whether the collector was on when the first of them began


@contextmanager
def paused() -> Iterator[None]:
    """The collector off inside the block (re-entrant, shared by threads)."""
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
                gc.enable()


def freeze() -> None:
    """Move the objects alive now out of the collector's reach (:func:`gc.freeze`)."""
    gc.freeze()
