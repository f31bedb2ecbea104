"""``fabricsim validate linux``: the same TCP dumbbell in real Linux and in fabricsim, side by side.

Live (root): builds the dumbbell in network namespaces, runs iperf3, deletes
the namespaces, then simulates the twin scenario. ``--recorded`` compares the
stored Linux measurements (``python/fabricsim/validation/data/dumbbell.json``,
``dumbbell-unpaced.json`` and the grid, ``dumbbell-grid.json.gz``) with fresh
simulations, without root.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from fabricsim.cli.common import integer
from fabricsim.errors import FabricsimError

__all__ = ["DESCRIPTION", "add_arguments", "command"]

#: Options that describe the live experiment: a recorded one has its own setup.
SETUP_OPTIONS = (
    "linux_senders",
    "linux_flows",
    "linux_cc",
    "linux_rate",
    "linux_shaper",
    "linux_buffer",
    "linux_mtu",
    "linux_duration",
    "linux_size",
    "linux_access_rate",
    "linux_repeats",
    "linux_unpaced",
)


def _seconds(text: str) -> float:
    """``--duration``: seconds, > 0 and at most an hour."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds (a number > 0 and <= 3600), got {text!r}") from None
    if not 0 < value <= 3600:  # NaN fails too
        raise argparse.ArgumentTypeError(f"must be > 0 and <= 3600 seconds (got {text})")
    return value


#: What ``fabricsim validate linux --help`` says the command does.
DESCRIPTION = ("`fabricsim validate linux [options]` runs a TCP dumbbell in real Linux (root: network namespaces) "
               "and its fabricsim twin, and prints both; --recorded uses stored Linux measurements instead.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``fabricsim validate linux`` (they default to None: --recorded refuses the live ones)."""
    group = parser.add_argument_group("experiment")
    group.add_argument("--senders", dest="linux_senders", type=integer(1, 16), metavar="N",
                       help="senders, 1 to 16 (default 2)")
    group.add_argument("--flows", dest="linux_flows", type=integer(1, 128), metavar="N",
                       help="TCP streams per sender, 1 to 128 (iperf3's most; default 1)")
    group.add_argument("--cc", dest="linux_cc", choices=("reno", "cubic"), help="congestion control (default cubic)")
    group.add_argument("--rate", dest="linux_rate", metavar="RATE", help="bottleneck rate (default 1Gbps)")
    group.add_argument("--shaper", dest="linux_shaper", choices=("htb", "tbf"), help="bottleneck shaper (default htb)")
    group.add_argument("--buffer", dest="linux_buffer", metavar="SIZE", help="bfifo limit (default 250KB)")
    group.add_argument("--mtu", dest="linux_mtu", type=integer(576, 9000), metavar="BYTES",
                       help="MTU of every link, 576 to 9000 (default 1500)")
    group.add_argument("--duration", dest="linux_duration", type=_seconds, metavar="S",
                       help="seconds, at most 3600 (default 20)")
    group.add_argument("--size", dest="linux_size", metavar="SIZE", help="bytes per flow instead of a duration")
    group.add_argument(
        "--access-rate", dest="linux_access_rate", metavar="RATE", help="fabricsim NIC rate of the senders (10Gbps)"
    )
    group.add_argument(
        "--unpaced",
        dest="linux_unpaced",
        action="store_true",
        help=(
            "make --cc every namespace's default congestion control, so the senders are not left paced "
            "by the machine's default (BBR)"
        ),
    )
    group.add_argument("--repeats", dest="linux_repeats", type=integer(1, 100), metavar="K",
                       help="Linux runs to average, 1 to 100 (1)")
    group.add_argument(
        "--recorded",
        dest="linux_recorded",
        nargs="?",
        const="",
        metavar="NAME",
        help="compare the stored Linux results (all, or those whose name contains NAME); no root needed",
    )
    group.add_argument("--json", dest="linux_json", action="store_true", help="print JSON instead of tables")
    group.add_argument(
        "--shaped-router",
        dest="linux_shaped_router",
        action="store_true",
        help="twin: shape the router's port like the lab's htb class on a veth-speed link (switch.shaper)",
    )
    group.add_argument(
        "--jitter",
        dest="linux_jitter",
        action="store_true",
        help="twin: transmit jitter on every host (network.host.egress.jitter, exponential 2us)",
    )
    group.add_argument(
        "--measured-reader",
        dest="linux_measured_reader",
        action="store_true",
        help=(
            "twin: the receiving application measured in the lab (tcp.receiver_app from the iperf3 "
            "servers' /proc counters, with their wake-up delays and preemptions from the scheduler "
            "trace where it ran)"
        ),
    )
    group.add_argument(
        "--ideal-reader",
        dest="linux_ideal_reader",
        action="store_true",
        help="twin: the ideal reader (by default a recorded experiment's twin has the measured one where recorded)",
    )
    group.add_argument(
        "--lab-machine",
        dest="linux_lab_machine",
        action="store_true",
        help="twin: the hosts on the lab machine (host datapath model linux-veth, one 2-core machine)",
    )


def unavailable_reason(tools: tuple[str, ...]) -> str | None:
    """Why the live lab cannot run here (not root, a tool missing), or None."""
    from fabricsim.validation.linux import unavailable_reason as reason

    return reason(tools)


def command(args: argparse.Namespace) -> int:
    from fabricsim.validation import dumbbell as linux_dumbbell

    if args.linux_recorded is not None:
        setup = [name for name in SETUP_OPTIONS if getattr(args, name, None) not in (None, False)]
        if setup:
            flag = "--" + setup[0][len("linux_") :].replace("_", "-")
            raise FabricsimError(f"{flag}: describes a live experiment; --recorded compares the stored experiments, "
                                 "each with its own setup (select one with --recorded NAME)")
        stored = linux_dumbbell.recorded() + [
            record
            for path in (linux_dumbbell.UNPACED_RESULTS, linux_dumbbell.GRID_RESULTS, linux_dumbbell.QUIET_GRID_RESULTS,
                         linux_dumbbell.REPEAT_GRID_RESULTS)
            if path.exists()
            for record in linux_dumbbell.recorded(path)
        ]
        # An exact name selects that experiment alone; otherwise every name containing the text.
        experiments = [record for record in stored if record["name"] == args.linux_recorded] or [
            record for record in stored if args.linux_recorded in record["name"]
        ]
        if not experiments:
            names = ", ".join(dict.fromkeys(record["name"] for record in stored))
            raise FabricsimError(f"--recorded: no stored experiment matches {args.linux_recorded!r}; stored: {names}")
    else:
        reason = unavailable_reason(("ip", "tc", "ethtool", "iperf3", "sysctl", "ss", "nstat", "sockperf"))
        if reason:
            raise FabricsimError(f"validate linux: {reason}; `fabricsim validate linux --recorded` needs neither")
        setup = _setup(args)
        print(f"running {setup.name} in Linux namespaces ...", file=sys.stderr, flush=True)
        experiments = [linux_dumbbell.measure(setup, repeats=args.linux_repeats or 1)]
    reports = []
    if args.linux_measured_reader and args.linux_ideal_reader:
        raise FabricsimError("validate linux: --measured-reader and --ideal-reader exclude each other")
    for record in experiments:
        tcp = None
        if args.linux_measured_reader:
            app = linux_dumbbell.measured_receiver_app(record)
            if app is None:
                raise FabricsimError(f"--measured-reader: {record['name']} was recorded without the readers' counters")
            tcp = {"receiver_app": app}
        rows = linux_dumbbell.compare(
            record,
            shaped_router=args.linux_shaped_router,
            host={"egress": {"jitter": True}} if args.linux_jitter else None,
            tcp=tcp,
            reader=False if args.linux_ideal_reader else None,
            machine=args.linux_lab_machine,
        )
        reports.append({"name": record["name"], "environment": record["environment"], "rows": rows,
                        "cpu_busy_share": _cpu_busy_share(record)})
    if args.linux_json:
        sys.stdout.write(json.dumps(reports, indent=1) + "\n")
    else:
        _print(reports)
    return 0


def _setup(args: argparse.Namespace) -> Any:
    from fabricsim.validation.dumbbell import DumbbellSetup

    given = {
        "senders": args.linux_senders,
        "flows_per_sender": args.linux_flows,
        "cc": args.linux_cc,
        "rate": args.linux_rate,
        "shaper": args.linux_shaper,
        "buffer": args.linux_buffer,
        "mtu": args.linux_mtu,
        "duration_s": args.linux_duration,
        "size": args.linux_size,
        "access_rate": args.linux_access_rate,
        "unpaced": args.linux_unpaced or None,
    }
    return DumbbellSetup(**{key: value for key, value in given.items() if value is not None})


def _cpu_busy_share(record: dict[str, Any]) -> float | None:
    """The mean share of the machine's CPU time its runs kept busy, where recorded."""
    from fabricsim.validation.dumbbell import cpu_busy_shares

    shares = cpu_busy_shares(record)
    return sum(shares) / len(shares) if shares else None


def _print(reports: list[dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console(highlight=False)
    for report in reports:
        env = report["environment"]
        busy = report.get("cpu_busy_share")
        host = f", CPUs {100 * busy:.0f} % busy" if busy is not None else ""
        title = f"{report['name']}: Linux {env.get('kernel', '?')} ({env.get('date', '?')}{host}) vs fabricsim"
        table = Table(title=Text(title), title_justify="left")
        for column, justify in (("metric", "left"), ("Linux", "right"), ("fabricsim", "right"), ("ratio", "right")):
            table.add_column(column, justify=justify)  # type: ignore[arg-type]
        for row in report["rows"]:
            table.add_row(*(Text(cell) for cell in row))
        console.print(table)
