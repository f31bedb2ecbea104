"""Models registered in the core from crates outside it: switch-buffer admission
policies (``buffer.model``) and RoCE rate controllers (``roce.cc``). The names,
summaries and JSON Schemas of their parameters come from the compiled core
(``_core.extensions()``); parameters are checked by the model's own factory
(``_core.check_extension_params``). See docs/extending/."""

from __future__ import annotations

import importlib
import json
from functools import lru_cache
from typing import Any

from fabricsim.errors import unknown_value

BUILTIN_BUFFER_MODELS = ("static", "shared", "voq", "intelligent")
BUILTIN_RATE_CONTROLLERS = ("dcqcn",)


def _core_module() -> Any:
    """The compiled core (``fabricsim._core``), imported on first use."""
    return importlib.import_module("fabricsim._core")


@lru_cache(maxsize=1)
def registered() -> dict[str, dict[str, Any]]:
    """``{"buffer": {name: {"summary", "schema"}}, "rate_cc": {...}}`` of this build of the core
    (empty without a core that registers any)."""
    try:
        _core = _core_module()
    except ImportError:
        return {"buffer": {}, "rate_cc": {}}
    get = getattr(_core, "extensions", None)
    return json.loads(get()) if get is not None else {"buffer": {}, "rate_cc": {}}


def buffer_models() -> tuple[str, ...]:
    """Every name ``buffer.model`` may take: the built-in models, then the registered ones."""
    return BUILTIN_BUFFER_MODELS + tuple(sorted(registered()["buffer"]))


def rate_controllers() -> tuple[str, ...]:
    """Every name ``roce.cc`` may take."""
    return BUILTIN_RATE_CONTROLLERS + tuple(sorted(registered()["rate_cc"]))


def check_name(value: Any, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(unknown_value(value, allowed))
    return value


def buffer_model(value: Any) -> str:
    return check_name(value, buffer_models() if value not in BUILTIN_BUFFER_MODELS else BUILTIN_BUFFER_MODELS)


def rate_controller(value: Any) -> str:
    return check_name(value, rate_controllers() if value not in BUILTIN_RATE_CONTROLLERS else BUILTIN_RATE_CONTROLLERS)


def param_issues(kind: str, name: str, params: Any, classes: int = 8) -> list[tuple[str, str]]:
    """The factory's objection to ``params`` of registered model ``name`` as ``(field, message)``
    (field ``params.<key>`` for a buffer, ``cc_params.<key>`` for a rate controller); none if it accepts them."""
    _core = _core_module()
    try:
        _core.check_extension_params(kind, name, json.dumps(params), classes)
    except _core.ConfigError as exc:
        field, _, message = str(exc).partition(": ")
        return [(field, message)]
    return []


def schema(kind: str, name: str) -> dict[str, Any]:
    """JSON Schema of the parameters of registered model ``name`` (``kind``: buffer or rate_cc)."""
    return registered()[kind][name]["schema"]
