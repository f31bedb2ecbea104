"""R5 ``tolly-lightfleet``: end-to-end latency, socket throughput, multicast and power of a 10G
cut-through switch with low-latency NICs vs a switch-free optical broadcast fabric.

One scenario (``data/tolly-lightfleet/tolly-latency.yaml``) holds both
fabrics, 24 stations each, whose hosts run the host datapath model (a
kernel-bypass stack on a low-latency 10G NIC; ``docs/models/host.md``).

- Latency: UDP ping-pong between two stations (half the round trip, as the
  report's method), per frame size, through the stations' stacks
  (:mod:`fabricsim.experiments.rfc2544`, ``host_latency``), with where the time goes.
- Socket throughput: a streaming application's MB/s per message size
  (``socket``), UDP on both stacks and TCP on the kernel stack.
- Multicast: one stream to 7 members, native replication or unicast copies
  from the sender: delivery time to the last member and the bytes the links carried.
- RFC 2544 device latency and throughput between ideal tester ports.
- Power with 24 ports at idle, 10% and 100% load (:mod:`fabricsim.experiments.power_load`).
"""

from __future__ import annotations

from typing import Any

import polars as pl

from fabricsim.reproductions import page as P
from fabricsim.reproductions.base import Report, Test, grid_points, load_yaml

NAME = "tolly-lightfleet"
PAIRS = {"fm4000-like": ("s0", "s1"), "optical-broadcast": ("f0", "f1")}
NODES = {"ct10g": "fm4000-like", "bcast": "optical-broadcast"}
#: The multicast stream of each fabric in the scenario (its group and sender).
STREAMS = {"fm4000-like": "md-switch", "optical-broadcast": "md-fabric"}
#: Host parts of the latency breakdown table, in a message's order.
PARTS = ("stack_tx_ps", "nic_tx_ps", "serialization_ps", "header_ps", "device_ps", "propagation_ps",
         "nic_rx_ps", "irq_wait_ps", "stack_rx_ps")


def _scenario() -> Any:
    from fabricsim import from_dict

    return from_dict(load_yaml(NAME, "tolly-latency.yaml"))


def latency(params: dict[str, Any], full: bool) -> dict[str, list[dict[str, Any]]]:
    from fabricsim.experiments.rfc2544 import Settings, rfc2544

    frame = int(params["frame_bytes"])
    out = rfc2544(_scenario(), tests=["host_latency"], frame_sizes=[frame], pairs=[PAIRS[params["device"]]],
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
    out = rfc2544(_scenario(), tests=["socket"], frame_sizes=[frame], pairs=[PAIRS[params["device"]]],
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
    out = rfc2544(_scenario(), tests=["throughput", "latency"], frame_sizes=[frame], pairs=[PAIRS[params["device"]]],
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


def _at(frame: pl.DataFrame, **where: Any) -> dict[str, Any]:
    for k, v in where.items():
        frame = frame.filter(pl.col(k) == v)
    return frame.row(0, named=True) if frame.height else {}


def _latency_text(r: pl.DataFrame) -> list[str]:
    text = [P.para(
        "One-way latency is half the round trip of a UDP ping-pong with one message outstanding, from the "
        "sending application to the receiving one: the stations' stack and NIC at both ends, the cables, the "
        "fabric. The stations are the host datapath model (docs/models/host.md): a kernel-bypass stack "
        "(100-150 ns per datagram plus 0.05 ns per byte, no system calls, no interrupts) on a low-latency "
        "10G NIC (PCIe Gen3 x8 DMA at 0.139 ns per byte, 300 ns to send by programmed I/O, 250 ns to "
        "receive), the same on both fabrics, all stated assumptions. The kernel UDP stack on the same NIC "
        "(system calls, interrupts, driver: linux-kernel) is the second series. The switch starts forwarding "
        "after a 64 B header and adds 500 ns first bit to first bit (Arista 7124SX data sheet); the broadcast "
        "fabric after a 14 B header plus 300 ns (an assumption: no public figure). Every UDP point equals the "
        "closed form built from these parameters to the picosecond (closed_form_us). The kernel TCP series "
        "(linux-kernel tcp) is a TCP_RR-like ping-pong over one connection whose replies carry the ACKs of the "
        "requests: from the third message on each takes the closed form with the tcp stage exactly; its mean "
        "is a little above it because the first request and reply wait behind a quick ACK (the receivers "
        "are not yet in ping-pong mode). TCP points exist for frames of one segment with payload only.")]
    if r is None or r.height == 0:
        return text
    a = _at(r, device="optical-broadcast", stack="scenario udp", frame_bytes=64)
    b = _at(r, device="fm4000-like", stack="scenario udp", frame_bytes=64)
    if a and b:
        text.append(P.finding(
            f"The report finds the switch-free fabric has lower end-to-end latency. At 64 B with the bypass stack: "
            f"optical-broadcast {a['latency_us']:.3f} us, fm4000-like {b['latency_us']:.3f} us; the difference is "
            f"the devices' {b['device_ns'] + b['header_ns'] - a['device_ns'] - a['header_ns']:.0f} ns (device "
            "latency and header time), the same at every size, so it follows from the assumed 300 ns of the "
            "fabric rather than from anything the simulation adds.",
            a["latency_us"] < b["latency_us"]))
    k = _at(r, device="fm4000-like", stack="linux-kernel udp", frame_bytes=64)
    if k and b:
        text.append(P.para(
            f"Through the kernel UDP stack the same 64 B message takes {k['latency_us']:.2f} us one way "
            f"({k['stack_tx_ns']:.0f} ns to send, {k['stack_rx_ns']:.0f} ns to receive): the stacks, not the "
            "fabrics, dominate end-to-end latency; the fabrics' difference is a few percent of it."))
    big = _at(r, device="fm4000-like", stack="scenario udp", frame_bytes=9216)
    if big:
        text.append(P.para(
            f"At 9216 B the NIC's DMA (store and forward over PCIe at both ends: {big['nic_tx_ns'] + big['nic_rx_ns']:.0f} "
            f"ns) and the sender's serialization ({big['serialization_ns']:.0f} ns) dominate: cut-through "
            "fabrics save a serialization per hop, not the host's copies."))
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
        "write each) as fast as its socket takes them. UDP's MB/s is the smallest of the wire's goodput and "
        "message / CPU time per message on the sending and the receiving core (closed_form_MBps, within 1 % "
        "in the tests): small messages are CPU-bound (the receive core limits: limit = rx_core), large ones "
        "wire-bound. Both fabrics carry 10G line rate at every size, so per size the two fabrics' MB/s are the "
        "same; the stacks make the difference. TCP (kernel stack) pays a system call per write and its "
        "window's dynamics; it has no closed form here.")]
    if sock is not None and sock.height:
        a = _at(sock, device="optical-broadcast", stack="scenario udp", frame_bytes=64)
        b = _at(sock, device="fm4000-like", stack="scenario udp", frame_bytes=64)
        if a and b:
            socket_text.append(P.finding(
                f"The report finds higher socket throughput through the switch-free fabric. Here both fabrics give "
                f"{a['MBps']:.1f} MB/s (fabric) vs {b['MBps']:.1f} MB/s (switch) at 64 B: the stations' CPU is the "
                "limit, not the fabric.", a["MBps"] > b["MBps"] * 1.01))
    multicast_text = [P.para(
        "One 100 Mb/s stream of 256 B frames to 7 members on each fabric, on its own. Native replication sends "
        "each frame once over the sender's link and copies it in the device (the broadcast fabric reaches every "
        "adapter and the members keep it); unicast emulation sends one copy per member from the sender, so the "
        "sender's link carries 7 times the bytes and the last member waits behind six copies (plus the "
        "sender's per-datagram stack cost for each).")]
    if mc is not None and mc.height:
        n = _at(mc, device="optical-broadcast", replication="native")
        u = _at(mc, device="fm4000-like", replication="unicast")
        if n and u:
            multicast_text.append(P.finding(
                f"The report finds native multicast on the fabric delivers to the last member sooner than unicast "
                f"copies through the switch: {n['last_member_mean_us']:.2f} us vs {u['last_member_mean_us']:.2f} us "
                f"here, with {n['bytes_per_message_sender_link']:.0f} vs {u['bytes_per_message_sender_link']:.0f} "
                "bytes per message on the sender's link.",
                n["last_member_mean_us"] < u["last_member_mean_us"]))
    return "".join([
        P.test_section(
            "Latency per frame size (UDP ping-pong, half round trip)",
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
                   "(docs/models/power.md); the per-port figures are from public typical values, the split "
                   "between fixed and traffic-proportional parts is an assumption."),
            P.table(p))])


REPORT = Report(
    name=NAME,
    title="tolly-lightfleet: end-to-end latency, throughput, multicast and power",
    summary=("Two end stations through a 10G cut-through switch with low-latency NICs, and through a switch-free "
             "optical broadcast fabric with its own adapters; UDP ping-pong latency and socket throughput per frame "
             "size (RFC 2544 sizes plus 2176 and 9216 B) through modelled host stacks, native vs emulated multicast, "
             "power with 24 ports in use at idle, 10% and 100% load."),
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
        "The stations are modelled hosts (kernel-bypass or kernel stack, low-latency NIC) with assumed costs, "
        "not the report's measured adapters; TCP latency (a TCP_RR-like ping-pong on the kernel stack) only at "
        "frames of one segment with payload (128..1518 B with the default 1500 B TCP MTU).",
        "The power runs carry unicast only; multicast runs carry the multicast stream alone.",
    ),
    golden_tests=("latency", "socket", "multicast"),
)
