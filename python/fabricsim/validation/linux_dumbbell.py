"""The TCP dumbbell in real Linux and its fabricsim twin, under its former module name.

Everything lives in :mod:`fabricsim.validation.dumbbell` (split by job); this
module re-exports every name the single module had, and ``python -m
fabricsim.validation.linux_dumbbell ...`` runs ``fabricsim dumbbell ...``.
"""

from __future__ import annotations

from fabricsim.validation.dumbbell import __all__  # noqa: F401
from fabricsim.validation.dumbbell.analysis import (  # noqa: F401
    GRID_DIMENSIONS,
    _bfifo_mean_bytes,
    _grid_run,
    cpu_busy_shares,
    kernel_cadence,
    kernel_recoveries,
    segments_per_ack,
    summary_drops,
    twin_cadence,
    twin_grid,
    twin_scenario,
)
from fabricsim.validation.dumbbell.measurement import (  # noqa: F401
    NSTAT_KEYS,
    NSTAT_RECEIVER_KEYS,
    _one_run,
    measure,
    payload_rate_bps,
)
from fabricsim.validation.dumbbell.setup import (  # noqa: F401
    GRID_RESULTS,
    MTU9000_AGAIN_RESULTS,
    QUIET_GRID_RESULTS,
    REPEAT_GRID_RESULTS,
    REFERENCE_SETUPS,
    RESULTS,
    TCP_SYSCTLS,
    TRACED_RESULTS,
    UNPACED_AGAIN_RESULTS,
    UNPACED_RESULTS,
    _CC_TO_FABRICSIM,
    DumbbellSetup,
    _jobs,
    _mean_sd,
    default_flight_bytes,
    dumbbells,
    grid_setups,
    jain_index,
    recorded,
    topology,
    write_recorded,
)
from fabricsim.validation.dumbbell.tables import (  # noqa: F401
    _fmt,
    _ratio,
    cadence_markdown,
    compare,
    grid_markdown,
    markdown,
    reader_markdown,
    reader_runs_markdown,
    twin_markdown,
)
from fabricsim.validation.dumbbell.twin import (  # noqa: F401
    IPERF3_READ_BYTES,
    LAB_CONFIG_HZ,
    LAB_CUBIC_HOLD_HZ32,
    LAB_ROUTER_FORWARDING,
    LAB_ROUTER_FORWARDING_NS,
    PACING_DEFAULT_CCS,
    _empirical,
    _readers,
    lab_host_model,
    lab_twin,
    measured_receiver_app,
    reader_measurements,
    recorded_pacing,
    recorded_tcp,
    scenario,
    simulate,
    simulate_recorded,
    traced_loop_time_ns,
    traced_preemption,
    traced_wakeups_ns,
)


if __name__ == "__main__":
    import sys

    from fabricsim.cli.main import main

    raise SystemExit(main(["dumbbell", *sys.argv[1:]]))
