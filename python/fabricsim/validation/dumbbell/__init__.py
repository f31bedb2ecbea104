"""TCP through one shaped bottleneck in real Linux, and the same experiment in fabricsim.

Topology (:func:`topology`)::

    s0 ──┐
    s1 ──┤ veth (unshaped)      htb/tbf at ``rate``, bfifo of ``buffer``
    ...  ├───────────────── r ────────────────────────────────────────── rx
    sN ──┘                 (router namespace)

Each sender runs one iperf3 client (``flows_per_sender`` streams, ``-C reno``
or ``-C cubic``) to its own server on ``rx`` for ``duration_s`` seconds, or,
with ``size``, ``flows_per_sender`` sized transfers of ``size`` bytes
(:meth:`Lab.transfers`, which times the receiver's last byte: the job
completion time). The only queue that can build is the bfifo on the
router's egress towards ``rx``; the access veths have no qdisc (``noqueue``)
and forward as fast as the CPU lets them. Every namespace gets the kernel's
default TCP buffer sysctls (``tcp_rmem`` 4096 131072 6291456, ``tcp_wmem`` 4096
16384 4194304) so that the result does not depend on the host's tuning.

:func:`scenario` builds the fabricsim twin: an explicit topology with the
senders' NICs at ``access_rate``, the router as a switch with a static buffer
of ``buffer`` bytes per port and no pipeline latency, the bottleneck link at
``rate``, and link delays that reproduce the measured unloaded one-way
latency (sockperf UDP ping-pong, half a round trip, split over the two links
of the path). Frames are counted as the veth queue counts them: IP packet +
14 B Ethernet header, no preamble, gap or minimum frame size. TCP is left at
the scenario defaults (the ``cc`` is set; CUBIC counts 250 Hz jiffies and
holds for HZ / 32). A recorded experiment's twin (:func:`simulate_recorded`,
:func:`compare`) also paces its senders as the recorded ones ran
(:func:`recorded_pacing`: Linux's internal pacing when the namespaces'
default congestion control was BBR, which every recording had before
:data:`UNPACED_RESULTS`, whose setups make the experiment's own CC every
namespace's default: :attr:`DumbbellSetup.unpaced`).

:func:`measure` runs the Linux side (root) and returns a JSON-ready record;
:func:`compare` runs the fabricsim side and lines both up.

The package, by job: :mod:`~fabricsim.validation.dumbbell.setup` (the setups,
their Linux topology and the recordings on disk),
:mod:`~fabricsim.validation.dumbbell.measurement` (the Linux side, root),
:mod:`~fabricsim.validation.dumbbell.episodes` (one point's loss episodes
from packet captures in the lab, root),
:mod:`~fabricsim.validation.dumbbell.twin` (the fabricsim twin),
:mod:`~fabricsim.validation.dumbbell.analysis` (the kernel's counters against
the twin's, the twin grid) and :mod:`~fabricsim.validation.dumbbell.tables`
(the Markdown tables and :func:`compare`'s rows). Every name is importable
from ``fabricsim.validation.dumbbell`` itself (and from the former module,
``fabricsim.validation.linux_dumbbell``); the command line is ``fabricsim
dumbbell`` (:mod:`fabricsim.cli.dumbbell`).
"""

from __future__ import annotations

from fabricsim.validation.dumbbell.analysis import (
    GRID_DIMENSIONS,
    cpu_busy_shares,
    kernel_cadence,
    kernel_recoveries,
    segments_per_ack,
    summary_drops,
    twin_cadence,
    twin_grid,
    twin_scenario,
)
from fabricsim.validation.dumbbell.measurement import (
    NSTAT_KEYS,
    NSTAT_RECEIVER_KEYS,
    measure,
    payload_rate_bps,
)
from fabricsim.validation.dumbbell.setup import (
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
    DumbbellSetup,
    default_flight_bytes,
    dumbbells,
    grid_setups,
    jain_index,
    recorded,
    topology,
    write_recorded,
)
from fabricsim.validation.dumbbell.tables import (
    cadence_markdown,
    compare,
    grid_markdown,
    markdown,
    reader_markdown,
    reader_runs_markdown,
    twin_markdown,
)
from fabricsim.validation.dumbbell.twin import (
    IPERF3_READ_BYTES,
    LAB_CONFIG_HZ,
    LAB_CUBIC_HOLD_HZ32,
    LAB_ROUTER_FORWARDING,
    LAB_ROUTER_FORWARDING_NS,
    PACING_DEFAULT_CCS,
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

__all__ = [
    "DumbbellSetup",
    "RESULTS",
    "compare",
    "measure",
    "recorded",
    "scenario",
    "kernel_recoveries",
    "cpu_busy_shares",
    "lab_host_model",
    "lab_twin",
    "recorded_pacing",
    "recorded_tcp",
    "simulate",
    "simulate_recorded",
    "topology",
]
