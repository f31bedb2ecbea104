"""R5 ``tolly-lightfleet``: end-to-end latency, socket throughput, multicast and power of a 10G
cut-through switch with low-latency NICs vs a switch-free optical broadcast fabric.

One scenario (``data/tolly-lightfleet/tolly-latency.yaml``) holds both
fabrics, 24 stations each, whose hosts run the host datapath model (a
kernel-bypass stack on a low-latency 10G NIC; ``docs/models/host.md``).

- Latency: UDP and TCP ping-pong between two stations (half the round trip,
  as the report's method), per frame size, through the stations' stacks
  (:mod:`fabricsim.experiments.rfc2544`, ``host_latency``), with where the time goes.
- Socket throughput: a streaming application's MB/s per message size
  (``socket``), UDP and TCP on the kernel-bypass and the kernel stack.
- Multicast: one stream to 7 members, native replication or unicast copies
  from the sender: delivery time to the last member and the bytes the links carried.
- RFC 2544 device latency and throughput between ideal tester ports.
- Power with 24 ports at idle, 10% and 100% load (:mod:`fabricsim.experiments.power_load`).

The report's claims (``CLAIMS``) are read from the series of the stacks its
set-up names: the Lightfleet stations ran sockets through VMA (a kernel-bypass
library) or Lightfleet's native datagram API, the Solarflare stations sockperf
on the adapter's kernel driver; ``docs/reproductions/tolly-lightfleet.md``.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from fabricsim.reproductions import page as P
from fabricsim.reproductions.base import Assumption, Report, Test, assume, grid_points, load_yaml
from fabricsim.reproductions.claims import Simulated, frame, pick

NAME = "tolly-lightfleet"
PAIRS = {"fm4000-like": ("s0", "s1"), "optical-broadcast": ("f0", "f1")}
NODES = {"ct10g": "fm4000-like", "bcast": "optical-broadcast"}
#: The multicast stream of each fabric in the scenario (its group and sender).
STREAMS = {"fm4000-like": "md-switch", "optical-broadcast": "md-fabric"}
#: Host parts of the latency breakdown table, in a message's order.
PARTS = ("stack_tx_ps", "nic_tx_ps", "serialization_ps", "header_ps", "device_ps", "propagation_ps",
         "nic_rx_ps", "irq_wait_ps", "stack_rx_ps")
#: The report's two systems and the simulated fabric each is read from.
FABRIC, SWITCH = "optical-broadcast", "fm4000-like"
#: The simulated series that stands for each stack of the report's set-up: Lightfleet's native
#: datagram API and its sockets (TCP through VMA, a kernel-bypass library) are the scenario's
#: kernel-bypass UDP and TCP; sockperf on the Solarflare adapter's kernel driver is the kernel stack,
#: over UDP for latency (Figure 1's note) and TCP for throughput (the sockets stack of both systems).
NATIVE, SOCKETS = "scenario udp", "scenario tcp"
KERNEL_LATENCY, KERNEL_SOCKETS = "linux-kernel udp", "linux-kernel tcp"
#: The power runs' load per claimed load level (% of 10G per port).
LOADS = {0: 0.0, 10: 0.1, 100: 1.0}


#: Each system's adapter, over the scenario's NIC (PCIe Gen3 x8 DMA, docs/models/devices.md): the
#: Solarflare SFN7122F is a cut-through adapter (Solarflare Server Adapter User Guide SF-103837-CD),
#: which the NIC model expresses as DMA overlapping the wire from the first 256 B PCIe transfer (the
#: TLP payload of the DMA figure); no public figure describes the Lightfleet HBA's datapath, so its
#: stations keep the store-and-forward NIC.
ADAPTERS: dict[str, dict[str, Any]] = {"fm4000-like": {"cut_through": "256B"}, "optical-broadcast": {}}


def _scenario(device: str, params: dict[str, Any]) -> Any:
    from fabricsim import from_dict

    doc = load_yaml(NAME, "tolly-latency.yaml")
    model = doc["network"]["host"]["model"]
    model["nic"] = {**model["nic"], **ADAPTERS[device]}
    return from_dict(assume(doc, params))


def latency(params: dict[str, Any], full: bool) -> dict[str, list[dict[str, Any]]]:
    from fabricsim.experiments.rfc2544 import Settings, rfc2544

    frame = int(params["frame_bytes"])
    out = rfc2544(_scenario(params["device"], params), tests=["host_latency"], frame_sizes=[frame],
                  pairs=[PAIRS[params["device"]]],
                  stacks=[params["stack"]], settings=Settings(messages=int(params["messages"])))
    rows = []
    for r in out["host_latency"].to_dicts():
        row = {"device": params["device"], "stack": r["stack"], "frame_bytes": frame,
               "latency_us": r["latency_ps"] / 1e6, "closed_form_us": r["closed_form_ps"] / 1e6,
               "latency_max_us": r["latency_max_ps"] / 1e6}
        row.update({p.removesuffix("_ps") + "_ns": r[p] / 1e3 for p in PARTS})
        rows.append(row)
    return {"results": rows}


def socket(params: dict[str, Any], full: bool) -> dict[str, list[dict[str, Any]]]:
    from fabricsim.experiments.rfc2544 import Settings, rfc2544

    frame = int(params["frame_bytes"])
    out = rfc2544(_scenario(params["device"], params), tests=["socket"], frame_sizes=[frame],
                  pairs=[PAIRS[params["device"]]],
                  stacks=[params["stack"]], settings=Settings(trial_ps=int(params["trial_us"]) * 1_000_000))
    rows = [{"device": params["device"], "stack": r["stack"], "frame_bytes": frame,
             "message_bytes": r["message_bytes"], "MBps": r["MBps"], "closed_form_MBps": r["closed_form_MBps"],
             "limit": r["limit"]} for r in out["socket"].to_dicts()]
    return {"results": rows}


def multicast(params: dict[str, Any], full: bool) -> dict[str, list[dict[str, Any]]]:
    """The fabric's multicast stream alone, replicated natively or by unicast copies at the sender."""
    from fabricsim import from_dict, run

    doc = load_yaml(NAME, "tolly-latency.yaml")
    group = STREAMS[params["device"]]
    stream = next(t for t in doc["traffic"] if t.get("group") == group)
    doc["traffic"] = [{**stream, "replication": params["replication"]}]
    doc["duration"] = f"{params['duration_us']}us"
    r = run(from_dict(doc))
    m = r.multicast.row(0, named=True)
    links = r.links.filter(pl.col("bytes") > 0)
    sender = int(links.filter(pl.col("src") == stream["src"])["bytes"].sum())
    members = len(next(g for g in doc["multicast"]["groups"] if g["name"] == group)["members"])
    return {"results": [{
        "device": params["device"],
        "replication": params["replication"],
        "members": members,
        "messages": m["messages"],
        "complete": m["messages_complete"],
        "last_member_mean_us": m["last_member_latency_mean_ps"] / 1e6,
        "last_member_max_us": m["last_member_latency_max_ps"] / 1e6,
        "frames_sent": m["frames_sent"],
        "copies_in_network": m["copies"],
        "sender_link_bytes": sender,
        "links_used": links.height,
        "bytes_all_links": int(links["bytes"].sum()),
        "bytes_per_message_sender_link": sender / m["messages"] if m["messages"] else None,
    }]}


def rfc2544_device(params: dict[str, Any], full: bool) -> dict[str, list[dict[str, Any]]]:
    from fabricsim.experiments.rfc2544 import Settings, rfc2544

    frame = int(params["frame_bytes"])
    out = rfc2544(_scenario(params["device"], params), tests=["throughput", "latency"], frame_sizes=[frame],
                  pairs=[PAIRS[params["device"]]],
                  settings=Settings(trial_ps=int(params["trial_us"]) * 1_000_000))
    rows = []
    lat = out["latency"].to_dicts()
    for t in out["throughput"].to_dicts():
        row = {"device": params["device"], "frame_bytes": frame, "throughput_pct": 100 * t["load"],
               "frames_per_s": t["frames_per_s"]}
        if lat:
            row.update(method=lat[0]["method"], device_latency_us=lat[0]["latency_ps"] / 1e6)
        rows.append(row)
    return {"results": rows}


def power(params: dict[str, Any], full: bool) -> dict[str, list[dict[str, Any]]]:
    from fabricsim import from_dict
    from fabricsim.experiments.power_load import power_at_loads

    doc = load_yaml(NAME, "tolly-latency.yaml")
    doc["duration"] = f"{params['duration_us']}us"
    t = power_at_loads(from_dict(doc), loads=[float(params["load"])])
    t = t.filter(pl.col("node").is_in(list(NODES))).with_columns(
        pl.col("node").replace_strict(NODES).alias("device"), (pl.col("load") * 100).alias("load_pct"))
    return {"results": t.to_dicts()}


def _at(table: pl.DataFrame, **where: Any) -> dict[str, Any]:
    for k, v in where.items():
        table = table.filter(pl.col(k) == v)
    return table.row(0, named=True) if table.height else {}


def _latency_text(r: pl.DataFrame) -> list[str]:
    text = [P.para(
        "One-way latency is half the round trip of a ping-pong with one message outstanding, from the "
        "sending application to the receiving one: the stations' stack and NIC at both ends, the cables, the "
        "fabric. The stations are the host datapath model (docs/models/host.md): a kernel-bypass stack "
        "(100-150 ns per datagram plus 0.05 ns per byte, no system calls, no interrupts) on a low-latency "
        "10G NIC (PCIe Gen3 x8 DMA at 0.139 ns per byte, 300 ns to send by programmed I/O, 250 ns to "
        "receive), the same on both fabrics, all stated assumptions. The kernel stack on the same NIC "
        "(system calls, interrupts, driver: linux-kernel) is the second pair of series. The switch starts "
        "forwarding after a 64 B header and adds 500 ns first bit to first bit (Arista 7124SX data sheet); the "
        "broadcast fabric after a 14 B header plus 300 ns (an assumption: no public figure). Every UDP point "
        "equals the closed form built from these parameters to the picosecond (closed_form_us). The TCP series "
        "are a TCP_RR-like ping-pong over one connection whose replies carry the ACKs of the requests: from the "
        "third message on each takes the closed form with the tcp stage exactly; its mean is a little above it "
        "because the first request and reply wait behind a quick ACK (the receivers are not yet in ping-pong "
        "mode). TCP points exist for frames of one segment with payload only (128..1518 B)."),
        P.para(
        "The report's two systems differ in their stations as well as in their fabrics: the Lightfleet "
        "stations ran sockperf through VMA (a kernel-bypass library) or Lightfleet's native datagram API, the "
        "Solarflare stations sockperf on the adapter's kernel driver (the report names no bypass library "
        "there), and in their adapters: the Solarflare SFN7122F is cut-through (its DMA overlaps the wire), "
        "while nothing public describes the Lightfleet adapter's datapath, so its stations keep the "
        "store-and-forward NIC. The claims below are read accordingly: the kernel-bypass series on the "
        "broadcast fabric against the kernel series on the switch. The same stack on both fabrics shows the "
        "fabrics and their adapters alone.")]
    if r is None or r.height == 0:
        return text
    a = _at(r, device=FABRIC, stack=NATIVE, frame_bytes=64)
    b = _at(r, device=SWITCH, stack=NATIVE, frame_bytes=64)
    k = _at(r, device=SWITCH, stack=KERNEL_LATENCY, frame_bytes=64)
    if a and b and k:
        text.append(P.para(
            f"At 64 B with the same kernel-bypass stack on both, the fabric takes {a['latency_us']:.3f} us and the "
            f"switch {b['latency_us']:.3f} us: the difference is the devices' "
            f"{b['device_ns'] + b['header_ns'] - a['device_ns'] - a['header_ns']:.0f} ns (device latency and header "
            "time), and it comes from the fabric's assumed 300 ns; a 64 B frame fits the adapters' first PCIe "
            "transfer, so the cut-through Solarflare adapter saves nothing there. Through the kernel "
            f"stack the same 64 B message takes {k['latency_us']:.2f} us one way ({k['stack_tx_ns']:.0f} ns to "
            f"send, {k['stack_rx_ns']:.0f} ns to receive): the stacks, not the fabrics, make most of the "
            "difference between the report's two systems."))
    big = _at(r, device=FABRIC, stack=NATIVE, frame_bytes=9216)
    ct = _at(r, device=SWITCH, stack=NATIVE, frame_bytes=9216)
    if big and ct:
        text.append(P.para(
            f"At 9216 B the Lightfleet stations' store-and-forward DMA (the whole frame over PCIe at both ends: "
            f"{big['nic_tx_ns'] + big['nic_rx_ns']:.0f} ns) and the sender's serialization "
            f"({big['serialization_ns']:.0f} ns) dominate; the Solarflare adapter, cut-through, overlaps its DMA "
            f"with the wire and pays {ct['nic_tx_ns'] + ct['nic_rx_ns']:.0f} ns at both ends (the fixed latencies "
            "and one 256 B transfer each). Cut-through devices save a serialization or a copy per stage, not "
            "the wire's own time."))
    return text


def render(tables: dict[str, pl.DataFrame], full: bool) -> str:
    lat = tables.get("latency/results")
    sock = tables.get("socket/results")
    mc = tables.get("multicast/results")
    dev = tables.get("rfc2544/results")
    p = tables.get("power/results")
    breakdown = None
    if lat is not None and lat.height:
        breakdown = lat.filter(pl.col("frame_bytes").is_in([64, 1518, 9216])).select(
            "device", "stack", "frame_bytes", *[c.removesuffix("_ps") + "_ns" for c in PARTS], "latency_us")
    socket_text = [P.para(
        "A streaming application sends messages of frame size - 46 bytes (one UDP datagram each, or one TCP "
        "write each) as fast as its socket takes them; frames of 110 and 558 B carry the report's 64 and 512 B "
        "messages. UDP's MB/s is the smallest of the wire's goodput and message / CPU time per message on the "
        "sending and the receiving core (closed_form_MBps, within 1 % in the tests): small messages are "
        "CPU-bound (the receive core limits: limit = rx_core), large ones wire-bound. Both fabrics carry 10G "
        "line rate at every size, so per size and stack the two fabrics' MB/s are the same; the stacks make "
        "the difference. TCP streams the messages into full segments: without system calls (kernel bypass) it "
        "is wire-bound at every message size; the kernel stack pays a system call per write. TCP has no "
        "closed form here.")]
    multicast_text = [P.para(
        "One 100 Mb/s stream of 256 B frames to 7 members on each fabric, on its own. Native replication sends "
        "each frame once over the sender's link and copies it in the device (the broadcast fabric reaches every "
        "adapter and the members keep it); unicast emulation sends one copy per member from the sender, so the "
        "sender's link carries 7 times the bytes and the last member waits behind six copies (plus the "
        "sender's per-datagram stack cost for each). The report ran no multicast test; its claim is the "
        "vendor's.")]
    return "".join([
        P.test_section(
            "Latency per frame size (ping-pong, half round trip)",
            P.line_figure("tolly-latency", lat, "frame_bytes", "latency_us", series=("device", "stack"),
                          xlabel="frame size (B)", ylabel="one-way latency (us)", logx=True),
            *_latency_text(lat),
            P.details_table("Where the time goes (ns, one way, unloaded)", breakdown),
            P.details_table("All latency points", lat)),
        P.test_section(
            "Socket throughput per message size",
            P.line_figure("tolly-socket", sock, "frame_bytes", "MBps", series=("device", "stack"),
                          xlabel="frame size (B)", ylabel="MB/s of messages received", logx=True),
            *socket_text, P.table(sock)),
        P.test_section("Multicast: native vs unicast copies", *multicast_text, P.table(mc)),
        P.test_section(
            "RFC 2544 device latency and throughput (ideal tester ports)",
            P.line_figure("tolly-device-latency", dev, "frame_bytes", "device_latency_us", xlabel="frame size (B)",
                          ylabel="RFC 1242 latency (us)", logx=True),
            P.para("The devices alone, between ideal tester ports (RFC 1242: first bit in to first bit out for "
                   "both cut-through devices): 500 ns for the switch, 14 B at 10G plus 300 ns for the fabric, at "
                   "every frame size; both forward at line rate without loss."),
            P.table(dev)),
        P.test_section(
            "Power at idle, 10% and 100% load",
            P.line_figure("tolly-power", p, "load_pct", "mean_w", xlabel="load (% of 10G per port)",
                          ylabel="mean power (W)"),
            P.para("Power of each fabric with 24 ports in use, bidirectional station-to-station UDP. The power "
                   "model is a fixed part per device and port plus energy per bit and per packet "
                   "(docs/models/power.md). The switch's figures are the Arista 7124SX's (5 W per port typical), "
                   "not the report's 7150S-52; the fabric's are assumptions (10 W + 3 W per adapter + 10 pJ/bit: "
                   "no public figure); the split between fixed and traffic-proportional parts is an assumption "
                   "for both."),
            P.table(p))])


# The report's claims (data/tolly-lightfleet/claims.yaml), read from the tables.

def _latency(tables: Any, device: str, stack: str, frame_bytes: int) -> float:
    return pick(tables, "latency/results", device=device, stack=stack, frame_bytes=frame_bytes)["latency_us"]


def _latency_scale(full: bool) -> str | None:
    return None if full else "200 ping-pongs (--full: 2000; the report: 3 runs of 60 s); unloaded, every message alike"


def _lightfleet_latency(size: int) -> Any:
    def f(tables: Any, full: bool) -> Simulated:
        return Simulated(_latency(tables, FABRIC, NATIVE, size), scale=_latency_scale(full))
    return f


def _switch_latency(size: int) -> Any:
    def f(tables: Any, full: bool) -> Simulated:
        mine, fabric = _latency(tables, SWITCH, KERNEL_LATENCY, size), _latency(tables, FABRIC, NATIVE, size)
        return Simulated(mine, holds=mine > fabric, scale=_latency_scale(full))
    return f


def _latency_better(size: int) -> Any:
    """The report's relative metric, (1 - Lightfleet / Arista-Solarflare) x 100."""
    def f(tables: Any, full: bool) -> Simulated:
        fabric, switch = _latency(tables, FABRIC, NATIVE, size), _latency(tables, SWITCH, KERNEL_LATENCY, size)
        alone = 100 * (1 - fabric / _latency(tables, SWITCH, NATIVE, size))
        pct = 100 * (1 - fabric / switch)
        return Simulated(pct, holds=fabric < switch, scale=_latency_scale(full),
                         text=f"{pct:.1f} % ({fabric:.2f} vs {switch:.2f} us); the fabrics and adapters alone (kernel bypass on "
                              f"both): {alone:.1f} %")
    return f


def _latency_lower_everywhere(tables: Any, full: bool) -> Simulated:
    t = frame(tables, "latency/results")
    switch = {r["frame_bytes"]: r["latency_us"] for r in t.filter(
        (pl.col("device") == SWITCH) & (pl.col("stack") == KERNEL_LATENCY)).to_dicts()}
    fabric = t.filter((pl.col("device") == FABRIC) & pl.col("stack").is_in([NATIVE, SOCKETS])).to_dicts()
    pairs = [(r["frame_bytes"], r["stack"], r["latency_us"], switch[r["frame_bytes"]]) for r in fabric
             if r["frame_bytes"] in switch]
    if not pairs:
        raise KeyError("no latency point of both systems")
    worst = max(pairs, key=lambda x: x[2] / x[3])
    return Simulated(holds=all(a < b for _, _, a, b in pairs), scale=_latency_scale(full),
                     text=f"lower at {sum(a < b for _, _, a, b in pairs)} of {len(pairs)} points "
                          f"({min(switch)}..{max(switch)} B, both Lightfleet stacks); closest: {worst[0]} B "
                          f"{worst[1]}, {worst[2]:.2f} vs {worst[3]:.2f} us")


def _native_vs_sockets(tables: Any, full: bool) -> Simulated:
    t = frame(tables, "latency/results").filter((pl.col("device") == FABRIC) & (pl.col("frame_bytes") <= 2176))
    native = {r["frame_bytes"]: r["latency_us"] for r in t.filter(pl.col("stack") == NATIVE).to_dicts()}
    sockets = {r["frame_bytes"]: r["latency_us"] for r in t.filter(pl.col("stack") == SOCKETS).to_dicts()}
    sizes = sorted(set(native) & set(sockets))
    if not sizes:
        raise KeyError("no frame size with both stacks")
    gaps = [sockets[s] - native[s] for s in sizes]
    return Simulated(holds=all(g >= 0 for g in gaps), scale=_latency_scale(full),
                     text=f"native (kernel-bypass UDP) below sockets (kernel-bypass TCP) by {min(gaps) * 1e3:.0f}.."
                          f"{max(gaps) * 1e3:.0f} ns at {sizes[0]}..{sizes[-1]} B (TCP: one segment per message "
                          "only, so no 64 or 2176 B point)")


def _mbps(tables: Any, device: str, stack: str, message: int) -> float:
    return pick(tables, "socket/results", device=device, stack=stack, message_bytes=message)["MBps"]


def _socket_scale(full: bool) -> str | None:
    return None if full else "1 ms UDP trials, 10 ms TCP trials (--full: 10 ms; the report: 3 runs of 60 s)"


def _socket_value(device: str, stack: str, message: int, against: tuple[str, str] | None = None) -> Any:
    def f(tables: Any, full: bool) -> Simulated:
        mine = _mbps(tables, device, stack, message)
        holds = None if against is None else mine < _mbps(tables, *against, message)
        return Simulated(mine, holds=holds, scale=_socket_scale(full))
    return f


def _socket_ratio(stack: str, message: int) -> Any:
    """Lightfleet's MB/s (``stack`` on the fabric) over the kernel TCP stack's on the switch."""
    def f(tables: Any, full: bool) -> Simulated:
        fabric, switch = _mbps(tables, FABRIC, stack, message), _mbps(tables, SWITCH, KERNEL_SOCKETS, message)
        return Simulated(fabric / switch, holds=fabric > switch, scale=_socket_scale(full),
                         text=f"{fabric / switch:.2f} ({fabric:.0f} vs {switch:.1f} MB/s)")
    return f


def _socket_ratios(tables: Any) -> dict[str, dict[int, float]]:
    """Per Lightfleet stack: message size -> its MB/s over the switch's kernel TCP MB/s."""
    t = frame(tables, "socket/results")
    switch = {r["message_bytes"]: r["MBps"] for r in t.filter(
        (pl.col("device") == SWITCH) & (pl.col("stack") == KERNEL_SOCKETS)).to_dicts()}
    out = {}
    for stack in (NATIVE, SOCKETS):
        rows = t.filter((pl.col("device") == FABRIC) & (pl.col("stack") == stack)).to_dicts()
        out[stack] = {r["message_bytes"]: r["MBps"] / switch[r["message_bytes"]] for r in rows
                      if r["message_bytes"] in switch}
    if not all(out.values()):
        raise KeyError("no socket point of both systems")
    return out


def _socket_higher_everywhere(tables: Any, full: bool) -> Simulated:
    ratios = _socket_ratios(tables)
    short = [f"{m} B {stack} x{r:.3f}" for stack, by in ratios.items() for m, r in sorted(by.items()) if r <= 1]
    n = sum(len(by) for by in ratios.values())
    return Simulated(holds=not short, scale=_socket_scale(full),
                     text=f"higher at {n - len(short)} of {n} points (messages 18..9170 B, both Lightfleet stacks)"
                          + (f"; not higher: {', '.join(short)} (both wire-bound)" if short else ""))


def _socket_gain_small(tables: Any, full: bool) -> Simulated:
    ratios = _socket_ratios(tables)
    best = {stack: max(by, key=by.get) for stack, by in ratios.items()}
    return Simulated(holds=all(m <= 512 for m in best.values()), scale=_socket_scale(full),
                     text="largest ratio: " + ", ".join(f"{stack} x{ratios[stack][m]:.1f} at {m} B"
                                                         for stack, m in best.items()))


def _multicast(tables: Any, full: bool) -> Simulated:
    native = pick(tables, "multicast/results", device=FABRIC, replication="native")
    copies = pick(tables, "multicast/results", device=SWITCH, replication="unicast")
    load = copies["bytes_per_message_sender_link"] / native["bytes_per_message_sender_link"]
    return Simulated(
        holds=native["last_member_mean_us"] < copies["last_member_mean_us"] and load > 1,
        scale=None if full else "2 ms of the stream (--full: 20 ms)",
        text=f"to 7 members: the fabric's native copies reach the last one in {native['last_member_mean_us']:.2f} us, "
             f"the switch's unicast copies in {copies['last_member_mean_us']:.2f} us; the sender's link carries "
             f"{load:.0f}x the bytes with copies ({copies['bytes_per_message_sender_link']:.0f} vs "
             f"{native['bytes_per_message_sender_link']:.0f} B per message)")


def _watts(tables: Any, device: str, load_pct: int) -> float:
    return pick(tables, "power/results", device=device, load=LOADS[load_pct])["mean_w"]


def _power_scale(full: bool, switch: bool = False) -> str | None:
    parts = [] if full else ["2 ms per load (--full: 20 ms)"]
    if switch:
        parts.append("the Arista 7124SX's figures for the 7150S-52")
    return "; ".join(parts) or None


def _power_value(device: str, load_pct: int) -> Any:
    def f(tables: Any, full: bool) -> Simulated:
        mine = _watts(tables, device, load_pct)
        holds = None if device == FABRIC else mine > _watts(tables, FABRIC, load_pct)
        return Simulated(mine, holds=holds, scale=_power_scale(full, device == SWITCH))
    return f


def _power_better(load_pct: int) -> Any:
    """The report's relative metric, (1 - Lightfleet / Arista) x 100."""
    def f(tables: Any, full: bool) -> Simulated:
        fabric, switch = _watts(tables, FABRIC, load_pct), _watts(tables, SWITCH, load_pct)
        return Simulated(100 * (1 - fabric / switch), holds=fabric < switch, scale=_power_scale(full, True))
    return f


def _power_lower_everywhere(tables: Any, full: bool) -> Simulated:
    w = {pct: (_watts(tables, FABRIC, pct), _watts(tables, SWITCH, pct)) for pct in LOADS}
    return Simulated(holds=all(a < b for a, b in w.values()), scale=_power_scale(full, True),
                     text=", ".join(f"{pct} %: {a:.1f} vs {b:.1f} W" for pct, (a, b) in w.items()))


def _power_flat(tables: Any, full: bool) -> Simulated:
    """Flat: from idle to 100 % the fabric's power rises by less than 5 % of its idle power."""
    idle, busy = _watts(tables, FABRIC, 0), _watts(tables, FABRIC, 100)
    rise = (busy - idle) / idle
    return Simulated(holds=rise < 0.05, scale=_power_scale(full),
                     text=f"{idle:.1f} -> {busy:.1f} W, +{100 * rise:.1f} % of idle (flat: under +5 %)")


CLAIMS: dict[str, Any] = {
    **{f"latency.lightfleet.{s}B": _lightfleet_latency(s) for s in (64, 1518, 9216)},
    **{f"latency.arista_solarflare.{s}B": _switch_latency(s) for s in (64, 1518, 9216)},
    **{f"latency.better_pct.{s}B": _latency_better(s) for s in (64, 1518, 9216)},
    "latency.lower.all_sizes": _latency_lower_everywhere,
    "latency.native_vs_sockets.le2176B": _native_vs_sockets,
    "socket.throughput.lightfleet_sockets.64B": _socket_value(FABRIC, SOCKETS, 64),
    "socket.throughput.arista_solarflare.64B": _socket_value(SWITCH, KERNEL_SOCKETS, 64, against=(FABRIC, SOCKETS)),
    "socket.throughput.lightfleet_native.64B": _socket_value(FABRIC, NATIVE, 64),
    "socket.throughput.ratio.sockets.64B": _socket_ratio(SOCKETS, 64),
    "socket.throughput.ratio.native.64B": _socket_ratio(NATIVE, 64),
    "socket.throughput.ratio.sockets.512B": _socket_ratio(SOCKETS, 512),
    "socket.throughput.ratio.native.512B": _socket_ratio(NATIVE, 512),
    "socket.throughput.higher.all_sizes": _socket_higher_everywhere,
    "socket.throughput.gain_small_sizes": _socket_gain_small,
    "multicast.native_advantage": _multicast,
    "vendor.congestion": (
        "no congestion test: the reproduction runs unloaded ping-pongs, single streams and steady loads of "
        "disjoint station pairs, and the optical-broadcast model has no flow control between fabric and senders "
        "(docs/models/broadcast-fabric.md), so how the real fabric's hardware clears congestion is not modelled"),
    "vendor.adaptive_fabric": (
        "the optical-broadcast model has no flow control and no adaptation to traffic types (an oversubscribed "
        "receiver drops once its 256 KB buffer is full; docs/models/broadcast-fabric.md): the fabric's hardware "
        "flow control is not public"),
    **{f"power.lightfleet.{k}": _power_value(FABRIC, pct) for k, pct in (("idle", 0), ("10pct", 10), ("100pct", 100))},
    **{f"power.arista.{k}": _power_value(SWITCH, pct) for k, pct in (("idle", 0), ("10pct", 10), ("100pct", 100))},
    **{f"power.better_pct.{k}": _power_better(pct) for k, pct in (("idle", 0), ("10pct", 10), ("100pct", 100))},
    "power.lower.all_loads": _power_lower_everywhere,
    "power.flat.lightfleet": _power_flat,
}


#: What the Lightfleet stations cost is not public (the HBA's datapath, VMA's calls): the scenario gives
#: them the Solarflare-class NIC and the kernel-bypass preset's costs. Two spaces, from the model outward:
#: the HBA's fixed DMA latency at each end (the scenario's 300 ns transmit and 250 ns receive), and a
#: cost per application call of the sockets stack (the preset charges none).
_NIC = "network.host.model.nic"
_HBA_LATENCY = tuple(
    (f"the Lightfleet HBA takes {us:g} us to hand a frame to the wire and {us:g} us to deliver one (the "
     "scenario: 300 and 250 ns)", {f"{_NIC}.tx_latency": f"{us:g}us", f"{_NIC}.rx_latency": f"{us:g}us"})
    for us in (0.5, 1.0, 1.5, 2.0)
)


def _stages_with_calls(ns: int) -> list[dict[str, Any]]:
    from fabricsim.hosts import kernel_bypass

    call = {"kind": "syscall", "name": "socket_call", "tx": {"per_packet": f"{ns}ns"}, "rx": {"per_packet": f"{ns}ns"}}
    return [call, *kernel_bypass.MODEL["stages"]]


_CALL_COST = tuple(
    (f"the Lightfleet sockets stack (libsocklf on VMA) costs {ns} ns per send and per receive call",
     {"network.host.model.stages": _stages_with_calls(ns)})
    for ns in (100, 200, 400)
)
ASSUMPTIONS = (
    Assumption("Lightfleet HBA latency", "latency", {"device": FABRIC}, _HBA_LATENCY,
               why="the Lightfleet HBA's latencies are not public (its STAC-N1 figures are for members only)"),
    Assumption("Lightfleet sockets call cost", "socket", {"device": FABRIC, "stack": "scenario:tcp"}, _CALL_COST,
               why="what VMA and libsocklf cost per application call is not public"),
)

#: A 9216 B frame takes 7.39 us on a 10 Gb/s wire (preamble and gap included), and the report's own 64 B
#: point leaves 3.7 - 0.07 = 3.6 us that does not grow with the frame: one serialization plus that is 11 us.
_ONE_SERIALIZATION = ("Ruled out by arithmetic: a 9216 B frame takes 7.39 us on a 10 Gb/s link (preamble and "
                      "gap included), and the report's own Lightfleet point at 64 B leaves 3.7 - 0.07 = 3.6 us of "
                      "latency that does not grow with the frame, so a 10 Gb/s path that serializes the frame once "
                      "takes at least 11 us; the report's 7.4 us fits neither a store-and-forward nor a cut-through "
                      "station on such a path. Its Lightfleet points at different sizes may come from different "
                      "stacks (it does not say which) or from a faster link.")
RULED_OUT: dict[str, str] = {
    "latency.lightfleet.9216B": _ONE_SERIALIZATION,
    "latency.better_pct.9216B": _ONE_SERIALIZATION + " The 60 % is computed from that 7.4 us.",
}


REPORT = Report(
    name=NAME,
    title="tolly-lightfleet: end-to-end latency, throughput, multicast and power",
    summary=("Two end stations through a 10G cut-through switch with low-latency NICs, and through a switch-free "
             "optical broadcast fabric with its own adapters; UDP and TCP ping-pong latency and socket throughput "
             "per frame size (RFC 2544 sizes plus 2176 and 9216 B) through modelled kernel-bypass and kernel "
             "stacks, native vs emulated multicast, power with 24 ports in use at idle, 10% and 100% load."),
    devices=tuple(PAIRS),
    tests=(
        Test("latency", "Latency per frame size (UDP and TCP ping-pong)", grid_points(NAME, "latency"), latency,
             seconds=0.2),
        Test("socket", "Socket throughput per message size", grid_points(NAME, "socket"), socket, seconds=0.3),
        Test("multicast", "Multicast: native vs unicast copies", grid_points(NAME, "multicast"), multicast,
             seconds=0.5),
        Test("rfc2544", "RFC 2544 device latency and throughput", grid_points(NAME, "rfc2544"), rfc2544_device,
             seconds=1.5),
        Test("power", "Power at idle, 10% and 100% load", grid_points(NAME, "power"), power, seconds=3.0),
    ),
    render=render,
    reductions=(
        "200 ping-pong messages per point (--full: 2000); RFC 2544 and UDP socket trials of 1 ms (--full: 10 ms; "
        "RFC 2544 asks for 60 s), TCP socket trials of 10 ms; multicast and power runs of 2 ms (--full: 20 ms).",
        "The stations are modelled hosts (kernel-bypass or kernel stack, the same low-latency NIC on both fabrics) "
        "with assumed costs, not the report's adapters (no public figures for the Lightfleet HBA); TCP latency (a "
        "TCP_RR-like ping-pong) only at frames of one segment with payload (128..1518 B with the default 1500 B "
        "TCP MTU).",
        "The switch is the Arista 7124SX-class fm4000-like model (500 ns), not the report's 7150S-52.",
        "The power runs carry unicast only; multicast runs carry the multicast stream alone.",
    ),
    golden_tests=("latency", "socket", "multicast"),
    claims=CLAIMS,
    assumptions=ASSUMPTIONS,
    ruled_out=RULED_OUT,
)
