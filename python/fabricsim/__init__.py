"""fabricsim: fast, deterministic packet-level simulation of data-center switch fabrics.

Typical use::

    import fabricsim

    scenario = fabricsim.load("scenarios/quickstart.yaml", overrides=["seed=2"])
    result = fabricsim.run(scenario)
    print(result.summary)
    result.flows  # polars DataFrame
    result.write("out/quickstart")

The compiled core (``fabricsim._core``) is only imported when a simulation runs,
so loading and validating scenarios works without it.
"""

from importlib.metadata import PackageNotFoundError, version

from fabricsim.errors import FabricsimError, ScenarioError
from fabricsim.results import Result
from fabricsim.runner import run
from fabricsim.schema import Scenario, from_dict, load, loads

try:
    __version__ = version("fabricsim")
except PackageNotFoundError:
    __version__ = "0.0.0"

__all__ = [
    "FabricsimError",
    "Result",
    "Scenario",
    "ScenarioError",
    "__version__",
    "from_dict",
    "load",
    "loads",
    "run",
]
