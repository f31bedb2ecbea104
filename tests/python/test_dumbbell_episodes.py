"""The lab's loss-episode reader (fabricsim.validation.dumbbell.episodes) on a
synthetic capture: which transmissions were dropped, how they group into
episodes, and what the sender did around them."""

from __future__ import annotations

import struct
from pathlib import Path

from fabricsim.validation.dumbbell.episodes import episode_gap_s, read_pcap, summarize
from fabricsim.validation.dumbbell.setup import grid_setups

MSS, BASE, SPORT, DPORT = 8948, 1000, 40000, 5201


def _frame(t: float, sport: int, dport: int, seq: int, ack: int, payload: int, sacks=()) -> bytes:
    opts = b""
    if sacks:
        opts = b"\x01\x01\x05" + bytes([2 + 8 * len(sacks)]) + b"".join(struct.pack("!II", a, b) for a, b in sacks)
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, (5 + len(opts) // 4) << 4, 0x10, 512, 0, 0) + opts
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp) + payload, 0, 0, 64, 6, 0, bytes(4), bytes(4))
    frame = bytes(12) + b"\x08\x00" + ip + tcp
    return struct.pack("<IIII", int(t), round((t % 1) * 1e6), len(frame), len(frame) + payload) + frame


def _pcap(path: Path, frames: list[bytes]) -> None:
    path.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 96, 1) + b"".join(frames))


def test_a_two_drop_episode_after_a_deferred_burst_with_the_second_on_a_cwnd_increase(tmp_path: Path) -> None:
    data = lambda t, k: _frame(t, SPORT, DPORT, BASE + k * MSS, 1, MSS)  # noqa: E731
    ack = lambda t, k, sacks=(): _frame(t, DPORT, SPORT, 1, BASE + k * MSS, 0, sacks)  # noqa: E731
    sent = [
        ack(10.000, 0), data(10.0001, 0),
        # One segment acknowledged, three sent: an earlier ACK had deferred; segment 3 is dropped.
        ack(10.001, 1), data(10.0011, 1), data(10.0011, 2), data(10.0011, 3),
        # The next cwnd increase (10 -> 11) before the hole is reported: segment 5 is dropped.
        ack(10.002, 2), data(10.0021, 4), data(10.0021, 5),
        ack(10.003, 3, [(BASE + 4 * MSS, BASE + 5 * MSS)]), data(10.0031, 3),
    ]
    _pcap(tmp_path / "s0.pcap", sent)
    _pcap(tmp_path / "rx.pcap", [data(10.0002, k) for k in (0, 1, 2, 4, 3)])
    probe = "tcp_probe: family=AF_INET src=198.18.0.1:{} dest=198.18.1.2:5201 snd_una={:#x} snd_cwnd={}"
    (tmp_path / "trace.txt").write_text(
        "\n".join(probe.format(SPORT, BASE + k * MSS, cwnd) for k, cwnd in ((0, 10), (1, 10), (2, 11), (3, 11)))
    )
    assert len(read_pcap(tmp_path / "s0.pcap")) == len(sent)
    s = summarize(tmp_path, {"bottleneck_drops": 2}, episode_gap_s=0.01)
    assert (s["drops_captured"], s["retransmissions_dropped"], s["episodes"], s["two_drops"]) == (2, 0, 1, 1)
    assert s["two_drops_first_in_deferred_burst"] == 1
    assert (s["second_on_ack_before_hole"], s["second_on_ack_with_first_sack"], s["second_on_a_cwnd_increase"]) == (1, 0, 1)
    assert s["second_drop_segments_after_first"] == {"2": 1}
    assert (s["open_acks"], s["open_acks_of_one_segment"]) == (2, 2)
    # Apart by more than the gap: two episodes of one drop.
    assert summarize(tmp_path, {}, episode_gap_s=0.0005)["one_drop"] == 2


def test_episodes_are_three_drain_times_of_the_full_bfifo_apart() -> None:
    gaps = {s.name: episode_gap_s(s) for s in grid_setups()}
    assert gaps["reno-1x1-100Mbps-120KB-10s-mtu9000-unpaced"] == 0.0288
    assert gaps["reno-1x1-300Mbps-120KB-10s-mtu9000-unpaced"] == 0.0096
