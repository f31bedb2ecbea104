"""Parameter sweeps: a grid of ``--set`` overrides x repeats, run in parallel, recorded in a DuckDB catalog.

- :mod:`~fabricsim.sweeps.grid`: ``--grid`` specs, repeat seeds, the points to run;
- :mod:`~fabricsim.sweeps.catalog`: ``catalog.duckdb`` and the metrics of a run;
- :mod:`~fabricsim.sweeps.backends`: running points in a process pool or on Ray;
- :mod:`~fabricsim.sweeps.report`: ``sweep.parquet`` and the sweep report;
- :mod:`~fabricsim.sweeps.runner`: :func:`run_sweep`, resumable.
"""

from fabricsim.sweeps.grid import Point, SweepError, derive_seed, parse_grid, plan_points
from fabricsim.sweeps.runner import SweepOutcome, run_sweep

__all__ = ["Point", "SweepError", "SweepOutcome", "derive_seed", "parse_grid", "plan_points", "run_sweep"]
