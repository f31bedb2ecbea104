"""The esg-trident3 incast under each candidate mechanism for the report's job-time gap.

Runs the reproduction's incast point (256 flows into one 100G port, 256 KB windows; with
``--test tcp_roce`` the TCP+RoCEv2 point, 224 TCP flows into the TCP server's port beside
the RoCE clients) on both devices with one setting changed at a time, and prints each
device's TCP job time over the ideal (flows x size x 8 / 100 Gb/s), their ratio and the
flows' timeouts (incast) or TCP retransmissions (tcp_roce): the experiment behind the
"ruled out" notes of the incast and TCP+RoCEv2 job-time claims
(docs/reproductions/esg-trident3.md, "Incast: what could make the 16 MB class buffer lose
job time").

    python scripts/esg-incast-mechanisms.py                # 20 MB per flow (the default scale's 4 GB)
    python scripts/esg-incast-mechanisms.py --size-mb 200  # the report's smallest size at its own scale
    python scripts/esg-incast-mechanisms.py --test tcp_roce
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from fabricsim.reproductions.esg_trident3 import _ideal_s, incast, tcp_roce

DEVICES = ("trident3-like", "competitor-16mb-a8")
#: (label, scenario settings as dotted paths, devices it applies to).
SETTINGS: tuple[tuple[str, dict[str, Any], tuple[str, ...]], ...] = (
    ("as modelled (linux profile)", {}, DEVICES),
    ("tcp.profile: linux-4.19", {"tcp.profile": "linux-4.19"}, DEVICES),
    ("tcp.gso_max_size: 0", {"tcp.gso_max_size": 0}, DEVICES),
    ("tcp.tsq: false", {"tcp.tsq": False}, DEVICES),
    ("tcp.pacing: fq", {"tcp.pacing": "fq"}, DEVICES),
    ("tcp.profile: linux-3.10", {"tcp.profile": "linux-3.10"}, DEVICES),
    ("buffer.ingress_alpha: 8", {"network.switch.buffer.ingress_alpha": 8}, DEVICES),
    ("buffer.ingress_alpha: 1/8", {"network.switch.buffer.ingress_alpha": 0.125}, DEVICES),
    ("competitor pool 12 MB", {"network.switch.buffer.size": "12MB"}, ("competitor-16mb-a8",)),
    ("competitor pool 8 MB", {"network.switch.buffer.size": "8MB"}, ("competitor-16mb-a8",)),
)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=float, default=20.0, help="MB per flow (default 20)")
    parser.add_argument("--test", choices=("incast", "tcp_roce"), default="incast")
    parser.add_argument("--only", action="append", default=[], help="run only settings whose label contains this")
    args = parser.parse_args(argv)
    counted = "timeouts" if args.test == "incast" else "TCP retransmissions"
    print(f"| setting | size per flow | trident3 job / ideal | competitor job / ideal | competitor / trident3 "
          f"| {counted} (t3 / comp) | conservation |")
    print("|---|---|---:|---:|---:|---|---|")
    for label, settings, devices in SETTINGS:
        if args.only and not any(o in label for o in args.only):
            continue
        rows = {}
        for device in devices:
            if args.test == "incast":
                row = incast({"device": device, "size_mb": args.size_mb, "assume": settings}, False)["summary"][0]
                rows[device] = {"jct": row["jct_s"], "ideal": row["ideal_jct_s"], "count": row["timeouts"],
                                "conservation_ok": row["conservation_ok"]}
            else:
                point = {"device": device, "size_mb": args.size_mb, "roce_qps": 100, "roce_messages": 10,
                         "roce_message_kb": 16, "assume": settings}
                row = tcp_roce(point, False)["summary"][0]
                rows[device] = {"jct": row["tcp_jct_s"], "ideal": _ideal_s(224, args.size_mb),
                                "count": row["tcp_retransmits"], "conservation_ok": row["conservation_ok"]}

        def norm(device: str) -> str:
            r = rows.get(device)
            return f"{r['jct'] / r['ideal']:.4f}" if r and r["jct"] else ("-" if not r else "unfinished")
        t3, comp = rows.get(DEVICES[0]), rows.get(DEVICES[1])
        ratio = f"{comp['jct'] / t3['jct']:.4f}" if t3 and comp and t3["jct"] and comp["jct"] else ""
        counts = " / ".join(str(rows[d]["count"]) if d in rows else "-" for d in DEVICES)
        ok = all(r["conservation_ok"] for r in rows.values())
        print(f"| {label} | {args.size_mb:g} MB | {norm(DEVICES[0])} | {norm(DEVICES[1])} | {ratio} | {counts} "
              f"| {'holds' if ok else 'FAILS'} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
