"""Packet captures as files Wireshark and tshark open: the ``captures`` table of
a run (one row per frame a tap saw, ``sim/pcap.rs``) written as pcapng
(default) or pcap with nanosecond timestamps, one file per tap of ``stats.pcap``.

Each frame is synthesized from the simulated packet, at its simulated length
(the 4-byte FCS left out, as a host capture shows it):

- Ethernet II: per-hop addresses ``02:00:nn:nn:nn:nn`` of the node that
  transmits the frame and of the one that receives it (``nn..`` the node id);
  a multicast group's frames go to its ``01:00:5e`` group address.
- IPv4 (RFC 791): the hosts' addresses ``10.0.0.k`` (the k-th host + 1,
  as match-action stages see them), DSCP and ECN in the TOS byte (RFC 2474,
  RFC 3168 section 5), DF set, the frame's TTL (the outer header's while
  tunnelled, the inner one then 64), a correct header checksum.
- TCP (RFC 9293): ports as stages see them; sequence numbers are the
  simulated ones (counting from 0 in each direction) plus an initial sequence
  number drawn from the flow id, so Wireshark's relative numbers are the
  simulated ones plus 1 (the SYN takes one); SYN options MSS, SACK-permitted
  (RFC 2018), timestamps (RFC 7323, in microseconds of simulated time) and
  window scale as room allows in the header length the simulation sized;
  SACK blocks of ACKs; ECE/CWR (RFC 3168 section 6.1); checksum correct.
- UDP datagrams (RFC 768) and RoCEv2 (UDP port 4791, IBTA annex A17): BTH
  with the RDMA WRITE first/middle/last/only opcodes, PSN, destination QP
  and AckReq on the last packet, RETH on first/only, AETH on ACK and NACK
  (syndrome ACK or NAK PSN sequence error with the MSN), CNPs (opcode 0x81),
  a zero ICRC. RoCEv2 frames keep their simulated length, so the RETH takes
  16 B of a first/only packet's payload as shown.
- VXLAN (RFC 7348): a tunnelled packet gets outer Ethernet, IPv4 (or IPv6
  for 70-byte encapsulation) and UDP to port 4789 with the VNI, around the
  inner frame; the outer addresses are the inner ones (the endpoints are the
  tunnel ends).
- PFC PAUSE frames (IEEE 802.1Qbb): MAC control opcode 0x0101 to
  01:80:c2:00:00:01 with the class-enable vector and per-class quanta.

Payload bytes are zeros. Files are byte-identical between identical runs.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Optional

import polars as pl

if TYPE_CHECKING:
    from fabricsim.schema.stats import PcapTap

__all__ = ["frames", "initial_sequence", "write_tap"]

_PAUSE_MAC = bytes.fromhex("0180c2000001")
_ETH_IPV4 = 0x0800
_ETH_IPV6 = 0x86DD
_ETH_MAC_CONTROL = 0x8808
_VXLAN_PORT = 4789
_LINKTYPE_ETHERNET = 1
# RoCE codes of the captures table (RoceWire::op) -> BTH opcode (IBTA vol. 1, 9.2: RC).
_ROCE_OPCODES = {1: 0x06, 2: 0x07, 3: 0x08, 4: 0x0A, 5: 0x11, 6: 0x11, 7: 0x81}
_AETH_ACK = 0x1F  # ACK, credit count "invalid" (no end-to-end credits)
_AETH_NAK_SEQ = 0x60  # NAK: PSN sequence error
_TH_SYN = 0x02


def _mac(node: int) -> bytes:
    return b"\x02\x00" + struct.pack(">I", node & 0xFFFFFFFF)


def _multicast_mac(ip: int) -> bytes:
    """The Ethernet group address of an IPv4 multicast group (RFC 1112 section 6.4)."""
    return b"\x01\x00\x5e" + struct.pack(">I", ip & 0x7FFFFF)[1:]


def _checksum(data: bytes) -> int:
    """The Internet checksum (RFC 1071) of ``data``."""
    if len(data) % 2:
        data += b"\x00"
    total = sum(struct.unpack(f">{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def _mix(x: int) -> int:
    """A 64-bit mixing function (splitmix64's finalizer)."""
    x &= 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return x ^ (x >> 31)


def initial_sequence(flow: int, reply: bool) -> int:
    """The initial sequence number of ``flow``'s data (``reply`` false) or
    reverse direction: the simulated sequence number ``s`` is ``ISN + 1 + s`` on the wire."""
    return _mix(0x9E3779B97F4A7C15 + 2 * flow + int(reply)) & 0xFFFFFFFF


def _ipv4(tos: int, proto: int, src: int, dst: int, payload_len: int, ttl: int = 64) -> bytes:
    header = struct.pack(">BBHHHBBHII", 0x45, tos, 20 + payload_len, 0, 0x4000, ttl, proto, 0, src, dst)
    return header[:10] + struct.pack(">H", _checksum(header)) + header[12:]


def _window_scale(window: int) -> int:
    """The smallest shift (RFC 7323 section 2.3, at most 14) that fits ``window`` in 16 bits."""
    shift = 0
    while window >> shift > 0xFFFF and shift < 14:
        shift += 1
    return shift


def _tcp_options(row: dict[str, Any], room: int, shift: int) -> bytes:
    """TCP options filling ``room`` bytes (a multiple of 4)."""
    us = 1_000_000
    tsval = (row["tcp_ts_ps"] // us) & 0xFFFFFFFF
    tsecr = (row["tcp_ts_echo_ps"] // us) & 0xFFFFFFFF
    timestamps = struct.pack(">BBII", 8, 10, tsval, tsecr)
    parts: list[bytes] = []
    if row["tcp_flags"] & _TH_SYN:
        wanted = [struct.pack(">BBH", 2, 4, min(row["tcp_mss"], 0xFFFF))]
        if row["tcp_sack_permitted"]:
            wanted.append(b"\x04\x02")
        wanted += [timestamps, b"\x01\x03\x03" + bytes([shift])]
        used = 0
        for option in wanted:
            if used + len(option) <= room:
                parts.append(option)
                used += len(option)
    else:
        blocks = row["tcp_sack_blocks"]
        if blocks:
            base = initial_sequence(row["flow"], not row["reply"]) + 1
            edges = b"".join(
                struct.pack(
                    ">II",
                    (base + row[f"tcp_sack{k}_start"]) & 0xFFFFFFFF,
                    (base + row[f"tcp_sack{k}_end"]) & 0xFFFFFFFF,
                )
                for k in range(blocks)
            )
            sack = b"\x01\x01" + bytes([5, 2 + 8 * blocks]) + edges
            if len(sack) <= room:
                parts.append(sack)
        if sum(map(len, parts)) + 12 <= room:
            parts.insert(0, b"\x01\x01" + timestamps)
    options = b"".join(parts)
    pad = room - len(options)
    return options + b"\x00" * pad if pad >= 0 else options[:room]


def _tcp(row: dict[str, Any], shift: int) -> tuple[bytes, int]:
    """TCP header (with options) and payload length of a TCP row."""
    header_len = row["tcp_header"]
    header_len = max(20, min(60, header_len - header_len % 4))
    flow, reply, flags = row["flow"], row["reply"], row["tcp_flags"]
    own = initial_sequence(flow, reply)
    peer = initial_sequence(flow, not reply)
    syn = flags & _TH_SYN
    seq = own if syn else own + 1 + row["tcp_seq"]
    ack = peer + 1 + row["tcp_ack"] if flags & 0x10 else 0
    window = row["tcp_window"]
    field = min(window, 0xFFFF) if syn else min(window >> shift, 0xFFFF)
    options = _tcp_options(row, header_len - 20, shift)
    header = struct.pack(
        ">HHIIBBHHH",
        row["sport"],
        row["dport"],
        seq & 0xFFFFFFFF,
        ack & 0xFFFFFFFF,
        (header_len // 4) << 4,
        flags,
        field,
        0,
        0,
    )
    return header + options, row["tcp_len"]


def _roce(row: dict[str, Any], udp_room: int) -> bytes:
    """BTH and extension headers, payload and ICRC of a RoCEv2 row: ``udp_room`` bytes in all,
    or fewer (the frame is then padded) when the simulated payload is shorter."""
    op = row["roce_op"]
    opcode = _ROCE_OPCODES.get(op, 0x06)
    ext = b""
    if op in (1, 4):
        ext = struct.pack(">QII", 0, 0, 0)  # RETH: virtual address, R_Key, DMA length
    elif op in (5, 6):
        syndrome = _AETH_ACK if op == 5 else _AETH_NAK_SEQ
        ext = struct.pack(">I", syndrome << 24 | row["roce_msn"] & 0xFFFFFF)
    elif op == 7:
        ext = b"\x00" * 16
    fixed = 12 + len(ext) + 4
    payload = max(0, udp_room - fixed)
    pad = (4 - payload % 4) % 4 if op in (3, 4) else 0
    ack_req = 0x80 if op in (3, 4) else 0
    bth = struct.pack(
        ">BBHII",
        opcode,
        pad << 4,
        0xFFFF,
        row["roce_dst_qp"] & 0xFFFFFF,
        ack_req << 24 | row["roce_psn"] & 0xFFFFFF,
    )
    return bth + ext + b"\x00" * payload + b"\x00" * 4


def _udp(sport: int, dport: int, body: bytes) -> bytes:
    # The checksum is left 0 ("not computed", RFC 768), as RoCEv2 requires (annex A17.3).
    return struct.pack(">HHHH", sport, dport, 8 + len(body), 0) + body


def _inner_frame(row: dict[str, Any], frame_len: int, shifts: dict[int, int]) -> bytes:
    """The frame as its flow sent it (without tunnel headers), ``frame_len`` bytes unless longer headers need more."""
    kind = row["kind"]
    eth = _mac(row["to_node"]) + _mac(row["from_node"])
    if kind == 2:  # PFC PAUSE
        vector = row["pause_classes"]
        quanta = [row["pause_quanta"] if vector >> c & 1 else 0 for c in range(8)]
        body = struct.pack(">HH8H", 0x0101, vector, *quanta)
        frame = _PAUSE_MAC + _mac(row["from_node"]) + struct.pack(">H", _ETH_MAC_CONTROL) + body
        return frame + b"\x00" * max(0, 60 - len(frame))
    if row["encap"]:
        eth = _mac(row["dst_id"]) + _mac(row["src_id"])
    if row["ip_dst"] >> 28 == 0xE:
        eth = _multicast_mac(row["ip_dst"]) + eth[6:]
    tos = (row["dscp"] & 63) << 2 | (row["ecn"] & 3)
    ip_room = frame_len - 14 - 20
    if kind == 1:
        tcp_header, payload = _tcp(row, shifts.get(row["flow"], 0))
        segment = tcp_header + b"\x00" * payload
        pseudo = struct.pack(">IIBBH", row["ip_src"], row["ip_dst"], 0, 6, len(segment))
        check = _checksum(pseudo + tcp_header)
        l4 = tcp_header[:16] + struct.pack(">H", check) + tcp_header[18:] + b"\x00" * payload
        proto = 6
    elif kind == 3:
        l4 = _udp(row["sport"], row["dport"], _roce(row, ip_room - 8))
        proto = 17
    else:
        l4 = _udp(row["sport"], row["dport"], b"\x00" * max(0, ip_room - 8))
        proto = 17
    # Switches take one from the outer header's TTL of a tunnelled frame, never from the inner one's.
    ttl = 64 if row["encap"] else row.get("ttl", 64)
    frame = eth + struct.pack(">H", _ETH_IPV4) + _ipv4(tos, proto, row["ip_src"], row["ip_dst"], len(l4), ttl) + l4
    return frame + b"\x00" * max(0, frame_len - len(frame))


def _frame(row: dict[str, Any], shifts: dict[int, int]) -> bytes:
    """One captured frame (without FCS)."""
    size = row["size"] - 4
    encap = row["encap"] if row["kind"] != 2 else 0
    if not encap:
        return _inner_frame(row, size, shifts)
    inner = _inner_frame(row, size - encap, shifts)
    vxlan = struct.pack(">II", 0x08 << 24, (row["vni"] & 0xFFFFFF) << 8) + inner
    entropy = 49152 + (row["sport"] ^ row["dport"] ^ row["flow"]) % 16384
    udp = _udp(entropy, _VXLAN_PORT, vxlan)
    eth = _mac(row["to_node"]) + _mac(row["from_node"])
    tos = (row["dscp"] & 63) << 2 | (row["ecn"] & 3)
    if encap >= 70:
        six = lambda a: b"\xfd" + b"\x00" * 11 + struct.pack(">I", a)  # noqa: E731
        ip6 = struct.pack(">IHBB", 6 << 28 | tos << 20, len(udp), 17, row.get("ttl", 64)) + six(row["ip_src"]) \
            + six(row["ip_dst"])
        return eth + struct.pack(">H", _ETH_IPV6) + ip6 + udp
    return eth + struct.pack(">H", _ETH_IPV4) + _ipv4(tos, 17, row["ip_src"], row["ip_dst"], len(udp), row.get("ttl", 64)) \
        + udp


def frames(captures: pl.DataFrame) -> Iterator[tuple[dict[str, Any], bytes]]:
    """Each row of a captures table (as a dict) with its synthesized frame."""
    tcp = captures.filter(pl.col("kind") == 1)
    shifts = {
        int(flow): _window_scale(int(window))
        for flow, window in tcp.group_by("flow").agg(pl.col("tcp_window").max()).iter_rows()
    }
    for row in captures.iter_rows(named=True):
        yield row, _frame(row, shifts)


# ------------------------------------------------------------------ files


def _pcapng_block(kind: int, body: bytes) -> bytes:
    body += b"\x00" * (-len(body) % 4)
    length = 12 + len(body)
    return struct.pack("<II", kind, length) + body + struct.pack("<I", length)


def _pcapng_option(code: int, value: bytes) -> bytes:
    return struct.pack("<HH", code, len(value)) + value + b"\x00" * (-len(value) % 4)


_OPT_END = b"\x00\x00\x00\x00"


def _interface_name(node: str, port: int, peers: dict[tuple[str, int], str]) -> str:
    peer = peers.get((node, port))
    return f"{node} port {port}" + (f" -> {peer}" if peer else "")


def write_tap(
    path: Path,
    tap: PcapTap,
    captures: pl.DataFrame,
    ports: list[int],
    peers: Optional[dict[tuple[str, int], str]] = None,
) -> None:
    """Write one tap's rows of ``captures`` to ``path`` in the tap's format;
    ``ports`` are the local ports the tap covers (the pcapng interfaces)."""
    peers = peers or {}
    snaplen = tap.snaplen
    out = bytearray()
    if tap.format == "pcap":
        # The nanosecond-resolution pcap header (magic 0xa1b23c4d).
        out += struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, snaplen, _LINKTYPE_ETHERNET)
        for row, frame in frames(captures):
            seconds, nanos = divmod(row["time_ps"] // 1000, 1_000_000_000)
            kept = frame[:snaplen]
            out += struct.pack("<IIII", seconds, nanos, len(kept), len(frame)) + kept
    else:
        shb = struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1) + _pcapng_option(4, b"fabricsim") + _OPT_END
        out += _pcapng_block(0x0A0D0D0A, shb)
        interface = {}
        for i, port in enumerate(ports):
            interface[port] = i
            options = (
                _pcapng_option(2, _interface_name(tap.node, port, peers).encode())
                + _pcapng_option(9, bytes([9]))  # if_tsresol: 10^-9 s
                + _OPT_END
            )
            out += _pcapng_block(1, struct.pack("<HHI", _LINKTYPE_ETHERNET, 0, snaplen) + options)
        for row, frame in frames(captures):
            ns = row["time_ps"] // 1000
            kept = frame[:snaplen]
            # epb_flags bits 0-1: 1 inbound, 2 outbound.
            flags = _pcapng_option(2, struct.pack("<I", 1 if row["direction"] == 1 else 2)) + _OPT_END
            body = struct.pack("<IIIII", interface[row["port"]], ns >> 32, ns & 0xFFFFFFFF, len(kept), len(frame))
            body += kept + b"\x00" * (-len(kept) % 4) + flags
            out += _pcapng_block(6, body)
    path.write_bytes(bytes(out))
