"""Congestion controllers added from outside the core, selected with ``tcp.cc: NAME``.

Two kinds share one registry, kept by the compiled core (``fabricsim._core``):

- controllers written in Rust against ``fabricsim_core::transport::tcp::cc::CongestionOps`` and
  registered by a crate built into the package (the example crate's ``swift`` with the cargo
  feature ``example-extensions``), present in every process that imports the package;
- controllers written in Python, registered in this process with :func:`register_cc` (for small
  scenarios: every callback takes the GIL; see docs/extending/congestion-control.md).

``registered_cc()`` lists both with their parameter schemas; the scenario schema accepts a built-in
controller or any registered name for ``tcp.cc``, and checks ``tcp.cc_params`` with the
controller's own check.
"""

import importlib
import json
from types import ModuleType
from typing import Any, Optional

__all__ = [
    "BUILT_IN_CC",
    "UNLIMITED",
    "check_cc_params",
    "cc_names",
    "core_features",
    "python_cc_names",
    "python_cc_used",
    "register_cc",
    "registered_cc",
    "unregister_cc",
]

#: The core's own controllers.
BUILT_IN_CC = ("newreno", "cubic", "dctcp", "htcp")

#: ``ssthresh`` before the first congestion event (no limit).
UNLIMITED = 2**64 - 1

# Names registered from Python in this process.
_PYTHON: set[str] = set()


def _core() -> Optional[ModuleType]:
    """The compiled core, or None where it is not built (schema checks then know only the built-ins)."""
    try:
        return importlib.import_module("fabricsim._core")
    except ImportError:
        return None


def core_features() -> tuple[str, ...]:
    """The cargo features the compiled core was built with (``example-extensions``), () without a core."""
    core = _core()
    return tuple(getattr(core, "FEATURES", ())) if core is not None else ()


def registered_cc() -> dict[str, dict[str, Any]]:
    """Registered controllers by name: ``summary``, ``schema`` (JSON Schema of ``tcp.cc_params``) and
    ``python`` (registered from Python in this process)."""
    core = _core()
    if core is None:
        return {}
    return {
        r["name"]: {"summary": r["summary"], "schema": json.loads(r["schema"]), "python": r["name"] in _PYTHON}
        for r in core.tcp_cc_registered()
    }


def cc_names() -> list[str]:
    """Every name ``tcp.cc`` takes now: the built-ins, then the registered controllers."""
    return [*BUILT_IN_CC, *registered_cc()]


def python_cc_names() -> set[str]:
    """The controllers registered from Python in this process (they exist only here)."""
    return set(_PYTHON)


def python_cc_used(scenario: Any) -> Optional[str]:
    """The first Python-registered controller a validated scenario names (``tcp.cc`` or a traffic entry's
    ``tcp.cc``), or None."""
    names = python_cc_names()
    tcps = [getattr(scenario, "tcp", None), *(getattr(t, "tcp", None) for t in getattr(scenario, "traffic", []) or [])]
    for tcp in tcps:
        cc = getattr(tcp, "cc", None)
        if cc in names:
            return cc
    return None


def check_cc_params(name: str, params: Optional[dict[str, Any]]) -> Optional[tuple[str, str]]:
    """The registered controller's own check of ``params``: None, or ``(field, message)`` with the field
    relative to ``tcp.cc_params`` ("" for the whole mapping)."""
    core = _core()
    if core is None:
        return ("", "the simulation core is not built, so registered controllers cannot be checked")
    return core.tcp_cc_check(name, json.dumps(params))


def _schema_check(schema: dict[str, Any], params: Any) -> Optional[tuple[str, str]]:
    """``params`` against an object schema: ``properties`` with ``type`` (number, integer, boolean,
    string), ``enum``, ``minimum``, ``maximum``; ``required``; unknown keys refused unless
    ``additionalProperties`` is true."""
    props = schema.get("properties", {})
    if params is None:
        params = {}
    if not isinstance(params, dict):
        return ("", f"must be a mapping of parameters, not {json.dumps(params)}")
    if schema.get("additionalProperties", False) is not True:
        for key in params:
            if key not in props:
                return (key, f"unknown key; allowed: {', '.join(props) or '(none)'}")
    for key in schema.get("required", []):
        if key not in params:
            return (key, "required parameter is missing")
    for key, value in params.items():
        spec = props.get(key, {})
        kind = spec.get("type")
        is_num = isinstance(value, (int, float)) and not isinstance(value, bool)
        if kind == "number" and not is_num:
            return (key, f"must be a number, not {json.dumps(value)}")
        if kind == "integer" and not (is_num and float(value).is_integer()):
            return (key, f"must be a whole number, not {json.dumps(value)}")
        if kind == "boolean" and not isinstance(value, bool):
            return (key, f"must be true or false, not {json.dumps(value)}")
        if kind == "string" and not isinstance(value, str):
            return (key, f"must be a string, not {json.dumps(value)}")
        if "enum" in spec and value not in spec["enum"]:
            return (key, f"unknown value {value!r}; allowed: {', '.join(map(str, spec['enum']))}")
        lo, hi = spec.get("minimum"), spec.get("maximum")
        if is_num and ((lo is not None and value < lo) or (hi is not None and value > hi)):
            return (key, f"must be from {lo if lo is not None else '-inf'} to {hi if hi is not None else 'inf'}, not {value}")
    return None


def register_cc(
    name: str,
    cls: type,
    schema: Optional[dict[str, Any]] = None,
    summary: str = "",
    replace: bool = False,
) -> None:
    """Registers the class ``cls`` as congestion controller ``name`` (``tcp.cc: name``) in this process.

    The core makes one instance per connection, ``cls(params, conn)``: ``params`` is ``tcp.cc_params``
    (a dict, ``{}`` when left out) and ``conn`` has ``mss``, ``cwnd`` (initial window, bytes),
    ``flow`` and ``seed`` (for ``random.Random(conn.seed)``: the only randomness allowed). The core sets
    the instance's ``cwnd`` and ``ssthresh`` (bytes) before every call and reads them back after it
    (with ``pacing_rate`` in bit/s if the class has that attribute: None leaves the sender's pacing,
    0 turns it off). Methods (all but ``on_loss`` optional):

    - ``on_ack(ack)``: every ACK of new data, in any state (Linux ``pkts_acked``);
    - ``cong_avoid(ack)``: window growth, outside recovery only (Linux ``cong_avoid``);
    - ``on_loss(loss) -> int``: the new ``ssthresh`` at a congestion event (Linux ``ssthresh``);
    - ``on_timeout(now_ps)``: a retransmission timeout (the sender then sets cwnd to one segment);
    - ``on_state(state)``: the recovery state changed (``"open"``, ``"cwr"``, ``"recovery"``, ``"loss"``);
    - ``on_ecn(ack) -> bool``: with a class attribute ``handles_ecn = True``, every ACK of an ECN
      connection; True when it cut the window itself (otherwise an echo is a loss signal).

    ``ack`` has ``now_ps``, ``acked``, ``ack``, ``snd_nxt``, ``flight``, ``ece``, ``rtt_ps``, ``srtt_ps``,
    ``min_rtt_ps`` (None when unknown), ``state`` and ``mss``; ``loss`` has ``now_ps``, ``flight``, ``mss``.
    ``schema`` is the JSON Schema of ``tcp.cc_params`` (checked with :func:`_schema_check`'s subset);
    without one the controller takes no parameters. An exception in a method ends the run and is
    raised from :func:`fabricsim.run` with the controller's name.

    Sweeps run their points in worker processes, which do not have the classes registered here:
    a sweep whose scenario names one is refused before it starts (see ``fabricsim.sweeps``).
    """
    core = _core()
    if core is None:
        raise RuntimeError("the simulation core (fabricsim._core) is not built; Python controllers run inside it")
    if not isinstance(cls, type):
        raise TypeError(f"register_cc({name!r}, ...): expected a class, not {type(cls).__name__}")
    schema = {"type": "object", "additionalProperties": False, "properties": {}} if schema is None else schema

    def check(params: Any) -> Optional[tuple[str, str]]:
        return _schema_check(schema, params)

    core.register_tcp_cc(name, cls, check, json.dumps(schema), summary or (cls.__doc__ or "").strip().split("\n")[0], replace)
    _PYTHON.add(name)


def unregister_cc(name: str) -> bool:
    """Removes a registered controller (Python or Rust) from this process; True if it was there."""
    core = _core()
    _PYTHON.discard(name)
    return bool(core is not None and core.unregister_tcp_cc(name))
