"""The ns-3 twin of the fat-tree permutation pairs of ``fabricsim bench --htsim`` (optional: ``pip install ns3``).

The work is that of :func:`fabricsim.bench.htsim.fattree_twin`: a k-ary
fat-tree, every host sending one flow of ``bytes_per_flow`` to a distinct
host of the seeded permutation :func:`fabricsim.bench.htsim_work.permutation`
(seed ``k``, as the htsim pairs), all flows starting at t = 0.

Topology: one ns-3 node per fabricsim node (same names, same order), one
PointToPoint link (10 Gbps, 1 us) per fabricsim link, created in fabricsim's
link order, so that a node's devices are its fabricsim ports in order.

Queueing (the traffic-control layer is removed from every device, as in
:mod:`fabricsim.validation.ns3`):

* every switch device: its PointToPointNetDevice TxQueue, a DropTail FIFO of
  ``queue_packets`` (100) full frames in bytes, 150,200 B (1502 B frames), as
  the twin's port buffer of 100 x 1500 B (``queue_in_bytes=False``: 100
  packets of any size); with no queue disc, the TrafficControlLayer drops a
  packet that finds the device queue stopped (it stops when one more full
  frame would not fit). The frame being serialized is out of the queue, as
  it is out of the twin's buffer.
* every host device: a 100000-packet FIFO that never drops (the twin's host
  NIC buffer is 1 GB).
* DCTCP: every switch device gets a RedQueueDisc of ``queue_packets``
  packets that ECN-marks on the instantaneous queue at a step threshold of
  ``k_packets`` (15; MinTh = MaxTh = K, QW = 1, Gentle off, UseHardDrop
  off), over a 1-packet device TxQueue, as ns-3's DCTCP example does.

Routing: ns-3 3.44's Ipv4GlobalRouting offers only per-packet random ECMP
(``RandomEcmpRouting``) or one route per destination; it has no per-flow
ECMP. Each flow's path is therefore pinned with static /32 host routes to
the very path fabricsim's core takes (:func:`ecmp_paths`: the core's
shortest-path next hops and its per-flow hash, checked against the links the
core's run uses). Every host has a second address on its link: data is sent
to a host's second address, ACKs return to its first (the source address of
everything it sends), so the data path and the ACK path of each flow are
both fabricsim's.

TCP: as :func:`fabricsim.validation.ns3._configure_tcp` with 1448 B segments
(timestamps on: 1502 B on the wire with the 2 B PPP header; the twin's frame
is 1500 B with no link header), initial window 10, delayed ACK count 1,
minimum RTO 250 ms, no SACK, classic (NewReno) recovery, no limited transmit
(the twin's ``rfc`` profile has none), 6 MiB socket buffers (the twin's
receive window); NewReno, or DCTCP (gain 1/16, ECN on).

Reported: ``wall_s`` and ``cpu_s`` (thread CPU time) of ``Simulator::Run``,
``events`` (``Simulator::GetEventCount``), the job completion time
``jct_s`` (the last flow's last byte at its sink), per-flow FCTs, switch
drops and ECN marks.

CLI: ``python -m fabricsim.validation.ns3 fattree --k 4 [--dctcp] --bytes-per-flow N --json``.
"""

from __future__ import annotations

import array
import copy
import json
import time
from collections import deque
from typing import Any, Sequence

from fabricsim.validation import NS3_FRAME_BYTES, ns3_setup
from fabricsim.validation.ns3_setup import (
    HOST_QUEUE_PACKETS,
    SEGMENT_SIZE,
    _configure_tcp,
    _ns,
    _restore_defaults,
    fct_summary,
    flow_counters,
)

__all__ = ["ecmp_paths", "fattree"]

QUEUE_PACKETS = 100
K_PACKETS = 15
#: The twin's receive window (``tcp.rwnd`` of the ``rfc`` profile).
WINDOW_BYTES = 6 * 1024 * 1024

_CPP = r"""
namespace fsft {
using namespace ns3;
static uint64_t drops = 0;
static uint64_t marks = 0;
static uint64_t hostDrops = 0;
static void Drop(Ptr<const Packet>) { drops++; }
static void HostDrop(Ptr<const Packet>) { hostDrops++; }
static void QdDrop(Ptr<const QueueDiscItem>) { drops++; }
static void QdMark(Ptr<const QueueDiscItem>, const char*) { marks++; }
void Reset() { drops = marks = hostDrops = 0; }
void ConnectSwitch(Ptr<Node> n) {
    n->GetObject<TrafficControlLayer>()->TraceConnectWithoutContext("TcDrop", MakeCallback(&Drop));
}
void ConnectHost(Ptr<Node> n) {
    n->GetObject<TrafficControlLayer>()->TraceConnectWithoutContext("TcDrop", MakeCallback(&HostDrop));
}
void ConnectDevice(Ptr<NetDevice> d, bool sw) {
    Ptr<PointToPointNetDevice> p = DynamicCast<PointToPointNetDevice>(d);
    p->GetQueue()->TraceConnectWithoutContext("Drop", sw ? MakeCallback(&Drop) : MakeCallback(&HostDrop));
}
void ConnectQueueDisc(Ptr<NetDevice> d) {
    Ptr<QueueDisc> qd = d->GetNode()->GetObject<TrafficControlLayer>()->GetRootQueueDiscOnDevice(d);
    qd->TraceConnectWithoutContext("Drop", MakeCallback(&QdDrop));
    qd->TraceConnectWithoutContext("Mark", MakeCallback(&QdMark));
}
void HostRoute(Ptr<Node> n, Ipv4Address dst, uint32_t iface) {
    Ipv4StaticRoutingHelper h;
    h.GetStaticRouting(n->GetObject<Ipv4>())->AddHostRouteTo(dst, iface);
}
void DefaultRoute(Ptr<Node> n, uint32_t iface) {
    Ipv4StaticRoutingHelper h;
    h.GetStaticRouting(n->GetObject<Ipv4>())->SetDefaultRoute(Ipv4Address("0.0.0.0"), iface);
}
uint32_t AddAddress(Ptr<Node> n, Ptr<NetDevice> d, Ipv4Address a) {
    Ptr<Ipv4> ip = n->GetObject<Ipv4>();
    uint32_t i = ip->GetInterfaceForDevice(d);
    ip->AddAddress(i, Ipv4InterfaceAddress(a, Ipv4Mask("255.255.255.255")));
    return i;
}
uint32_t Interface(Ptr<NetDevice> d) { return d->GetNode()->GetObject<Ipv4>()->GetInterfaceForDevice(d); }
uint64_t Drops() { return drops; }
uint64_t Marks() { return marks; }
uint64_t HostDrops() { return hostDrops; }
}  // namespace fsft
"""
_CPP_DEFINED = False

_M64 = (1 << 64) - 1


def _mix64(z: int) -> int:
    """The core's 64-bit mixer (SplitMix64's finalizer, ``rng.rs``)."""
    z = (z + 0x9E3779B97F4A7C15) & _M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


def _column(tables: dict[str, Any], table: str, name: str) -> list[int]:
    dtype, data = tables[table][name]
    return list(array.array({"u32": "I", "u64": "Q"}[dtype], data))


def _topology(scenario: dict[str, Any]) -> tuple[list[str], list[tuple[int, int, int, int]]]:
    """The node names and links (``a``, port of ``a``, ``b``, port of ``b``, in link order) the core builds
    for ``scenario``; found by running it with one-byte flows."""
    import fabricsim
    from fabricsim import _core

    probe = copy.deepcopy(scenario)
    for traffic in probe["traffic"]:
        for flow in traffic["flows"]:
            flow["size"] = "1B"
    sim = _core.Simulation(json.dumps(fabricsim.Scenario.from_dict(probe).to_resolved()))
    sim.run_until(2**63)
    out = sim.finish()
    t = out["tables"]
    rows = zip(*(_column(t, "links", c) for c in ("link", "src", "src_port", "dst", "dst_port")))
    links = {}
    for link, a, pa, b, pb in rows:
        links.setdefault(link, (a, pa, b, pb))
    return list(out["node_names"]), [links[i] for i in sorted(links)]


def ecmp_paths(scenario: dict[str, Any]) -> tuple[list[str], list[tuple[int, int, int, int]], list[dict[str, Any]]]:
    """The path fabricsim's core gives each TCP flow of ``scenario``, data and ACKs.

    Returns the node names, the links (as :func:`_topology`) and per flow
    (in scenario order) ``data`` and ``ack``: the ``(node, port)`` hops from
    the sender to the receiver and back. This is the core's routing
    (``network/routing.rs``): a node's next hops towards a host are its ports
    (in port order) whose neighbour is one hop closer, hosts never forward,
    and a switch with several picks ``hops[mix64(hash ^ salt) * n >> 64]``
    with ``salt = mix64(seed ^ mix64(node ^ 0x5eed_ec3a))`` and the flow's
    ``hash = mix64(mix64(src) ^ mix64(dst << 20) ^ mix64(0x6_0000_0000 +
    flow))`` (``sim/transport.rs``; ACKs ``mix64(hash ^ 0xac)``).
    """
    names, links = _topology(scenario)
    n = len(names)
    ports: list[dict[int, int]] = [{} for _ in range(n)]
    for a, pa, b, pb in links:
        ports[a][pa] = b
        ports[b][pb] = a
    adj = [sorted((p, v) for p, v in node.items()) for node in ports]
    is_host = [len(a) == 1 for a in adj]
    salt = [_mix64(scenario.get("seed", 1) ^ _mix64(u ^ 0x5EEDEC3A)) for u in range(n)]
    index = {name: i for i, name in enumerate(names)}
    distances: dict[int, list[int]] = {}

    def dist_to(dst: int) -> list[int]:
        if dst not in distances:
            dist = [-1] * n
            dist[dst] = 0
            queue = deque([dst])
            while queue:
                u = queue.popleft()
                if is_host[u] and u != dst:
                    continue
                for _, v in adj[u]:
                    if dist[v] < 0:
                        dist[v] = dist[u] + 1
                        queue.append(v)
            distances[dst] = dist
        return distances[dst]

    def walk(src: int, dst: int, h: int) -> list[tuple[int, int]]:
        dist, u, hops = dist_to(dst), src, []
        while u != dst:
            cand = [(p, v) for p, v in adj[u] if dist[v] >= 0 and dist[v] + 1 == dist[u]
                    and (not is_host[v] or v == dst)]
            p, v = cand[(_mix64(h ^ salt[u]) * len(cand)) >> 64] if len(cand) > 1 else cand[0]
            hops.append((u, p))
            u = v
        return hops

    flows = []
    fid = 0
    for traffic in scenario["traffic"]:
        for flow in traffic["flows"]:
            s, d = index[flow["src"]], index[flow["dst"]]
            h = _mix64(_mix64(s) ^ _mix64((d << 20) & _M64) ^ _mix64(0x600000000 + fid))
            flows.append({"src": s, "dst": d, "data": walk(s, d, h), "ack": walk(d, s, _mix64(h ^ 0xAC))})
            fid += 1
    return names, links, flows


def _address(base: int, i: int) -> str:
    v = base + i
    return f"{v >> 24}.{(v >> 16) & 255}.{(v >> 8) & 255}.{v & 255}"


def fattree(
    k: int = 4,
    bytes_per_flow: int = 2_000_000,
    cc: str = "newreno",
    *,
    partner: Sequence[int] | None = None,
    queue_packets: int = QUEUE_PACKETS,
    queue_in_bytes: bool = True,
    k_packets: int = K_PACKETS,
    max_sim_seconds: float = 60.0,
) -> dict[str, Any]:
    """Run the ns-3 twin of ``fattree_twin(k, partner, bytes_per_flow, cc)``; ``partner`` defaults to the
    htsim pairs' permutation (seed ``k``)."""
    global _CPP_DEFINED
    from fabricsim.bench.htsim import fattree_twin
    from fabricsim.bench.htsim_work import permutation

    if cc not in ("newreno", "dctcp"):
        raise ValueError(f"unknown cc {cc!r}; expected newreno or dctcp")
    hosts = k**3 // 4
    partner = list(partner) if partner is not None else permutation(hosts, seed=k)
    scenario = fattree_twin(k, partner, bytes_per_flow, cc)
    t0 = time.perf_counter()
    names, links, paths = ecmp_paths(scenario)
    paths_s = time.perf_counter() - t0

    ns = _ns()
    if not _CPP_DEFINED:
        ns.cppyy.cppdef(_CPP)
        _CPP_DEFINED = True
    H, F = ns.cppyy.gbl.fsref, ns.cppyy.gbl.fsft
    ns.Simulator.Destroy()
    ns.RngSeedManager.SetSeed(1)
    ns.RngSeedManager.SetRun(1)
    extra = {
        "ns3::TcpSocket::DelAckCount": "1",
        "ns3::TcpSocketBase::MinRto": "250ms",
        "ns3::TcpSocketBase::LimitedTransmit": "false",
    }
    settings = _configure_tcp(ns, cc, WINDOW_BYTES, k_packets, queue_packets, "10Gbps", "1us", extra)

    queue = f"{queue_packets * NS3_FRAME_BYTES}B" if queue_in_bytes else f"{queue_packets}p"
    t0 = time.perf_counter()
    nodes = ns.NodeContainer()
    nodes.Create(len(names))
    ns.InternetStackHelper().Install(nodes)
    p2p = ns.PointToPointHelper()
    p2p.SetDeviceAttribute("DataRate", ns.StringValue("10Gbps"))
    p2p.SetChannelAttribute("Delay", ns.StringValue("1us"))
    addr = ns.Ipv4AddressHelper()
    tch = ns.TrafficControlHelper()
    red = ns.TrafficControlHelper()
    red.SetRootQueueDisc("ns3::RedQueueDisc")
    is_host = {i for i, name in enumerate(names) if name.startswith("h")}  # the fat-tree's hosts: h0, h1, ...
    iface: dict[tuple[int, int], int] = {}
    first_addr: dict[int, Any] = {}
    host_dev: dict[int, Any] = {}
    for link, (a, pa, b, pb) in enumerate(links):
        devs = p2p.Install(nodes.Get(a), nodes.Get(b))
        addr.SetBase(ns.Ipv4Address(_address(10 << 24, 4 * link)), ns.Ipv4Mask("255.255.255.252"))
        ifaces = addr.Assign(devs)
        for j, (node, port) in enumerate(((a, pa), (b, pb))):
            dev = devs.Get(j)
            tch.Uninstall(dev)
            iface[(node, port)] = int(F.Interface(dev))
            if node in is_host:
                H.SetTxQueue(dev, f"{HOST_QUEUE_PACKETS}p")
                F.ConnectDevice(dev, False)
                first_addr[node] = ifaces.GetAddress(j)
                host_dev[node] = dev
            elif cc == "dctcp":
                red.Install(dev)
                H.SetTxQueue(dev, "1p")
                F.ConnectDevice(dev, True)
                F.ConnectQueueDisc(dev)
            else:
                H.SetTxQueue(dev, queue)
                F.ConnectDevice(dev, True)
    F.Reset()
    # A host's link address is its first: the source of all it sends, hence where its ACKs return.
    # Its second address is where its data is sent to.
    data_addr = {}
    for i in range(len(names)):
        if i in is_host:
            data_addr[i] = ns.Ipv4Address(_address(11 << 24, 1 + i))
            F.AddAddress(nodes.Get(i), host_dev[i], data_addr[i])
            F.DefaultRoute(nodes.Get(i), iface[(i, 0)])
            F.ConnectHost(nodes.Get(i))
        else:
            F.ConnectSwitch(nodes.Get(i))
    routes = 0
    for flow in paths:
        for hops, dst in ((flow["data"], data_addr[flow["dst"]]), (flow["ack"], first_addr[flow["src"]])):
            for node, port in hops:
                if node not in is_host:
                    F.HostRoute(nodes.Get(node), dst, iface[(node, port)])
                    routes += 1

    H.Reset(len(paths))
    for f, flow in enumerate(paths):
        port = 10000 + f
        H.SetFlow(f, bytes_per_flow, 0.0)
        sink = ns.PacketSinkHelper("ns3::TcpSocketFactory",
                                   ns.InetSocketAddress(ns.Ipv4Address.GetAny(), port).ConvertTo())
        sink_apps = sink.Install(nodes.Get(flow["dst"]))
        sink_apps.Start(ns.Seconds(0.0))
        H.ConnectSink(sink_apps.Get(0), f)
        bulk = ns.BulkSendHelper("ns3::TcpSocketFactory",
                                 ns.InetSocketAddress(data_addr[flow["dst"]], port).ConvertTo())
        bulk.SetAttribute("MaxBytes", ns.UintegerValue(bytes_per_flow))
        bulk.SetAttribute("SendSize", ns.UintegerValue(SEGMENT_SIZE))
        apps = bulk.Install(nodes.Get(flow["src"]))
        apps.Start(ns.Seconds(0.0))
        H.ConnectSender(apps.Get(0), f, 0.0)
    build_s = time.perf_counter() - t0

    ns.Simulator.Stop(ns.Seconds(max_sim_seconds))
    events_before = int(ns.Simulator.GetEventCount())
    t0, c0 = time.perf_counter(), time.thread_time()
    ns.Simulator.Run()
    cpu, wall = time.thread_time() - c0, time.perf_counter() - t0
    events = int(ns.Simulator.GetEventCount()) - events_before
    sim_end = ns.Simulator.Now().GetSeconds()

    flows = []
    for f, flow in enumerate(paths):
        done = float(H.FlowDone(f))
        flows.append({
            "flow": f,
            "src": names[flow["src"]],
            "dst": names[flow["dst"]],
            "hops": len(flow["data"]),
            "fct_s": done if done >= 0 else None,
            **flow_counters(H, f),
        })
    drops, marks, host_drops = int(F.Drops()), int(F.Marks()), int(F.HostDrops())
    ns.Simulator.Destroy()
    _restore_defaults(ns)

    fcts = [fl["fct_s"] for fl in flows if fl["fct_s"] is not None]
    completed = len(fcts) == len(flows)
    if cc == "dctcp":
        queueing = (f"switch ports: RedQueueDisc (limit {queue_packets}p, ECN step mark at K={k_packets}p on the "
                    "instantaneous queue) over a 1-packet device TxQueue")
    else:
        queueing = f"switch ports: PointToPointNetDevice TxQueue DropTail {queue}, no queue disc"
    return {
        "experiment": "fattree",
        "params": {"k": k, "hosts": hosts, "flows": len(flows), "bytes_per_flow": bytes_per_flow, "cc": cc,
                   "queue_packets": queue_packets, "queue": queue, "k_packets": k_packets if cc == "dctcp" else None,
                   "rate": "10Gbps", "delay": "1us", "window_bytes": WINDOW_BYTES, "partner": partner},
        "settings": settings,
        "topology": {
            "kind": "fat_tree",
            "nodes": len(names),
            "links": len(links),
            "switch_queues": queueing,
            "host_queues": f"device TxQueue DropTail {HOST_QUEUE_PACKETS}p, no queue disc",
            "routing": "static /32 host routes pinning each flow's data and ACK paths to fabricsim's ECMP choice",
            "host_routes": routes,
        },
        "completed": completed,
        "jct_s": max(fcts) if completed else None,
        "fct_s": fct_summary(fcts),
        "events": events,
        "retransmits_total": sum(fl["retransmits"] for fl in flows),
        "rto_events_total": sum(fl["rto_events"] for fl in flows),
        "switch_drops": drops,
        "ecn_marks": marks,
        "host_drops": host_drops,
        "flows": flows,
        "sim_end_s": sim_end,
        "wall_s": wall,
        "cpu_s": cpu,
        "build_s": build_s,
        "paths_s": paths_s,
        "ns3_import_s": ns3_setup.IMPORT_SECONDS,
    }


def summary(r: dict[str, Any]) -> str:
    """One line about a :func:`fattree` result."""
    p = r["params"]
    ms = lambda x: "-" if x is None else f"{x * 1e3:.3f} ms"  # noqa: E731
    return (f"fattree k={p['k']} {p['flows']}x{p['bytes_per_flow']}B cc={p['cc']}: completed={r['completed']} "
            f"JCT={ms(r['jct_s'])} FCT median={ms(r['fct_s']['median'])} events={r['events']:,} "
            f"drops={r['switch_drops']} marks={r['ecn_marks']} retx={r['retransmits_total']} "
            f"rto={r['rto_events_total']} run wall={r['wall_s']:.2f}s cpu={r['cpu_s']:.2f}s")
