"""The dumbbell experiment as set up in Linux: :class:`DumbbellSetup`, its namespace
:func:`topology` and iperf3 jobs, the reference setups, and the recordings on disk
(:data:`RESULTS` and the others, :func:`recorded`, :func:`write_recorded`)."""

from __future__ import annotations

import gzip
import json
import re
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

from fabricsim.units import parse_rate, parse_size
from fabricsim.validation.linux import CC_SYSCTL, Iperf3Job, LabError, Topology

#: Recorded Linux measurements (``fabricsim dumbbell record``).
RESULTS = Path(__file__).resolve().parent.parent / "data" / "dumbbell.json"
#: The 20 s 2x1 and 4x1 setups (MTU 1500 and 9000) recorded again with the scheduler trace.
TRACED_RESULTS = RESULTS.with_name("dumbbell-traced.json")
#: The 20 s 2x1 and 4x1 dumbbells at MTU 1500 with unpaced senders (:attr:`DumbbellSetup.unpaced`)
#: at a bottleneck rate the lab's CPUs keep up with (``record --unpaced --rate ...``).
UNPACED_RESULTS = RESULTS.with_name("dumbbell-unpaced.json")
#: The eight dumbbells of :data:`UNPACED_RESULTS` recorded again five and six hours later on the
#: replaced lab machine (same commands and sysctls): the kernel's own drops moved 0.51-1.57x.
UNPACED_AGAIN_RESULTS = RESULTS.with_name("dumbbell-unpaced-again.json")
#: The four MTU 9000 dumbbells of :data:`RESULTS` recorded again 17 hours later on the replaced lab
#: machine (same command): the kernel's drops repeat within 1 %.
MTU9000_AGAIN_RESULTS = RESULTS.with_name("dumbbell-mtu9000-again.json")
#: The kernel's built-in TCP buffer defaults, set in every namespace of the experiment.
TCP_SYSCTLS = {"net.ipv4.tcp_rmem": "4096 131072 6291456", "net.ipv4.tcp_wmem": "4096 16384 4194304"}
_CC_TO_FABRICSIM = {"reno": "newreno", "cubic": "cubic"}

@dataclass(frozen=True)
class DumbbellSetup:
    """One dumbbell experiment; sizes and rates take units (``"250KB"``, ``"1Gbps"``)."""

    senders: int = 2
    flows_per_sender: int = 1
    cc: str = "cubic"
    rate: str = "1Gbps"
    shaper: str = "htb"
    buffer: str = "250KB"
    mtu: int = 1500
    duration_s: float = 20.0
    size: Optional[str] = None
    access_rate: str = "10Gbps"
    #: Every namespace's default congestion control (``net.ipv4.tcp_congestion_control``)
    #: set to ``cc``, so each socket starts with it rather than with the machine's default
    #: (BBR here, whose ``init`` leaves the socket paced after iperf3 switches it:
    #: :func:`recorded_pacing`): Reno and CUBIC sockets run unpaced, as on servers whose
    #: default is CUBIC. False: the namespaces inherit the machine's default.
    unpaced: bool = False

    def __post_init__(self) -> None:
        if not 1 <= self.senders <= 16:
            raise LabError(f"senders: must be 1..16 (got {self.senders})")
        if self.cc not in _CC_TO_FABRICSIM:
            raise LabError(f"cc: unknown value {self.cc!r}; allowed: {', '.join(_CC_TO_FABRICSIM)}")
        for name, parse in (("rate", parse_rate), ("buffer", parse_size), ("access_rate", parse_rate)):
            try:
                parse(getattr(self, name))
            except ValueError as exc:
                raise LabError(f"{name}: {exc}") from None
        if self.size is not None:
            try:
                parse_size(self.size)
            except ValueError as exc:
                raise LabError(f"size: {exc}") from None

    @property
    def name(self) -> str:
        length = f"{self.size}" if self.size else f"{self.duration_s:g}s"
        mtu = f"-mtu{self.mtu}" if self.mtu != 1500 else ""
        unpaced = "-unpaced" if self.unpaced else ""
        return f"{self.cc}-{self.senders}x{self.flows_per_sender}-{self.rate}-{self.buffer}-{length}{mtu}{unpaced}"

    @property
    def flows(self) -> int:
        return self.senders * self.flows_per_sender


def topology(setup: DumbbellSetup) -> Topology:
    """The Linux topology of ``setup``."""
    senders = [f"s{i}" for i in range(setup.senders)]
    links: list[dict[str, Any]] = [{"a": s, "b": "r", "mtu": setup.mtu} for s in senders]
    links.append(
        {
            "a": "r",
            "b": "rx",
            "mtu": setup.mtu,
            "egress": {"r": {"rate": setup.rate, "shaper": setup.shaper, "queue": "bfifo", "limit": setup.buffer}},
        }
    )
    sysctls = {**TCP_SYSCTLS, **({CC_SYSCTL: setup.cc} if setup.unpaced else {})}
    return Topology.from_dict({"hosts": senders + ["rx"], "routers": ["r"], "links": links, "sysctls": sysctls})


def _jobs(setup: DumbbellSetup) -> list[Iperf3Job]:
    return [
        Iperf3Job(
            src=f"s{i}",
            dst="rx",
            cc=setup.cc,
            streams=setup.flows_per_sender,
            duration_s=setup.duration_s,
            interval_s=0.1,
        )
        for i in range(setup.senders)
    ]


def _mean_sd(values: Sequence[float]) -> dict[str, float]:
    values = list(values)
    if not values:
        return {"mean": float("nan"), "sd": float("nan"), "n": 0}
    return {
        "mean": statistics.fmean(values),
        "sd": statistics.stdev(values) if len(values) > 1 else 0.0,
        "n": len(values),
    }


def jain_index(values: Sequence[float]) -> float:
    """Jain's fairness index (1 = equal shares)."""
    values = list(values)
    square = sum(v * v for v in values)
    return sum(values) ** 2 / (len(values) * square) if square > 0 else float("nan")

def recorded(path: Path = RESULTS) -> list[dict[str, Any]]:
    """The recorded Linux experiments (no root needed); a ``.gz`` file is read gzip-compressed."""
    if not path.exists():
        raise LabError(f"no recorded Linux results at {path}")
    data = gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()
    return list(json.loads(data)["experiments"])


#: The experiments recorded in :data:`RESULTS`.
REFERENCE_SETUPS = tuple(
    [DumbbellSetup(senders=n, cc=cc) for cc in ("reno", "cubic") for n in (2, 4)]
    + [DumbbellSetup(senders=4, cc=cc, size="100MB") for cc in ("reno", "cubic")]
    + [DumbbellSetup(senders=1, cc=cc, buffer="2MB", duration_s=10.0) for cc in ("reno", "cubic")]
    # Slow-start exit with HyStart on a buffer larger than the window it reaches: no loss expected.
    + [DumbbellSetup(senders=1, cc="cubic", buffer="8MB", duration_s=10.0)]
    # Jumbo frames: ~6x fewer packets per second, so the lab measures TCP rather than CPU starvation.
    + [DumbbellSetup(senders=n, cc=cc, mtu=9000) for cc in ("reno", "cubic") for n in (2, 4)]
)


def dumbbells(
    rate: str, buffer: Optional[str] = None, duration_s: float = 20.0, unpaced: bool = False, mtu: int = 1500
) -> tuple[DumbbellSetup, ...]:
    """The 2x1 and 4x1 Reno and CUBIC dumbbells at ``rate``; ``buffer`` by
    default holds the same queueing time as 250 KB at 1 Gbps (2 ms)."""
    if buffer is None:
        buffer = f"{round(parse_rate(rate) * 0.002 / 8 / 1000):d}KB"
    return tuple(
        DumbbellSetup(senders=n, cc=cc, rate=rate, buffer=buffer, duration_s=duration_s, unpaced=unpaced, mtu=mtu)
        for cc in ("reno", "cubic")
        for n in (2, 4)
    )

#: The grid of rates, buffers, sender counts and congestion controls (``record --grid``),
#: away from the setups the twin was first recorded on.
GRID_RESULTS = RESULTS.with_name("dumbbell-grid.json.gz")
#: The same grid recorded again on a quiet host (the lab's processes alone on its CPUs), where
#: :data:`GRID_RESULTS` ran beside other work that kept both CPUs busy at 300 Mbps and 1 Gbps.
QUIET_GRID_RESULTS = RESULTS.with_name("dumbbell-grid-quiet.json.gz")
#: The grid points that missed their band without a measured reason on either host, recorded a
#: third time on a quiet host (three runs each), to see whether the kernel repeats itself there.
REPEAT_GRID_RESULTS = RESULTS.with_name("dumbbell-grid-repeat.json.gz")
#: The grid's bottleneck rates, sender counts and controls.
GRID_RATES = ("100Mbps", "300Mbps", "1Gbps")
GRID_SENDERS = (1, 2, 4, 8)
GRID_CCS = ("reno", "cubic")
#: The grid's bfifo sizes, as multiples of the largest flight the default
#: buffers allow (:func:`default_flight_bytes` per sender).
GRID_BUFFER_SCALES = (0.25, 1.0, 4.0)
#: The memory a segment received in the lab takes beyond its payload
#: (``skb->truesize - skb->len``, ``tcp.rcv_truesize_overhead``): the receivers'
#: ``rcv_ssthresh`` never passed 162/256 of ``sk_rcvbuf`` at MTU 1500 and 234/256 at
#: MTU 9000 (``ss -tmin`` polled through 300 Mbps runs, 2026-12-01), the scaling
#: ratios ``len * 256 / (len + overhead)`` gives for 831-840 B at 1448 B and
#: 800-841 B at 8948 B (docs/validation/linux.md, "The receive window").
LAB_TRUESIZE_OVERHEAD = 832


def lab_scaling_ratio(mtu: int) -> int:
    """The lab kernel's ``scaling_ratio`` (256ths) for full segments at ``mtu``
    (IP + TCP headers with timestamps: 52 B): 162 at 1500, 234 at 9000."""
    mss = mtu - 52
    return mss * 256 // (mss + LAB_TRUESIZE_OVERHEAD)


def default_flight_bytes(mtu: int) -> int:
    """The largest flight one connection can have before its receive buffer
    grows: the window of ``tcp_rmem[1]`` (128 KiB) at the lab's scaling ratio."""
    rmem_default = int(TCP_SYSCTLS["net.ipv4.tcp_rmem"].split()[1])
    return rmem_default * lab_scaling_ratio(mtu) // 256


def grid_setups(mtu: int = 9000, duration_s: float = 10.0) -> tuple[DumbbellSetup, ...]:
    """The grid's dumbbells: every rate x senders x control x bfifo of
    :data:`GRID_BUFFER_SCALES` times the senders' default flights, unpaced,
    ordered by rate (the slower rates first: they need the least CPU)."""
    flight = default_flight_bytes(mtu)
    return tuple(
        DumbbellSetup(
            senders=n,
            cc=cc,
            rate=rate,
            buffer=f"{max(1, round(scale * n * flight / 1000))}KB",
            mtu=mtu,
            duration_s=duration_s,
            unpaced=True,
        )
        for rate in GRID_RATES
        for n in GRID_SENDERS
        for cc in GRID_CCS
        for scale in GRID_BUFFER_SCALES
    )


def write_recorded(path: Path, experiments: list[dict[str, Any]]) -> None:
    """Write ``experiments`` as a recordings file that :func:`recorded` reads."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"experiments": experiments}, indent=1)
    # Lists of plain numbers (samples, quantile points) on one line each.
    text = re.sub(r"\[\s*(-?[\d.e+-]+(?:,\s*-?[\d.e+-]+)*)\s*\]", lambda m: "[" + re.sub(r"\s+", " ", m.group(1)) + "]", text)
    if path.suffix == ".gz":
        # mtime 0: the same recordings give the same bytes.
        path.write_bytes(gzip.compress((text + "\n").encode(), mtime=0))
    else:
        path.write_text(text + "\n")
