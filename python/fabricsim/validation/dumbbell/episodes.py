"""Loss episodes of one grid point in the lab, segment by segment (root): the
point run as ``dumbbell record`` runs it, with tcpdump on the sender's and on
the receiver's veth and the sender's ``tcp:tcp_probe`` tracepoint, and what
the captures show (:func:`summarize`): which segments each episode lost,
whether the second loss came on a cwnd increase, whether the first was in a
burst the sender had deferred, how many ACKs acknowledged one segment.
:data:`~fabricsim.validation.dumbbell.band.EPISODES` holds the summaries the
grid's judgement uses (docs/validation/linux.md, "What misses, measured").
With ``--windows`` the point runs with the tracepoints alone (no packet
captures, whose work on the veths moves the result) and :func:`window_cycles`
summarises the sender's window between loss episodes, beside the twin's
(:func:`~fabricsim.validation.dumbbell.twin.twin_window_cycles`).

    python -m fabricsim.validation.dumbbell.episodes reno-1x1-100Mbps-120KB-10s-mtu9000-unpaced OUTDIR
    python -m fabricsim.validation.dumbbell.episodes --windows cubic-1x1-1Gbps-30KB-10s-mtu9000-unpaced OUTDIR
"""

from __future__ import annotations

import bisect
import collections
import re
import struct
import sys
import time
from pathlib import Path
from typing import Any, Optional

from fabricsim.units import parse_rate, parse_size
from fabricsim.validation.dumbbell.setup import DumbbellSetup, _jobs, grid_setups, topology

TRACING = Path("/sys/kernel/tracing")
_TRACEPOINTS = ("tcp/tcp_probe", "tcp/tcp_retransmit_skb", "tcp/tcp_cong_state_set")
#: The bottleneck's own timeline (``capture(qdisc=True)``): every frame the htb root (1:) took in
#: and gave out, and every frame a qdisc dropped (freed after the dequeues its enqueue ran).
_QDISC_TRACEPOINTS = ("qdisc/qdisc_enqueue", "qdisc/qdisc_dequeue", "skb/kfree_skb")
_QDISC_FILTERS = {"qdisc/qdisc_enqueue": "handle == 65536", "qdisc/qdisc_dequeue": "handle == 65536",
                  "skb/kfree_skb": "reason == 64"}


def _tracing(path: str, value: str) -> None:
    (TRACING / path).write_text(value)


def capture(setup: DumbbellSetup, out: Path, nice: int = -10, packets: bool = True,
            qdisc: bool = False) -> dict[str, Any]:
    """Runs ``setup`` once in the lab (root) with the captures in ``out``
    (``s0.pcap``, ``rx.pcap`` unless not ``packets``, ``trace.txt``; with
    ``qdisc`` the bottleneck's enqueues, dequeues and drops in the trace too);
    the bfifo's and the sender's counters."""
    from fabricsim.validation.linux import Lab, LabError

    if not (TRACING / "events" / "tcp" / "tcp_probe").exists():
        raise LabError(f"no tcp_probe tracepoint under {TRACING} (mount it: mount -t tracefs nodev {TRACING})")
    out.mkdir(parents=True, exist_ok=True)
    with Lab(topology(setup), nice=nice) as lab:
        taps = [
            lab.spawn(node, ["tcpdump", "-i", lab.device(node, "r"), "-s", "96", "-B", "65536", "-w", str(out / f"{node}.pcap"), "tcp"])
            for node in ("s0", "rx")
        ] if packets else []
        _tracing("buffer_size_kb", "262144" if qdisc else "65536")
        _tracing("trace", "")
        _tracing("events/tcp/tcp_probe/filter", "dport == 5201 || sport == 5201")
        events = _TRACEPOINTS + (_QDISC_TRACEPOINTS if qdisc else ())
        for event in events:
            if event in _QDISC_FILTERS:
                _tracing(f"events/{event}/filter", _QDISC_FILTERS[event])
            _tracing(f"events/{event}/enable", "1")
        time.sleep(1.5)
        try:
            run = lab.iperf3(_jobs(setup), sample_interval_s=0.25, socket_nodes=("rx",), trace_scheduler=False)
        finally:
            for event in events:
                _tracing(f"events/{event}/enable", "0")
                if event in _QDISC_FILTERS:
                    _tracing(f"events/{event}/filter", "0")
            (out / "trace.txt").write_text((TRACING / "trace").read_text())
            time.sleep(1.0)
            for tap in taps:
                tap.terminate()
            time.sleep(1.0)
        queue = run.qdisc("r", "rx")
        nstat = run.nstat.get("s0", {})
        return {"bottleneck_drops": queue.drops, "sack_recoveries": nstat.get("TcpExtTCPSackRecovery", 0)}


def read_pcap(path: Path) -> list[tuple[float, int, int, int, int, int, int, list[tuple[int, int]]]]:
    """(time, sport, dport, seq, ack, flags, payload, SACK blocks) of every TCP/IPv4 frame of an Ethernet pcap."""
    data = path.read_bytes()
    nanos = struct.unpack("<I", data[:4])[0] == 0xA1B23C4D
    off, frames = 24, []
    while off + 16 <= len(data):
        sec, frac, incl, _ = struct.unpack("<IIII", data[off : off + 16])
        frame = data[off + 16 : off + 16 + incl]
        off += 16 + incl
        if len(frame) < 34 or struct.unpack("!H", frame[12:14])[0] != 0x0800 or frame[23] != 6:
            continue
        ip = frame[14:]
        ihl, total = (ip[0] & 15) * 4, struct.unpack("!H", ip[2:4])[0]
        tcp = ip[ihl:]
        sport, dport, seq, ack = struct.unpack("!HHII", tcp[:12])
        doff = (tcp[12] >> 4) * 4
        sacks, opts, i = [], tcp[20:doff], 0
        while i < len(opts) and opts[i] != 0:
            if opts[i] == 1:
                i += 1
                continue
            if i + 1 >= len(opts):
                break
            length = max(opts[i + 1], 2)
            if opts[i] == 5:
                sacks += [struct.unpack("!II", opts[j : j + 8]) for j in range(i + 2, i + length - 7, 8)]
            i += length
        frames.append((sec + frac * (1e-9 if nanos else 1e-6), sport, dport, seq, ack, tcp[13], total - ihl - doff, sacks))
    return frames


def summarize(out: Path, counters: dict[str, Any], episode_gap_s: float, mss: int = 8948) -> dict[str, Any]:
    """What the captures in ``out`` show; drops less than ``episode_gap_s`` apart are one episode."""
    s0, rx = read_pcap(out / "s0.pcap"), read_pcap(out / "rx.pcap")
    (sport, dport), _ = collections.Counter((f[1], f[2]) for f in s0 if f[6] > 0).most_common(1)[0]
    base = min(f[3] for f in s0 if f[1] == sport and f[6] > 0)
    rel = lambda x: (x - base) & 0xFFFFFFFF  # noqa: E731
    received = collections.Counter(rel(f[3]) for f in rx if f[1] == sport and f[6] > 0)
    sent: collections.Counter[int] = collections.Counter()
    events: list[tuple] = []
    for f in s0:
        if f[1] == sport and f[6] > 0:
            sent[rel(f[3])] += 1
            events.append((f[0], "D", rel(f[3]), sent[rel(f[3])]))
        elif f[1] == dport and f[2] == sport:
            events.append((f[0], "A", rel(f[4]), f[7]))
    events.sort(key=lambda e: (e[0], e[1] == "D"))
    # A sequence number sent k times and received j times: its first k - j transmissions were dropped.
    drops = [(i, e) for i, e in enumerate(events) if e[1] == "D" and e[3] <= sent[e[2]] - received[e[2]]]
    acks = [i for i, e in enumerate(events) if e[1] == "A"]
    ack_number = {i: n for n, i in enumerate(acks)}
    # The sender's tcp_probe after each ACK (state once the ACK and what it sent are done), aligned by snd_una.
    probe = re.compile(r"src=\S+:%d .*snd_una=(0x[0-9a-f]+) snd_cwnd=(\d+)" % sport)
    probes = [(rel(int(m.group(1), 16)), int(m.group(2))) for m in map(probe.search, (out / "trace.txt").read_text().splitlines()) if m]
    shift = max(
        range(-20, 21),
        key=lambda k: sum(1 for n in range(0, len(acks), 7) if 0 <= n + k < len(probes) and probes[n + k][0] == events[acks[n]][2]),
    )
    episodes: list[list[tuple[int, tuple]]] = []
    for d in drops:
        if episodes and d[1][0] - episodes[-1][-1][1][0] < episode_gap_s:
            episodes[-1].append(d)
        else:
            episodes.append([d])

    def trigger(i: int) -> int:
        while events[i][1] != "A":
            i -= 1
        return i

    def burst_after(a: int) -> int:
        n = 0
        while a + 1 + n < len(events) and events[a + 1 + n][1] == "D":
            n += 1
        return n

    def cwnd_after(a: int) -> Optional[int]:
        k = ack_number[a] + shift
        return probes[k][1] if 0 <= k < len(probes) else None

    summary = {**counters, "drops_captured": len(drops), "retransmissions_dropped": sum(1 for _, e in drops if e[3] > 1)}
    counts = collections.Counter()
    gaps: collections.Counter[int] = collections.Counter()
    for episode in episodes:
        if len(episode) > 2:
            counts["more"] += 1
            continue
        if len(episode) == 1:
            counts["one_drop"] += 1
            continue
        counts["two_drops"] += 1
        first, second = trigger(episode[0][0]), trigger(episode[1][0])
        previous = trigger(first - 1)
        acked = round((events[first][2] - events[previous][2]) / mss)
        counts["two_drops_first_in_deferred_burst"] += burst_after(first) > acked + 1
        counts["second_on_ack_with_first_sack" if events[second][3] else "second_on_ack_before_hole"] += 1
        before, after = cwnd_after(trigger(second - 1)), cwnd_after(second)
        counts["second_on_a_cwnd_increase"] += before is not None and after == before + 1
        gaps[(episode[1][1][2] - episode[0][1][2]) // mss] += 1
    one_segment = open_acks = 0
    for a, b in zip(acks, acks[1:]):
        if events[a][3] or events[b][3]:
            continue
        open_acks += 1
        one_segment += round((events[b][2] - events[a][2]) / mss) == 1
    keys = ("one_drop", "two_drops", "more", "two_drops_first_in_deferred_burst", "second_on_ack_before_hole")
    summary.update({"episodes": len(episodes), **{k: counts[k] for k in keys}})
    summary["second_on_ack_with_first_sack"] = counts["second_on_ack_with_first_sack"]
    summary["second_drop_segments_after_first"] = {str(k): v for k, v in sorted(gaps.most_common(3))}
    summary.update({"open_acks": open_acks, "open_acks_of_one_segment": one_segment})
    summary["second_on_a_cwnd_increase"] = counts["second_on_a_cwnd_increase"]
    summary["episode_gap_s"] = episode_gap_s
    return summary


def episode_gap_s(setup: DumbbellSetup) -> float:
    """Drops closer than this are one episode: three drain times of the full
    bfifo (a round trip through the full queue is about one; recoveries of a
    single flow are tens of them apart)."""
    return round(3 * parse_size(setup.buffer) * 8 / parse_rate(setup.rate), 4)


#: ``tcp_probe`` at the data sender (an ACK arriving), and ``tcp_cong_state_set``.
_PROBE = re.compile(r"\s(\d+\.\d+): tcp_probe: .*?src=(\S+) dest=(\S+) .*?snd_cwnd=(\d+) ssthresh=(\d+)")
_STATE = re.compile(r"\s(\d+\.\d+): tcp_cong_state_set: .*?sport=(\d+) dport=(\d+).*?state=(\d+)")
#: A window unchanged for longer than this counts as a flat stretch (CUBIC's hold is HZ / 32).
FLAT_S = 0.020


def cycles(acks: list[tuple[float, int]], entries: list[float], exits: list[float], skip_s: float,
           from_disorder: int = 0, exit_cwnds: Optional[list[int]] = None) -> dict[str, Any]:
    """The window between loss episodes: ``acks`` (time, cwnd in segments) at the
    sender, the times recovery began (``entries``) and ended (``exits``), and how
    many of the entries came from Disorder (SACKed data not yet proven lost)
    rather than at the first SACK.

    ``transitions`` counts, for each window a recovery ended with, the windows the
    next recovery began at (``{exit: {entry: count}}``): the window at the exit is
    ``exit_cwnds`` where given (one per exit), else that of the first ACK after
    it; the window at an entry is that of the last ACK before it."""
    t0 = acks[0][0] if acks else 0.0
    acks = [a for a in acks if a[0] - t0 >= skip_s]
    entries = [e for e in entries if e - t0 >= skip_s]
    span = acks[-1][0] - acks[0][0] if len(acks) > 1 else 0.0
    flats, start = [], acks[0] if acks else None
    for a, b in zip(acks, acks[1:]):
        if b[1] != a[1]:
            if a[0] - start[0] > FLAT_S:
                flats.append((a[1], a[0] - start[0]))
            start = b
    # From each recovery's end to the next one's start (``entries`` in time order).
    after = ((exit_, bisect.bisect_right(entries, exit_)) for exit_ in exits if exit_ - t0 >= skip_s)
    gaps = sorted(entries[i] - exit_ for exit_, i in after if i < len(entries))
    cwnd = collections.Counter(c for _, c in acks)
    times = [t for t, _ in acks]
    # The window at the last ACK before each entry: the window that overflowed. An ACK logged at the
    # entry's own time is the one that began it (a tracepoint's microseconds: the sender's probe of
    # an ACK comes before the state change that ACK makes), and likewise at an exit.
    entry_cwnd = {e: acks[i][1] for e in entries if (i := bisect.bisect_right(times, e) - 1) >= 0}
    at_entry = collections.Counter(entry_cwnd.values())
    moves: dict[int, collections.Counter] = collections.defaultdict(collections.Counter)
    for k, exit_ in enumerate(exits):
        if exit_ - t0 < skip_s:
            continue
        if exit_cwnds is not None:
            left = exit_cwnds[k]
        elif (j := bisect.bisect_right(times, exit_)) < len(acks):
            left = acks[j][1]
        else:
            continue
        i = bisect.bisect_right(entries, exit_)
        if i < len(entries) and entries[i] in entry_cwnd:
            moves[left][entry_cwnd[entries[i]]] += 1
    return {
        "seconds": round(span, 3),
        "recoveries": len(entries),
        "acks_by_cwnd": dict(sorted(cwnd.items())),
        "flat_stretches": len(flats),
        "flat_seconds": round(sum(d for _, d in flats), 3),
        "flat_cwnd": dict(sorted(collections.Counter(c for c, _ in flats).items())),
        "exit_to_entry_us": {f"p{q}": round(gaps[int(len(gaps) * q / 100)] * 1e6) for q in (10, 50, 90)} if gaps else {},
        "cwnd_at_entry": dict(sorted(at_entry.items())),
        "entries_from_disorder": from_disorder,
        "transitions": {w: dict(sorted(moves[w].items())) for w in sorted(moves)},
    }


def window_cycles(trace: Path, skip_s: float = 2.0) -> dict[str, Any]:
    """:func:`cycles` of the busiest connection to port 5201 in a tracefs
    ``trace`` file (``tcp_probe`` and ``tcp_cong_state_set``, as :func:`capture`
    writes it), after its first ``skip_s`` seconds."""
    acks: dict[str, list[tuple[float, int]]] = collections.defaultdict(list)
    states: dict[str, list[tuple[float, int]]] = collections.defaultdict(list)
    for line in trace.read_text().splitlines():
        m = _PROBE.search(line)
        if m and m.group(3).endswith(":5201"):
            acks[m.group(2)].append((float(m.group(1)), int(m.group(4))))
            continue
        m = _STATE.search(line)
        if m and m.group(3) == "5201":
            states[m.group(2)].append((float(m.group(1)), int(m.group(4))))
    if not acks:
        raise ValueError(f"{trace}: no tcp_probe lines of a connection to port 5201")
    conn = max(acks, key=lambda c: len(acks[c]))
    moves = states.get(conn.rsplit(":", 1)[1], [])
    # TCP_CA_Recovery is 3; the move back to TCP_CA_Open (0) ends it; Disorder is 1.
    t0 = acks[conn][0][0]
    entries = [t for t, state in moves if state == 3]
    exits = [t for (t, state), (_, before) in zip(moves[1:], moves) if state == 0 and before == 3]
    via = sum(1 for (t, state), (_, before) in zip(moves[1:], moves) if state == 3 and before == 1 and t - t0 >= skip_s)
    return cycles(acks[conn], entries, exits, skip_s, via)


_QDISC_EVENT = re.compile(r"\s(\d+\.\d+): (qdisc_enqueue|qdisc_dequeue|kfree_skb): (.*)")


def qdisc_timeline(trace: Path, frame_s: float, skip_s: float = 2.0, around_s: float = 60e-6) -> dict[str, Any]:
    """The bottleneck's own timeline in a ``capture(qdisc=True)`` trace, after
    its first ``skip_s`` seconds: how far each dequeue in a backlog came from one
    frame time (``frame_s``) after the one before, and how many drops had a frame
    taken in within ``around_s`` after them (a later frame of the same burst kept)."""
    events: list[tuple[float, str]] = []
    for line in trace.read_text().splitlines():
        m = _QDISC_EVENT.search(line)
        if not m:
            continue
        kind, rest = m.group(2), m.group(3)
        if kind == "qdisc_dequeue" and "packets=1" not in rest:
            continue  # an empty dequeue
        events.append((float(m.group(1)), {"qdisc_enqueue": "E", "qdisc_dequeue": "D", "kfree_skb": "X"}[kind]))
    if not events:
        raise ValueError(f"{trace}: no qdisc events (capture with qdisc=True)")
    t0 = events[0][0]
    backlog, last_dequeue, spacing = 0, None, []
    for t, kind in events:
        if kind == "E":
            backlog += 1
        elif kind == "D":
            # A dequeue with another frame waiting since the previous one: the shaper's own spacing.
            if last_dequeue is not None and backlog >= 2 and t - t0 >= skip_s:
                spacing.append((t - last_dequeue - frame_s) * 1e6)
            backlog = max(0, backlog - 1)
            last_dequeue = t
    spacing.sort()
    drops = [i for i, (t, kind) in enumerate(events) if kind == "X" and t - t0 >= skip_s]
    kept_after = sum(
        1 for i in drops
        if any(kind == "E" for t, kind in events[i + 1:i + 8] if t - events[i][0] <= around_s)
    )
    return {
        "drops": len(drops),
        "drops_with_a_frame_taken_in_after": kept_after,
        "dequeue_spacing_minus_frame_us": {
            f"p{q}": round(spacing[int(len(spacing) * q / 100)], 1) for q in (1, 10, 50, 90, 99)
        } if spacing else {},
    }


def main(argv: list[str]) -> int:
    windows = "--windows" in argv
    qdisc = "--qdisc" in argv
    argv = [a for a in argv if a not in ("--windows", "--qdisc")]
    name, out = argv[0], Path(argv[1])
    setup = {s.name: s for s in grid_setups()}[name]
    counters = capture(setup, out, packets=not windows, qdisc=qdisc)
    if windows:
        report = {**counters, **window_cycles(out / "trace.txt")}
        if qdisc:
            frame_s = (setup.mtu + 14) * 8 / parse_rate(setup.rate)
            report["bottleneck"] = qdisc_timeline(out / "trace.txt", frame_s)
        print({"kernel": report})
        return 0
    print(summarize(out, counters, episode_gap_s=episode_gap_s(setup)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
