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


def test_window_cycles_reads_the_senders_window_and_its_recoveries_from_a_trace(tmp_path: Path) -> None:
    """``--windows``: the data sender's tcp_probe lines (ACKs arriving at the socket whose
    remote port is 5201) and its tcp_cong_state_set moves into and out of recovery (3, 0)."""
    from fabricsim.validation.dumbbell.episodes import window_cycles

    def probe(t: float, cwnd: int, sport: int = 47568) -> str:
        return (f"          iperf3-1   [000] ..s2. {t:.6f}: tcp_probe: family=AF_INET src=198.18.0.1:{sport} "
                f"dest=198.18.1.2:5201 mark=0x0 data_len=0 snd_nxt=0x10 snd_una=0x1 snd_cwnd={cwnd} "
                f"ssthresh=3 snd_wnd=62636 srtt=100 rcv_wnd=62720 sock_cookie=9a")

    def state(t: float, value: int, sport: int = 47568) -> str:
        return (f"          <idle>-0   [001] .Ns2. {t:.6f}: tcp_cong_state_set: family=AF_INET sport={sport} "
                f"dport=5201 saddr=198.18.0.1 daddr=198.18.1.2 cong_state={value}")

    lines = [probe(100.0, 10), probe(100.0, 10, sport=47558)]  # the control connection: fewer ACKs
    t = 101.0
    # Three cycles: 3 -> 4 -> 5, a recovery; the last one flat at 3 for 30 ms first.
    for cycle in range(3):
        if cycle == 2:
            lines += [probe(t, 3), probe(t + 0.030, 3)]
            t += 0.031
        for cwnd in (3, 4, 5):
            lines.append(probe(t, cwnd))
            t += 0.0001
        if cycle == 1:  # this entry comes from Disorder (SACKed data, no loss proven yet)
            lines.append(state(t - 0.00005, 1))
        lines += [state(t, 3), probe(t + 0.00002, 4)]
        t += 0.00005
        lines.append(state(t, 0))
        t += 0.0002
    path = tmp_path / "trace.txt"
    path.write_text("\n".join(lines) + "\n")
    out = window_cycles(path, skip_s=0.5)
    assert out["recoveries"] == 3
    assert out["flat_stretches"] == 1 and out["flat_cwnd"] == {3: 1}
    assert out["acks_by_cwnd"] == {3: 5, 4: 6, 5: 3}
    assert out["cwnd_at_entry"] == {5: 3} and out["entries_from_disorder"] == 1
    # Each exit at a window of 3 (the first ACK after it) led to an entry at 5; the last exit has no next entry.
    assert out["transitions"] == {3: {5: 2}}
    # Exit to the next entry: 0.2 ms + three ACKs 0.1 ms apart, and once the 31 ms stretch too.
    assert out["exit_to_entry_us"]["p10"] == 500 and out["exit_to_entry_us"]["p90"] == 31_500


def test_the_twins_window_at_the_cubic_single_flow_on_30kb_is_the_one_documented() -> None:
    """docs/validation/linux.md, "How the kernel's single flows begin a loss episode": at
    cubic-1x1-1Gbps-30KB the link twin's window sits flat at 4 segments (the kernel's at 3) and
    every episode begins at the first SACK; at 300 Mbps the twin with the bottleneck built as the
    lab builds it enters most of its episodes one ACK later, from Disorder, as the kernel does
    (1,000 of 1,702 there), because Linux keeps the RTT of the cumulatively acknowledged segment
    (``rack_rtt_in_ack_order``)."""
    from fabricsim.validation.dumbbell import REPEAT_GRID_RESULTS, recorded
    from fabricsim.validation.dumbbell.twin import twin_window_cycles

    records = {r["name"].split("-10s")[0]: r for r in recorded(REPEAT_GRID_RESULTS)}
    link = twin_window_cycles(records["cubic-1x1-1Gbps-30KB"])
    assert link["recoveries"] == 1844 and link["flat_cwnd"] == {4: 212}
    assert link["entries_from_disorder"] == 0 and min(link["cwnd_at_entry"]) == 5
    shaped = twin_window_cycles(records["cubic-1x1-300Mbps-30KB"], shaped_router=True)
    assert shaped["recoveries"] == 1460 and shaped["entries_from_disorder"] == 830
    assert shaped["flat_cwnd"] == {3: 134} and min(shaped["cwnd_at_entry"]) == 4


def test_the_twins_single_flow_at_1gbps_on_30kb_runs_one_orbit_of_recoveries() -> None:
    """docs/validation/linux.md, "From one recovery to the next": with the bottleneck built as
    the lab builds it, the twin's CUBIC flow at 1 Gbps on 30 KB repeats one orbit (a recovery
    from a window of 6 ends at 4, the next begins at 4 and ends at 2, the flow grows back to 6),
    where the kernel spreads each exit over three to five entry windows."""
    from fabricsim.validation.dumbbell import REPEAT_GRID_RESULTS, recorded
    from fabricsim.validation.dumbbell.twin import twin_window_cycles

    record = next(r for r in recorded(REPEAT_GRID_RESULTS) if r["name"].startswith("cubic-1x1-1Gbps-30KB"))
    moves = twin_window_cycles(record, shaped_router=True)["transitions"]
    assert moves[2][6] == 3450 and moves[4][4] == 3388
    assert sum(sum(row.values()) for row in moves.values()) == 8891


def test_qdisc_timeline_reads_the_shapers_spacing_and_what_follows_each_drop(tmp_path: Path) -> None:
    """``--qdisc``: the htb root's enqueues and (non-empty) dequeues and the qdisc drops; a
    dequeue with a frame still waiting is measured against one frame time, and a drop followed
    within 60 us by an enqueue counts as a later frame of the burst kept."""
    from fabricsim.validation.dumbbell.episodes import qdisc_timeline

    def line(t: float, kind: str, rest: str) -> str:
        return f"          <idle>-0       [001] b.s2. {t:.6f}: {kind}: {rest}"

    enq = "enqueue ifindex=3 qdisc handle=0x10000 parent=0xFFFFFFFF skbaddr=0000000000000001"
    deq = "dequeue ifindex=3 qdisc handle=0x10000 parent=0xFFFFFFFF txq_state=0x0 packets=%d skbaddr=0000000000000001"
    drop = "skbaddr=0000000000000002 rx_sk=0000000000000000 protocol=2048 location=x reason: QDISC_DROP"
    t = 100.0
    lines = [line(t, "qdisc_enqueue", enq)]
    t = 101.0
    # Three frames in, then dequeues 240 us, 242 us and 238 us apart; one empty dequeue.
    lines += [line(t, "qdisc_enqueue", enq) for _ in range(3)]
    for k, gap in enumerate((0.0, 240e-6, 242e-6, 238e-6)):
        t += gap
        lines.append(line(t, "qdisc_dequeue", deq % 1))
    lines.append(line(t + 1e-6, "qdisc_dequeue", deq % 0))
    # A drop with nothing taken in after it, and one followed by an enqueue 5 us later.
    lines += [line(t + 10e-6, "kfree_skb", drop), line(t + 200e-6, "kfree_skb", drop),
              line(t + 205e-6, "qdisc_enqueue", enq)]
    path = tmp_path / "trace.txt"
    path.write_text("\n".join(lines) + "\n")
    out = qdisc_timeline(path, frame_s=240e-6, skip_s=0.5)
    assert out["drops"] == 2 and out["drops_with_a_frame_taken_in_after"] == 1
    # Dequeues with another frame waiting: the second (+0 us) and third (+2 us); the fourth took the last.
    assert out["dequeue_spacing_minus_frame_us"]["p50"] == 2.0
