"""ns-3 reference experiments for validating the fabricsim TCP model (optional: ``pip install ns3``).

Topology ("star"): N sender nodes -> one switch node -> one receiver node.
Every link is a PointToPoint link at ``rate`` with propagation ``delay``.

Queueing: the traffic-control layer is removed from every device
(TrafficControlHelper::Uninstall), so each device has exactly one queue, its
PointToPointNetDevice TxQueue (a DropTailQueue<Packet>):

* switch -> receiver (the bottleneck): DropTail FIFO of ``queue_packets``
  packets.  This is the only queue that can build up.
* every other device: a large FIFO (``HOST_QUEUE_PACKETS``) that never drops;
  the hosts are rate-matched to the bottleneck, so these only hold the burst
  of the sender's own window (the equivalent of a host NIC queue).

DCTCP variant (``cc="dctcp"``): the switch -> receiver device gets a
RedQueueDisc (limit ``queue_packets``) that ECN-marks on the instantaneous
queue length at a step threshold of ``k_packets`` (MinTh = MaxTh = K,
QW = 1, Gentle off, UseEcn on, UseHardDrop off), and the device TxQueue under
it is set to 1 packet (so the qdisc holds the queue; one more packet can sit
in the device queue, plus one being serialized).

The ``ns`` import is done lazily inside the functions (the first import
compiles the bindings and takes several seconds).

The fat-tree twin of the htsim pairs (fattree) is
:mod:`fabricsim.validation.ns3_fattree`; only its command line is here.

CLI:
    python -m fabricsim.validation.ns3 incast --json [--senders 16 ...]
    python -m fabricsim.validation.ns3 dumbbell --json [--flows 4 ...]
    python -m fabricsim.validation.ns3 fattree --k 4 [--dctcp] --bytes-per-flow 200000 --json
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from fabricsim.validation import ns3_setup
from fabricsim.validation.ns3_setup import (
    CC_TYPES,
    HOST_QUEUE_PACKETS,
    IP_HEADER,
    PPP_HEADER,
    RECOVERY_TYPES,
    SEGMENT_SIZE,
    TCP_HEADER,
    TCP_OPTIONS,
    _configure_tcp,
    _ns,
    _restore_defaults,
    fct_summary,
    flow_counters,
)

def _run_star(
    *,
    experiment,
    senders,
    flows_per_sender,
    bytes_per_flow,
    rate="10Gbps",
    delay="1us",
    queue_packets=1000,
    cc="newreno",
    window_bytes=262144,
    k_packets=None,
    seed=1,
    start_jitter_us=0,
    max_sim_seconds=60.0,
    extra_defaults=None,
    sack=False,
    recovery="classic",
):
    """Run ``senders x flows_per_sender`` flows of ``bytes_per_flow`` towards one
    receiver of a star; the keyword settings after ``bytes_per_flow`` are also
    those of :func:`incast` and :func:`dumbbell`."""
    ns = _ns()
    H = ns.cppyy.gbl.fsref
    n_flows = senders * flows_per_sender

    ns.Simulator.Destroy()
    ns.RngSeedManager.SetSeed(max(1, int(seed)))
    ns.RngSeedManager.SetRun(1)

    settings = _configure_tcp(
        ns, cc, window_bytes, k_packets, queue_packets, rate, delay, extra_defaults, sack, recovery
    )

    hosts = ns.NodeContainer()
    hosts.Create(senders)
    switch = ns.NodeContainer()
    switch.Create(1)
    receiver = ns.NodeContainer()
    receiver.Create(1)
    all_nodes = ns.NodeContainer(hosts, switch, receiver)

    p2p = ns.PointToPointHelper()
    p2p.SetDeviceAttribute("DataRate", ns.StringValue(rate))
    p2p.SetChannelAttribute("Delay", ns.StringValue(delay))

    internet = ns.InternetStackHelper()
    internet.Install(all_nodes)

    addr = ns.Ipv4AddressHelper()
    host_links = []
    for i in range(senders):
        devs = p2p.Install(hosts.Get(i), switch.Get(0))
        addr.SetBase(ns.Ipv4Address(f"10.{1 + i // 250}.{i % 250}.0"), ns.Ipv4Mask("255.255.255.0"))
        addr.Assign(devs)
        host_links.append(devs)
    bn = p2p.Install(switch.Get(0), receiver.Get(0))
    addr.SetBase(ns.Ipv4Address("10.250.0.0"), ns.Ipv4Mask("255.255.255.0"))
    bn_ifaces = addr.Assign(bn)
    rx_addr = bn_ifaces.GetAddress(1)

    H.Reset(n_flows)

    # One queue per device: drop the traffic-control layer everywhere.
    tch = ns.TrafficControlHelper()
    for devs in host_links:
        for j in range(2):
            tch.Uninstall(devs.Get(j))
            H.SetTxQueue(devs.Get(j), f"{HOST_QUEUE_PACKETS}p")
            H.ConnectOtherDevice(devs.Get(j))
    tch.Uninstall(bn.Get(0))
    tch.Uninstall(bn.Get(1))
    H.SetTxQueue(bn.Get(1), f"{HOST_QUEUE_PACKETS}p")
    H.ConnectOtherDevice(bn.Get(1))
    H.ConnectAckDevice(bn.Get(1))
    if cc == "dctcp":
        red = ns.TrafficControlHelper()
        red.SetRootQueueDisc("ns3::RedQueueDisc")
        red.Install(bn.Get(0))
        H.SetTxQueue(bn.Get(0), "1p")
        H.ConnectBottleneckDevice(bn.Get(0), True)
        H.ConnectQueueDisc(bn.Get(0))
        queueing = (
            f"RedQueueDisc (limit {queue_packets}p, ECN step mark at K={k_packets}p on the "
            "instantaneous queue) over a 1-packet device TxQueue"
        )
    else:
        H.SetTxQueue(bn.Get(0), f"{queue_packets}p")
        H.ConnectBottleneckDevice(bn.Get(0), True)
        queueing = f"PointToPointNetDevice TxQueue DropTail {queue_packets}p, no queue disc"
    # With no queue disc, the traffic-control layer itself drops a packet when the
    # device queue is stopped (full); on the switch that is the bottleneck queue.
    for i in range(senders):
        if not H.ConnectTcDrop(hosts.Get(i), False):
            raise RuntimeError("cannot connect TrafficControlLayer::TcDrop")
    H.ConnectTcDrop(receiver.Get(0), False)
    H.ConnectTcDrop(switch.Get(0), True)
    bottleneck_qdisc = str(H.QueueDiscType(bn.Get(0)))
    bottleneck_txqueue = int(H.GetTxQueuePackets(bn.Get(0)))

    ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()

    jitter = None
    if start_jitter_us:
        jitter = ns.CreateObject[ns.UniformRandomVariable]()
        jitter.SetAttribute("Min", ns.DoubleValue(0.0))
        jitter.SetAttribute("Max", ns.DoubleValue(float(start_jitter_us)))
        # Fixed stream so repeated calls in one process draw the same starts.
        jitter.SetStream(0)

    starts = []
    for f in range(n_flows):
        s = f // flows_per_sender
        port = 10000 + f
        start_us = jitter.GetValue() if jitter is not None else 0.0
        start_s = start_us * 1e-6
        starts.append(start_s)
        H.SetFlow(f, bytes_per_flow, start_s)

        sink_helper = ns.PacketSinkHelper(
            "ns3::TcpSocketFactory",
            ns.InetSocketAddress(ns.Ipv4Address.GetAny(), port).ConvertTo(),
        )
        sink_apps = sink_helper.Install(receiver.Get(0))
        sink_apps.Start(ns.Seconds(0.0))
        H.ConnectSink(sink_apps.Get(0), f)

        bulk = ns.BulkSendHelper(
            "ns3::TcpSocketFactory", ns.InetSocketAddress(rx_addr, port).ConvertTo()
        )
        bulk.SetAttribute("MaxBytes", ns.UintegerValue(bytes_per_flow))
        bulk.SetAttribute("SendSize", ns.UintegerValue(SEGMENT_SIZE))
        apps = bulk.Install(hosts.Get(s))
        apps.Start(ns.Seconds(start_s))
        H.ConnectSender(apps.Get(0), f, start_s)

    ns.Simulator.Stop(ns.Seconds(max_sim_seconds))
    t0 = time.perf_counter()
    ns.Simulator.Run()
    wall = time.perf_counter() - t0
    sim_end = ns.Simulator.Now().GetSeconds()

    flows = []
    for f in range(n_flows):
        done = float(H.FlowDone(f))
        start = float(H.FlowStart(f))
        flows.append(
            {
                "flow": f,
                "sender": f // flows_per_sender,
                "start_s": start,
                "bytes": bytes_per_flow,
                "fct_s": (done - start) if done >= 0 else None,
                **flow_counters(H, f),
            }
        )
    frames = json.loads(str(H.FrameHist()))
    drops = int(H.BnDrops())
    marks = int(H.BnMarks())
    max_q = int(H.BnMaxQueue())
    other_drops = int(H.OtherDrops())
    ns.Simulator.Destroy()
    _restore_defaults(ns)

    fcts = [fl["fct_s"] for fl in flows if fl["fct_s"] is not None]
    completed = len(fcts) == n_flows
    finish = [fl["start_s"] + fl["fct_s"] for fl in flows if fl["fct_s"] is not None]
    data_frame = SEGMENT_SIZE + TCP_OPTIONS + TCP_HEADER + IP_HEADER + PPP_HEADER
    ack_frame = TCP_OPTIONS + TCP_HEADER + IP_HEADER + PPP_HEADER

    return {
        "experiment": experiment,
        "params": {
            "senders": senders,
            "flows_per_sender": flows_per_sender,
            "flows": n_flows,
            "bytes_per_flow": bytes_per_flow,
            "rate": rate,
            "delay": delay,
            "queue_packets": queue_packets,
            "cc": cc,
            "window_bytes": window_bytes,
            "k_packets": k_packets,
            "sack": bool(sack),
            "recovery": recovery,
            "seed": seed,
            "start_jitter_us": start_jitter_us,
            "extra_defaults": dict(extra_defaults or {}),
        },
        "settings": settings,
        "topology": {
            "kind": "star",
            "links": "PointToPoint, every link at rate/delay",
            "bottleneck_queue": queueing,
            "bottleneck_queue_disc": bottleneck_qdisc,
            "bottleneck_device_txqueue_packets": bottleneck_txqueue,
            "other_queues": f"device TxQueue DropTail {HOST_QUEUE_PACKETS}p, no queue disc",
        },
        "framing": {
            "data_frame_bytes": data_frame,
            "ack_frame_bytes": ack_frame,
            "breakdown": {
                "payload": SEGMENT_SIZE,
                "tcp_options": TCP_OPTIONS,
                "tcp_header": TCP_HEADER,
                "ip_header": IP_HEADER,
                "ppp_header": PPP_HEADER,
            },
            "observed_frame_sizes": frames,
        },
        "completed": completed,
        "jct_s": max(finish) if completed else None,
        "fct_s": fct_summary(fcts),
        "retransmits_total": sum(fl["retransmits"] for fl in flows),
        "rto_events_total": sum(fl["rto_events"] for fl in flows),
        "bottleneck_drops": drops,
        "bottleneck_ecn_marks": marks,
        "bottleneck_max_queue_packets": max_q,
        "other_drops": other_drops,
        "flows": flows,
        "sim_end_s": sim_end,
        "wall_s": wall,
        "ns3_import_s": ns3_setup.IMPORT_SECONDS,
    }


def incast(senders=16, flows_per_sender=1, bytes_per_flow=5_000_000, **settings):
    """All flows start at t=0 (+ optional uniform jitter) towards one receiver.

    ``settings``: ``rate``, ``delay``, ``queue_packets``, ``cc``, ``window_bytes``,
    ``k_packets``, ``seed``, ``start_jitter_us``, ``max_sim_seconds``,
    ``extra_defaults``, ``sack`` (``TcpSocketBase::Sack``, off by default here
    although ns-3 turns it on) and ``recovery`` (``classic`` or ``prr``, ns-3's
    default), as for :func:`_run_star`.
    """
    return _run_star(
        experiment="incast",
        senders=senders,
        flows_per_sender=flows_per_sender,
        bytes_per_flow=bytes_per_flow,
        **settings,
    )


def dumbbell(flows=4, bytes_per_flow=50_000_000, **settings):
    """Few long flows, one per sender, through the same star bottleneck; ``settings`` as for :func:`incast`."""
    return _run_star(experiment="dumbbell", senders=flows, flows_per_sender=1, bytes_per_flow=bytes_per_flow, **settings)


def _summary(r):
    f = r["fct_s"]
    ms = lambda x: "-" if x is None else f"{x * 1e3:.3f} ms"  # noqa: E731
    return (
        f"{r['experiment']} {r['params']['flows']}x{r['params']['bytes_per_flow']}B "
        f"cc={r['params']['cc']} sack={r['params']['sack']} recovery={r['params']['recovery']}: "
        f"completed={r['completed']} JCT={ms(r['jct_s'])} "
        f"FCT min/med/max={ms(f['min'])}/{ms(f['median'])}/{ms(f['max'])} "
        f"drops={r['bottleneck_drops']} marks={r['bottleneck_ecn_marks']} "
        f"maxq={r['bottleneck_max_queue_packets']} retx={r['retransmits_total']} "
        f"rto={r['rto_events_total']} other_drops={r['other_drops']} "
        f"wall={r['wall_s']:.2f}s import={r['ns3_import_s']:.2f}s"
    )


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("experiment", choices=["incast", "dumbbell", "fattree"])
    ap.add_argument("--json", action="store_true", help="print the full result dict as JSON")
    ap.add_argument("--senders", type=int, default=16, help="incast: number of senders")
    ap.add_argument("--flows-per-sender", type=int, default=1, help="incast: flows per sender")
    ap.add_argument("--flows", type=int, default=4, help="dumbbell: number of flows")
    ap.add_argument("--k", type=int, default=4, help="fattree: k of the k-ary fat-tree")
    ap.add_argument("--dctcp", action="store_true", help="fattree: DCTCP with step marking at 15 packets")
    ap.add_argument("--bytes-per-flow", type=int, default=None)
    ap.add_argument("--rate", default="10Gbps")
    ap.add_argument("--delay", default="1us")
    ap.add_argument("--queue-packets", type=int, default=1000)
    ap.add_argument("--cc", default="newreno", choices=sorted(CC_TYPES))
    ap.add_argument("--window-bytes", type=int, default=262144)
    ap.add_argument("--k-packets", type=int, default=None)
    ap.add_argument("--sack", action="store_true", help="turn SACK on (TcpSocketBase::Sack)")
    ap.add_argument("--recovery", default="classic", choices=sorted(RECOVERY_TYPES), help="TcpL4Protocol::RecoveryType")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--start-jitter-us", type=float, default=0)
    ap.add_argument("--max-sim-seconds", type=float, default=60.0)
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="PATH=VALUE",
        help="extra Config::SetDefault, e.g. ns3::TcpSocket::DelAckCount=1 (repeatable)",
    )
    a = ap.parse_args(argv)
    extra = dict(kv.split("=", 1) for kv in a.set)
    if a.experiment == "fattree":
        from fabricsim.validation import ns3_fattree

        r = ns3_fattree.fattree(k=a.k, bytes_per_flow=a.bytes_per_flow or 2_000_000,
                                cc="dctcp" if a.dctcp else "newreno", max_sim_seconds=a.max_sim_seconds)
        if a.json:
            json.dump(r, sys.stdout, indent=2)
            sys.stdout.write("\n")
        else:
            print(ns3_fattree.summary(r))
        return 0

    common = dict(
        rate=a.rate,
        delay=a.delay,
        queue_packets=a.queue_packets,
        cc=a.cc,
        window_bytes=a.window_bytes,
        k_packets=a.k_packets,
        sack=a.sack,
        recovery=a.recovery,
        seed=a.seed,
        start_jitter_us=a.start_jitter_us,
        max_sim_seconds=a.max_sim_seconds,
        extra_defaults=extra,
    )
    if a.experiment == "incast":
        r = incast(
            senders=a.senders,
            flows_per_sender=a.flows_per_sender,
            bytes_per_flow=a.bytes_per_flow or 5_000_000,
            **common,
        )
    else:
        r = dumbbell(flows=a.flows, bytes_per_flow=a.bytes_per_flow or 50_000_000, **common)
    if a.json:
        json.dump(r, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(_summary(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
