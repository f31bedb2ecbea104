"""Records of what the lab measures and the parsers of the tools' output (``iperf3 -J``,
``tc -s -j qdisc``, ``ip -s -j link``, ``nstat -j``, ``sockperf``); they work on recorded
output, without root."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from fabricsim.validation.linux.topology import LabError


@dataclass(frozen=True)
class QdiscStats:
    """One qdisc's counters (``tc -s -j qdisc``): bytes and packets sent, drops, current backlog."""

    node: str
    dev: str
    kind: str
    handle: str
    parent: str
    bytes: int
    packets: int
    drops: int
    overlimits: int
    requeues: int
    backlog_bytes: int
    qlen: int

    def minus(self, before: "QdiscStats") -> "QdiscStats":
        """Counters accumulated since ``before`` (backlog and qlen stay as they are now)."""
        return QdiscStats(
            self.node,
            self.dev,
            self.kind,
            self.handle,
            self.parent,
            self.bytes - before.bytes,
            self.packets - before.packets,
            self.drops - before.drops,
            self.overlimits - before.overlimits,
            self.requeues - before.requeues,
            self.backlog_bytes,
            self.qlen,
        )


def parse_tc_qdiscs(text: str, node: str = "", dev: str = "") -> list[QdiscStats]:
    """Parse ``tc -s -j qdisc show [dev DEV]`` output."""
    records = []
    for item in json.loads(text or "[]"):
        records.append(
            QdiscStats(
                node=node,
                dev=item.get("dev", dev),
                kind=item["kind"],
                handle=item.get("handle", ""),
                parent=item.get("parent", "root" if item.get("root") else ""),
                bytes=int(item.get("bytes", 0)),
                packets=int(item.get("packets", 0)),
                drops=int(item.get("drops", 0)),
                overlimits=int(item.get("overlimits", 0)),
                requeues=int(item.get("requeues", 0)),
                backlog_bytes=int(item.get("backlog", 0)),
                qlen=int(item.get("qlen", 0)),
            )
        )
    return records


@dataclass(frozen=True)
class LinkCounters:
    """Interface counters (``ip -s -j link``)."""

    dev: str
    mtu: int
    rx_bytes: int
    rx_packets: int
    rx_dropped: int
    tx_bytes: int
    tx_packets: int
    tx_dropped: int

    def minus(self, before: "LinkCounters") -> "LinkCounters":
        return LinkCounters(
            self.dev,
            self.mtu,
            self.rx_bytes - before.rx_bytes,
            self.rx_packets - before.rx_packets,
            self.rx_dropped - before.rx_dropped,
            self.tx_bytes - before.tx_bytes,
            self.tx_packets - before.tx_packets,
            self.tx_dropped - before.tx_dropped,
        )


def parse_ip_link(text: str) -> dict[str, LinkCounters]:
    """Parse ``ip -s -j link show``: interface name -> counters."""
    out = {}
    for item in json.loads(text or "[]"):
        stats = item.get("stats64") or item.get("stats") or {}
        rx, tx = stats.get("rx", {}), stats.get("tx", {})
        out[item["ifname"]] = LinkCounters(
            item["ifname"],
            int(item.get("mtu", 0)),
            int(rx.get("bytes", 0)),
            int(rx.get("packets", 0)),
            int(rx.get("dropped", 0)),
            int(tx.get("bytes", 0)),
            int(tx.get("packets", 0)),
            int(tx.get("dropped", 0)),
        )
    return out


def parse_nstat(text: str) -> dict[str, int]:
    """Parse ``nstat -a -s -z -j`` (absolute SNMP and TcpExt counters of a namespace)."""
    data = json.loads(text)
    return {name: int(value) for name, value in data.get("kernel", data).items()}


@dataclass(frozen=True)
class FlowRecord:
    """One TCP stream (or UDP flow) of an iperf3 run.

    ``goodput_bps`` is what the receiver got over the receiver's measuring
    time; ``completion_s`` (sized jobs) is the time from the start of the
    whole run to the receiver's end of this stream.
    """

    job: int
    stream: int
    src: str
    dst: str
    protocol: str
    cc: str
    bytes_sent: int
    bytes_received: int
    seconds: float
    goodput_bps: float
    retransmits: int
    max_cwnd_bytes: int
    min_rtt_us: int
    mean_rtt_us: int
    max_rtt_us: int
    completion_s: Optional[float] = None
    lost_packets: Optional[int] = None
    packets: Optional[int] = None
    jitter_ms: Optional[float] = None
    intervals: tuple[tuple[float, float, int, int], ...] = ()
    """Per interval: (start s, end s, bytes sent, retransmits) as the sender saw them."""


@dataclass(frozen=True)
class Iperf3Summary:
    """What one iperf3 client reports: its streams, its cc, and sender/receiver CPU (percent of one CPU)."""

    protocol: str
    cc: str
    streams: list[dict[str, Any]]
    sender_cpu_percent: float
    receiver_cpu_percent: float
    seconds: float


def parse_iperf3(text: str) -> Iperf3Summary:
    """Parse ``iperf3 -c ... -J`` output (TCP or UDP); raise LabError on an iperf3 error."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LabError(f"iperf3 printed no JSON ({exc}): {text[:200]!r}") from None
    if data.get("error"):
        raise LabError(f"iperf3: {data['error']}")
    start, end = data.get("start", {}), data.get("end", {})
    protocol = start.get("test_start", {}).get("protocol", "TCP")
    cc = end.get("sender_tcp_congestion", "") if protocol == "TCP" else ""
    streams = []
    for index, item in enumerate(end.get("streams", [])):
        if protocol == "UDP":
            udp = item["udp"]
            streams.append(
                {
                    "bytes_sent": int(udp["bytes"]),
                    "bytes_received": int(udp["bytes"]) - int(udp.get("lost_packets", 0)) * _udp_len(start),
                    "seconds": float(udp["seconds"]),
                    "retransmits": 0,
                    "lost_packets": int(udp.get("lost_packets", 0)),
                    "packets": int(udp.get("packets", 0)),
                    "jitter_ms": float(udp.get("jitter_ms", 0.0)),
                }
            )
            continue
        sender, receiver = item["sender"], item["receiver"]
        streams.append(
            {
                "bytes_sent": int(sender["bytes"]),
                "bytes_received": int(receiver["bytes"]),
                "seconds": float(receiver["seconds"]),
                "retransmits": int(sender.get("retransmits", 0)),
                "max_cwnd_bytes": int(sender.get("max_snd_cwnd", 0)),
                "min_rtt_us": int(sender.get("min_rtt", 0)),
                "mean_rtt_us": int(sender.get("mean_rtt", 0)),
                "max_rtt_us": int(sender.get("max_rtt", 0)),
            }
        )
    for interval in data.get("intervals", []):
        for index, item in enumerate(interval.get("streams", [])):
            if index < len(streams):
                streams[index].setdefault("intervals", []).append(
                    (
                        float(item["start"]),
                        float(item["end"]),
                        int(item["bytes"]),
                        int(item.get("retransmits", 0)),
                    )
                )
    cpu = end.get("cpu_utilization_percent", {})
    seconds = float(end.get("sum_received", end.get("sum", {})).get("seconds", 0.0))
    return Iperf3Summary(
        protocol,
        cc,
        streams,
        float(cpu.get("host_total", 0.0)),
        float(cpu.get("remote_total", 0.0)),
        seconds,
    )


def _udp_len(start: Mapping[str, Any]) -> int:
    return int(start.get("test_start", {}).get("blksize", 0))


@dataclass(frozen=True)
class LatencyRecord:
    """sockperf ping-pong: one-way latency (half the round trip) in microseconds."""

    message_bytes: int
    protocol: str
    observations: int
    avg_us: float
    std_us: float
    min_us: float
    max_us: float
    percentiles_us: Mapping[str, float]
    dropped: int


_SOCKPERF_PCT = re.compile(r"percentile\s+([\d.]+)\s*=\s*([\d.]+)")
_SOCKPERF_AVG = re.compile(r"avg-latency=([\d.]+)\s*\(std-dev=([\d.]+)\)")
_SOCKPERF_OBS = re.compile(r"Total\s+(\d+)\s+observations")
_SOCKPERF_MAX = re.compile(r"<MAX> observation\s*=\s*([\d.]+)")
_SOCKPERF_MIN = re.compile(r"<MIN> observation\s*=\s*([\d.]+)")
_SOCKPERF_DROP = re.compile(r"# dropped messages = (\d+)")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def parse_sockperf(text: str, message_bytes: int = 0, protocol: str = "udp") -> LatencyRecord:
    """Parse the summary that ``sockperf ping-pong`` prints (latency in usec, half round trip)."""
    text = _ANSI.sub("", text)
    avg = _SOCKPERF_AVG.search(text)
    obs = _SOCKPERF_OBS.search(text)
    if not avg or not obs:
        raise LabError(f"sockperf printed no latency summary: {text[-300:]!r}")
    percentiles = {f"p{float(p):g}": float(v) for p, v in _SOCKPERF_PCT.findall(text)}
    drop = _SOCKPERF_DROP.search(text)
    high, low = _SOCKPERF_MAX.search(text), _SOCKPERF_MIN.search(text)
    return LatencyRecord(
        message_bytes,
        protocol,
        int(obs.group(1)),
        float(avg.group(1)),
        float(avg.group(2)),
        float(low.group(1)) if low else float("nan"),
        float(high.group(1)) if high else float("nan"),
        percentiles,
        int(drop.group(1)) if drop else 0,
    )


@dataclass(frozen=True)
class SocketMemory:
    """One TCP socket's receive-side state from ``ss -tmin``: its ports, the
    receive buffer (``skmem`` ``rb``, ``sk_rcvbuf``), the memory its queued
    data holds (``r``, ``sk_rmem_alloc``, in skb truesize), the bytes queued
    unread (Recv-Q), ``rcv_space`` (the right-sizing space), ``rcv_ssthresh``
    and the receiver's RTT estimate."""

    local: str
    peer: str
    rcvbuf: int
    rmem_alloc: int
    recv_q: int
    rcv_space: int
    rcv_ssthresh: int
    bytes_received: int
    #: ``rcv_rtt`` (ms), the receiver's RTT estimate (0 until measured).
    rcv_rtt_ms: float = 0.0


_SS_HEAD = re.compile(r"^(\d+)\s+(\d+)\s+(\S+)\s+(\S+)")


def parse_ss_memory(text: str) -> list[SocketMemory]:
    """The sockets of ``ss -tmin state established`` output (header line optional)."""
    out: list[SocketMemory] = []
    head: Optional[re.Match[str]] = None
    for line in text.splitlines():
        match = _SS_HEAD.match(line.strip())
        if match and not line.startswith((" ", "\t")):
            head = match
            continue
        if head is None or "skmem:" not in line:
            continue

        def field(name: str, pattern: str = r"(\d+)") -> int:
            found = re.search(rf"(?:^|[\s,(]){name}{pattern}", line)
            return int(found.group(1)) if found else 0

        out.append(
            SocketMemory(
                local=head.group(3),
                peer=head.group(4),
                rcvbuf=field("rb"),
                rmem_alloc=field("r"),
                recv_q=int(head.group(1)),
                rcv_space=field("rcv_space:"),
                rcv_ssthresh=field("rcv_ssthresh:"),
                bytes_received=field("bytes_received:"),
                rcv_rtt_ms=float(m.group(1)) if (m := re.search(r"\brcv_rtt:([\d.]+)", line)) else 0.0,
            )
        )
        head = None
    return out
