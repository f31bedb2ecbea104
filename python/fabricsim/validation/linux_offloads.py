"""Which batching survives which kernel datapath, measured in real Linux; and the host model's batches beside it.

The same two servers as :mod:`fabricsim.validation.linux_datapath` (a veth
underlay, optionally a VXLAN tunnel and the nftables conntrack firewall on
both), one iperf3 stream (CUBIC) from ``a`` to ``b``. A counting table,
:data:`COUNTERS`, counts the TCP packets (skbs) and their bytes where the
stack hands them on, before every other hook:

- ``tx``: server ``a``'s ``output`` hook, what the sender's TCP builds and
  what its conntrack and VXLAN encapsulation then handle;
- ``rx``: server ``b``'s ``prerouting`` hook, what reaches its IP layer
  (for the tunnel: the inner packets after decapsulation), and so what its
  conntrack and TCP receive handle.

The frames on the wire are the underlay veth's received packets. Each point
runs twice, receive offload (``gro``) off and on at both veths; TSO stays
off, so the veth segments in software as a NIC's TSO would, and frames, not
64 KB buffers, cross the underlay.

Measured on this project's lab machine (Linux 6.18, data in
:data:`DATA`): the sender's TCP hands 22-59 KB skbs to its stack in every
configuration, whatever the device's offloads (Linux TCP always builds GSO
buffers); without GRO the receiver sees one skb per frame; with GRO it sees
31-51 frames per skb at 256 and 1500 B and 5-7 at 9000 B, through the VXLAN
decapsulation and conntrack alike. The kernel's VXLAN and conntrack keep the
batching; no stage of these datapaths loses it. (Open vSwitch's kernel
datapath is not in the lab kernel, ``CONFIG_OPENVSWITCH`` unset, so it is
not measured.)

:func:`compare` runs the host model's twin of each point
(:func:`fabricsim.validation.host_datapath.twin` with ``gso: 64KiB`` and
``gro`` off or ``64KiB``) and sets its transmit batches and receive skbs
beside the lab's. ``python -m fabricsim.validation.linux_offloads --record``
(root) records again; ``--markdown`` prints the tables of
docs/validation/linux-datapath.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any, Optional, Sequence

__all__ = ["CONFIGS", "COUNTERS", "DATA", "MTUS", "compare", "load", "markdown", "measure", "record"]

DATA = Path(__file__).resolve().parent / "data" / "linux_offloads.json"
CONFIGS = ("veth", "veth+ct", "vxlan", "vxlan+ct")
MTUS = (256, 1500, 9000)
#: TCP/IPv4 header with timestamps: what a segment carries beyond its payload.
TCP_IP_HEADER = 52

#: Counts TCP skbs and bytes at the sender's output hook and the receiver's prerouting hook,
#: ahead of the lab firewall's own chains (priority -400: before raw, -300, and conntrack, -200).
COUNTERS = """
table inet fsbatch {
    counter tcp_rx {
    }
    counter tcp_tx {
    }
    chain rx {
        type filter hook prerouting priority -400; policy accept;
        meta l4proto tcp counter name "tcp_rx"
    }
    chain tx {
        type filter hook output priority -400; policy accept;
        meta l4proto tcp counter name "tcp_tx"
    }
}
"""


def _counters(text: str) -> dict[str, tuple[int, int]]:
    out = {}
    for item in json.loads(text or "{}").get("nftables", []):
        counter = item.get("counter")
        if counter and "packets" in counter:
            out[counter["name"]] = (int(counter["packets"]), int(counter["bytes"]))
    return out


def measure(config: str, mtu: int, gro: bool, duration_s: float = 3.0) -> dict[str, Any]:
    """One run of one point (root): skbs and bytes at both hooks, underlay frames, goodput."""
    from fabricsim.validation.linux import Iperf3Job, Lab
    from fabricsim.validation.linux_datapath import topology

    with Lab(topology(config, mtu)) as lab:
        a, b = lab.device("a", "b"), lab.device("b", "a")
        if gro:
            for node, dev in (("a", a), ("b", b)):
                lab.run(node, ["ethtool", "-K", dev, "gro", "on"])
        for node in ("a", "b"):
            lab.run(node, ["nft", "-f", "-"], input_text=COUNTERS)
        run = lab.iperf3([Iperf3Job(src="a", dst="b", cc="cubic", duration_s=duration_s,
                                    tunnel=config.startswith("vxlan"), cpu=0)])
        tx = _counters(lab.run("a", ["nft", "-j", "list", "table", "inet", "fsbatch"]).stdout)["tcp_tx"]
        rx = _counters(lab.run("b", ["nft", "-j", "list", "table", "inet", "fsbatch"]).stdout)["tcp_rx"]
        frames = run.links["b"][b].rx_packets
    return {"config": config, "mtu": mtu, "gro": gro, "goodput_bps": run.total_goodput_bps,
            "tx_skbs": tx[0], "tx_bytes": tx[1], "rx_skbs": rx[0], "rx_bytes": rx[1], "underlay_frames": frames}


def _summarise(config: str, mtu: int, gro: bool, runs: list[dict[str, Any]]) -> dict[str, Any]:
    from fabricsim.validation.linux_datapath import inner_mtu

    def mean(f: Any) -> float:
        return statistics.fmean(f(r) for r in runs)

    return {
        "config": config, "mtu": mtu, "inner_mtu": inner_mtu(config, mtu), "gro": gro, "runs": runs,
        "tx_bytes_per_skb": mean(lambda r: r["tx_bytes"] / r["tx_skbs"]),
        "rx_bytes_per_skb": mean(lambda r: r["rx_bytes"] / r["rx_skbs"]),
        "frames_per_rx_skb": mean(lambda r: r["underlay_frames"] / r["rx_skbs"]),
        "goodput_bps": mean(lambda r: r["goodput_bps"]),
    }


def record(configs: Sequence[str] = CONFIGS, mtus: Sequence[int] = MTUS, repeats: int = 2,
           duration_s: float = 3.0, path: Path = DATA) -> dict[str, Any]:
    """Measure every configuration x MTU x GRO off/on ``repeats`` times and write :data:`DATA`."""
    from fabricsim.validation.linux import environment

    points = []
    for config in configs:
        for mtu in mtus:
            for gro in (False, True):
                runs = [measure(config, mtu, gro, duration_s) for _ in range(repeats)]
                points.append(_summarise(config, mtu, gro, runs))
    document = {"environment": environment(), "duration_s": duration_s, "repeats": repeats, "points": points}
    path.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")
    return document


def load(path: Path = DATA) -> dict[str, Any]:
    return json.loads(path.read_text())


def _datapath_point(config: str, mtu: int) -> dict[str, Any]:
    """The datapath lab's one-instance point of ``config`` at ``mtu`` (its twin's stage costs and CPU share)."""
    from fabricsim.validation import linux_datapath

    for p in linux_datapath.load()["points"]:
        if p["config"] == config and p["mtu"] == mtu and p["instances"] == 1:
            return p
    raise KeyError(f"no datapath point {config} at {mtu} B")


def model_batches(config: str, mtu: int, gro: bool, duration: str = "20ms", omit: str = "5ms") -> dict[str, float]:
    """The host model's twin of the point with the Linux sender's GSO (64 KiB) and GRO off or 64 KiB:
    segments per transmit batch at the sender and frames per receive skb at the receiver."""
    import fabricsim
    from fabricsim.validation import host_datapath

    point = _datapath_point(config, mtu)
    doc = host_datapath.twin(point, duration=duration, omit=omit)
    doc["network"]["host"]["model"].update({"gso": "64KiB", "gro": "64KiB" if gro else 0})
    result = fabricsim.run(fabricsim.from_dict(doc), progress=False)
    # The two servers share one machine's cores (as the lab's did), so its cores table mixes them; the
    # TCP stage's units are per host and direction: a's transmit batches, b's receive skbs.
    stages = result.tables()["host_stages"]
    tcp = stages.filter(stages["kind"] == "tcp")

    def units(node: str, direction: str) -> int:
        return int(tcp.filter((tcp["node"] == node) & (tcp["direction"] == direction))["units"].sum())

    # The flows table counts the ACKs among a flow's packets; its data segments are its bytes over the MSS.
    segments = int(result.flows["app_bytes_delivered"].sum()) / (int(point["inner_mtu"]) - TCP_IP_HEADER)
    return {"packets_per_tx_batch": segments / max(1, units("a", "tx")),
            "frames_per_rx_skb": segments / max(1, units("b", "rx"))}


def compare(document: Optional[dict[str, Any]] = None) -> list[dict[str, Any]]:
    """Lab against model per point: segments per sender skb and frames per receiver skb, and their ratios."""
    document = document or load()
    rows = []
    for p in document["points"]:
        # A GSO skb carries one IP/TCP header and its segments' payloads.
        lab_tx = (p["tx_bytes_per_skb"] - TCP_IP_HEADER) / (p["inner_mtu"] - TCP_IP_HEADER)
        model = model_batches(p["config"], p["mtu"], p["gro"])
        rows.append({
            "config": p["config"], "mtu": p["mtu"], "gro": p["gro"],
            "lab_segments_per_tx_skb": lab_tx,
            "model_segments_per_tx_batch": model["packets_per_tx_batch"],
            "tx_ratio": model["packets_per_tx_batch"] / lab_tx,
            "lab_frames_per_rx_skb": p["frames_per_rx_skb"],
            "model_frames_per_rx_skb": model["frames_per_rx_skb"],
            "rx_ratio": model["frames_per_rx_skb"] / p["frames_per_rx_skb"],
        })
    return rows


def markdown(document: Optional[dict[str, Any]] = None, rows: Optional[list[dict[str, Any]]] = None) -> str:
    document = document or load()
    rows = rows if rows is not None else compare(document)
    lines = [
        "| configuration | MTU | GRO | sender: bytes per skb | receiver: bytes per skb | frames per receiver skb "
        "| model: segments per transmit batch (lab) | model: frames per receive skb (lab) |",
        "|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    for p, r in zip(document["points"], rows):
        lines.append(
            f"| `{p['config']}` | {p['mtu']} | {'on' if p['gro'] else 'off'} | {p['tx_bytes_per_skb']:,.0f} "
            f"| {p['rx_bytes_per_skb']:,.0f} | {p['frames_per_rx_skb']:.1f} "
            f"| {r['model_segments_per_tx_batch']:.1f} ({r['lab_segments_per_tx_skb']:.1f}) "
            f"| {r['model_frames_per_rx_skb']:.1f} ({r['lab_frames_per_rx_skb']:.1f}) |"
        )
    return "\n".join(lines) + "\n"


def _main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fabricsim.validation.linux_offloads", description=__doc__)
    parser.add_argument("--record", action="store_true", help="measure again (root, about 3 minutes)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--duration", type=float, default=3.0)
    parser.add_argument("--markdown", action="store_true", help="print the tables of the validation page")
    args = parser.parse_args(argv)
    document = record(repeats=args.repeats, duration_s=args.duration) if args.record else load()
    if args.markdown or not args.record:
        print(markdown(document), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
