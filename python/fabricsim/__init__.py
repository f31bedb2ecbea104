"""fabricsim: fast, deterministic packet-level simulation of data-center switch fabrics.

Typical use::

    import fabricsim

    scenario = fabricsim.load("scenarios/quickstart.yaml", overrides=["seed=2"])
    result = fabricsim.run(scenario)
    print(result.summary)
    result.flows  # polars DataFrame
    result.write("out/quickstart")

Importing the package loads only its error types. The scenario schema
(pydantic and PyYAML) is imported by the first :func:`load`, :func:`loads`,
:func:`from_dict` or use of :class:`Scenario`; :func:`run` and :class:`Result`
(with polars) on first use, and the compiled core (``fabricsim._core``) when a
simulation runs, so loading and validating scenarios works without it.
"""

import importlib
from typing import TYPE_CHECKING, Any

from fabricsim.errors import FabricsimError, RunInterrupted, ScenarioError, SimulationError

if TYPE_CHECKING:
    from fabricsim.outputs.results import Result
    from fabricsim.runner import check, run
    from fabricsim.schema.scenario import Scenario, from_dict, load, loads

__all__ = [
    "FabricsimError",
    "Result",
    "RunInterrupted",
    "Scenario",
    "ScenarioError",
    "SimulationError",
    "__version__",
    "check",
    "from_dict",
    "load",
    "loads",
    "run",
]

# Names imported on first use (PEP 562): the module that defines each.
_LAZY = {
    "Result": "fabricsim.outputs.results",
    "run": "fabricsim.runner",
    "check": "fabricsim.runner",
    "Scenario": "fabricsim.schema.scenario",
    "from_dict": "fabricsim.schema.scenario",
    "load": "fabricsim.schema.scenario",
    "loads": "fabricsim.schema.scenario",
}


def _version() -> str:
    """The installed package's version (importlib.metadata is imported only when asked)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("fabricsim")
    except PackageNotFoundError:
        return "0.0.0"


def __getattr__(name: str) -> Any:
    if name == "__version__":
        value = _version()
        globals()[name] = value
        return value
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'fabricsim' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY, "__version__"})
