"""The ns-3 session the reference experiments share (optional: ``pip install ns3``): the lazy import of
the bindings with the C++ trace helpers compiled into it (namespace ``fsref``: per-flow completion,
retransmissions and congestion states; queue, drop and frame counters), and the TCP settings
(``Config::SetDefault``) of :mod:`fabricsim.validation.ns3` and :mod:`fabricsim.validation.ns3_fattree`.

The ``ns`` import is done lazily, in :func:`_ns` (the first import compiles the bindings and takes
several seconds).
"""

from __future__ import annotations

import statistics
import time

SEGMENT_SIZE = 1448
TCP_HEADER = 20
TCP_OPTIONS = 12  # timestamps option (10 B) padded to 12 B (ACKs add 4 + 8 B per SACK block)
IP_HEADER = 20
PPP_HEADER = 2
HOST_QUEUE_PACKETS = 100000

RECOVERY_TYPES = {
    "classic": "ns3::TcpClassicRecovery",
    "prr": "ns3::TcpPrrRecovery",
}

CC_TYPES = {
    "newreno": "ns3::TcpNewReno",
    "cubic": "ns3::TcpCubic",
    "dctcp": "ns3::TcpDctcp",
    "htcp": "ns3::TcpHtcp",
}

_CPP_HELPERS = r"""
#include <map>
#include <vector>
#include <string>

namespace fsref {
using namespace ns3;

struct FlowRec {
    uint64_t target = 0;
    uint64_t rx = 0;
    double startS = 0;
    double doneS = -1;
    uint64_t retx = 0;
    uint64_t lossEvents = 0;      // entries into CA_LOSS (RTO)
    uint64_t recoveryEvents = 0;  // entries into CA_RECOVERY (fast retransmit)
    uint64_t cwrEvents = 0;       // entries into CA_CWR (ECN reaction)
    double firstLossS = -1;       // time of the first RTO
};

struct Rec {
    std::vector<FlowRec> flows;
    uint64_t done = 0;
    bool stopWhenDone = true;
    uint64_t bnDrops = 0;
    uint64_t bnMarks = 0;
    uint32_t bnMaxQueue = 0;
    uint64_t otherDrops = 0;
    std::map<uint32_t, uint64_t> dataFrames;  // size -> count, switch->receiver wire
    std::map<uint32_t, uint64_t> ackFrames;   // size -> count, receiver->switch wire
};

static Rec g;

void Reset(int n) {
    g = Rec();
    g.flows.resize(n);
}

void SetFlow(int idx, uint64_t target, double startS) {
    g.flows[idx].target = target;
    g.flows[idx].startS = startS;
}

static void SinkRx(int idx, Ptr<const Packet> p, const Address&) {
    FlowRec& f = g.flows[idx];
    f.rx += p->GetSize();
    if (f.doneS < 0 && f.rx >= f.target) {
        f.doneS = Simulator::Now().GetSeconds();
        g.done++;
        if (g.stopWhenDone && g.done == g.flows.size()) {
            Simulator::Stop();
        }
    }
}

static void Retx(int idx, Ptr<const Packet>, const TcpHeader&, const Address&,
                 const Address&, Ptr<const TcpSocketBase>) {
    g.flows[idx].retx++;
}

static void CongState(int idx, TcpSocketState::TcpCongState_t o,
                      TcpSocketState::TcpCongState_t n) {
    if (n == o) return;
    if (n == TcpSocketState::CA_LOSS) {
        g.flows[idx].lossEvents++;
        if (g.flows[idx].firstLossS < 0) g.flows[idx].firstLossS = Simulator::Now().GetSeconds();
    }
    if (n == TcpSocketState::CA_RECOVERY) g.flows[idx].recoveryEvents++;
    if (n == TcpSocketState::CA_CWR) g.flows[idx].cwrEvents++;
}

static void HookSocket(Ptr<BulkSendApplication> app, int idx) {
    Ptr<Socket> s = app->GetSocket();
    if (s) {
        s->TraceConnectWithoutContext("CongState", MakeBoundCallback(&CongState, idx));
    }
}

void ConnectSink(Ptr<Application> app, int idx) {
    app->TraceConnectWithoutContext("Rx", MakeBoundCallback(&SinkRx, idx));
}

void ConnectSender(Ptr<Application> app, int idx, double startS) {
    app->TraceConnectWithoutContext("TcpRetransmission", MakeBoundCallback(&Retx, idx));
    Ptr<BulkSendApplication> bs = DynamicCast<BulkSendApplication>(app);
    // The socket is created in StartApplication; hook it right after.
    Simulator::Schedule(Seconds(startS) + NanoSeconds(1), &HookSocket, bs, idx);
}

static void BnDrop(Ptr<const Packet>) { g.bnDrops++; }
static void BnQdDrop(Ptr<const QueueDiscItem>) { g.bnDrops++; }
static void BnMark(Ptr<const QueueDiscItem>, const char*) { g.bnMarks++; }
static void BnLen(uint32_t, uint32_t n) { if (n > g.bnMaxQueue) g.bnMaxQueue = n; }
static void OtherDrop(Ptr<const Packet>) { g.otherDrops++; }
static void DataFrame(Ptr<const Packet> p) { g.dataFrames[p->GetSize()]++; }
static void AckFrame(Ptr<const Packet> p) { g.ackFrames[p->GetSize()]++; }

void SetTxQueue(Ptr<NetDevice> d, std::string size) {
    Ptr<PointToPointNetDevice> p = DynamicCast<PointToPointNetDevice>(d);
    p->GetQueue()->SetMaxSize(QueueSize(size));
}

uint32_t GetTxQueuePackets(Ptr<NetDevice> d) {
    Ptr<PointToPointNetDevice> p = DynamicCast<PointToPointNetDevice>(d);
    return p->GetQueue()->GetMaxSize().GetValue();
}

void ConnectBottleneckDevice(Ptr<NetDevice> d, bool countQueue) {
    Ptr<PointToPointNetDevice> p = DynamicCast<PointToPointNetDevice>(d);
    Ptr<Queue<Packet>> q = p->GetQueue();
    if (countQueue) {
        q->TraceConnectWithoutContext("Drop", MakeCallback(&BnDrop));
        q->TraceConnectWithoutContext("PacketsInQueue", MakeCallback(&BnLen));
    } else {
        q->TraceConnectWithoutContext("Drop", MakeCallback(&OtherDrop));
    }
    p->TraceConnectWithoutContext("PhyTxBegin", MakeCallback(&DataFrame));
}

void ConnectAckDevice(Ptr<NetDevice> d) {
    d->TraceConnectWithoutContext("PhyTxBegin", MakeCallback(&AckFrame));
}

bool ConnectTcDrop(Ptr<Node> n, bool bottleneck) {
    Ptr<TrafficControlLayer> tc = n->GetObject<TrafficControlLayer>();
    return tc->TraceConnectWithoutContext(
        "TcDrop", bottleneck ? MakeCallback(&BnDrop) : MakeCallback(&OtherDrop));
}

void ConnectOtherDevice(Ptr<NetDevice> d) {
    Ptr<PointToPointNetDevice> p = DynamicCast<PointToPointNetDevice>(d);
    p->GetQueue()->TraceConnectWithoutContext("Drop", MakeCallback(&OtherDrop));
}

void ConnectQueueDisc(Ptr<NetDevice> d) {
    Ptr<TrafficControlLayer> tc = d->GetNode()->GetObject<TrafficControlLayer>();
    Ptr<QueueDisc> qd = tc->GetRootQueueDiscOnDevice(d);
    qd->TraceConnectWithoutContext("Drop", MakeCallback(&BnQdDrop));
    qd->TraceConnectWithoutContext("Mark", MakeCallback(&BnMark));
    qd->TraceConnectWithoutContext("PacketsInQueue", MakeCallback(&BnLen));
}

std::string QueueDiscType(Ptr<NetDevice> d) {
    Ptr<TrafficControlLayer> tc = d->GetNode()->GetObject<TrafficControlLayer>();
    Ptr<QueueDisc> qd = tc->GetRootQueueDiscOnDevice(d);
    return qd ? qd->GetInstanceTypeId().GetName() : std::string("none");
}

uint32_t NFlows() { return g.flows.size(); }
double FlowDone(int i) { return g.flows[i].doneS; }
double FlowStart(int i) { return g.flows[i].startS; }
uint64_t FlowRx(int i) { return g.flows[i].rx; }
uint64_t FlowRetx(int i) { return g.flows[i].retx; }
uint64_t FlowLoss(int i) { return g.flows[i].lossEvents; }
uint64_t FlowRecovery(int i) { return g.flows[i].recoveryEvents; }
uint64_t FlowCwr(int i) { return g.flows[i].cwrEvents; }
double FlowFirstLoss(int i) { return g.flows[i].firstLossS; }
uint64_t BnDrops() { return g.bnDrops; }
uint64_t BnMarks() { return g.bnMarks; }
uint32_t BnMaxQueue() { return g.bnMaxQueue; }
uint64_t OtherDrops() { return g.otherDrops; }

std::string FrameHist() {
    std::string s = "{\"data\": {";
    bool first = true;
    for (auto& kv : g.dataFrames) {
        if (!first) s += ", ";
        first = false;
        s += "\"" + std::to_string(kv.first) + "\": " + std::to_string(kv.second);
    }
    s += "}, \"ack\": {";
    first = true;
    for (auto& kv : g.ackFrames) {
        if (!first) s += ", ";
        first = false;
        s += "\"" + std::to_string(kv.first) + "\": " + std::to_string(kv.second);
    }
    s += "}}";
    return s;
}

}  // namespace fsref
"""

_NS = None
IMPORT_SECONDS = None
# Defaults overridden through extra_defaults, restored after each run so that
# repeated calls in one process do not leak settings into each other.
_ORIGINAL_DEFAULTS = {}


def _ns():
    """Import ns-3 (lazily) and compile the C++ trace helpers once."""
    global _NS, IMPORT_SECONDS
    if _NS is None:
        t0 = time.perf_counter()
        from ns import ns  # noqa: PLC0415

        ns.cppyy.cppdef(_CPP_HELPERS)
        IMPORT_SECONDS = time.perf_counter() - t0
        _NS = ns
    return _NS


def _attr(ns, name):
    """Current (default) value of a Config attribute path 'ns3::Type::Attr'."""
    tname, aname = name.rsplit("::", 1)
    tid = ns.TypeId.LookupByName(tname)
    info = ns.TypeId.AttributeInformation()
    if not tid.LookupAttributeByName(aname, info):
        return None
    return str(info.initialValue.SerializeToString(info.checker))


def _restore_defaults(ns):
    """Put back the defaults that ``extra_defaults`` overrode."""
    for path, value in _ORIGINAL_DEFAULTS.items():
        ns.Config.SetDefault(path, ns.StringValue(value))


def _configure_tcp(
    ns, cc, window_bytes, k_packets, queue_packets, rate, delay, extra_defaults=None, sack=False, recovery="classic"
):
    if cc not in CC_TYPES:
        raise ValueError(f"unknown cc {cc!r}; expected one of {sorted(CC_TYPES)}")
    if recovery not in RECOVERY_TYPES:
        raise ValueError(f"unknown recovery {recovery!r}; expected one of {sorted(RECOVERY_TYPES)}")
    sd = ns.Config.SetDefault
    S, U, B, T = ns.StringValue, ns.UintegerValue, ns.BooleanValue, ns.TimeValue

    sd("ns3::TcpL4Protocol::SocketType", S(CC_TYPES[cc]))
    sd("ns3::TcpL4Protocol::RecoveryType", S(RECOVERY_TYPES[recovery]))
    sd("ns3::TcpSocket::SegmentSize", U(SEGMENT_SIZE))
    sd("ns3::TcpSocket::InitialCwnd", U(10))
    sd("ns3::TcpSocket::DelAckCount", U(2))
    sd("ns3::TcpSocket::DelAckTimeout", T(ns.MilliSeconds(200)))
    sd("ns3::TcpSocket::SndBufSize", U(window_bytes))
    sd("ns3::TcpSocket::RcvBufSize", U(window_bytes))
    sd("ns3::TcpSocketBase::Sack", B(bool(sack)))
    sd("ns3::TcpSocketBase::Timestamp", B(True))
    sd("ns3::TcpSocketBase::WindowScaling", B(True))
    sd("ns3::TcpSocketBase::MinRto", T(ns.MilliSeconds(200)))
    sd("ns3::TcpSocketBase::ClockGranularity", T(ns.MilliSeconds(1)))
    sd("ns3::TcpSocketBase::UseEcn", S("On" if cc == "dctcp" else "Off"))
    sd("ns3::BulkSendApplication::SendSize", U(SEGMENT_SIZE))
    if cc == "dctcp":
        if k_packets is None:
            raise ValueError("cc='dctcp' needs k_packets")
        sd("ns3::TcpDctcp::DctcpShiftG", ns.DoubleValue(1.0 / 16))
        sd("ns3::TcpDctcp::DctcpAlphaOnInit", ns.DoubleValue(1.0))
        sd("ns3::RedQueueDisc::MaxSize", ns.QueueSizeValue(ns.QueueSize(f"{queue_packets}p")))
        sd("ns3::RedQueueDisc::MinTh", ns.DoubleValue(float(k_packets)))
        sd("ns3::RedQueueDisc::MaxTh", ns.DoubleValue(float(k_packets)))
        sd("ns3::RedQueueDisc::QW", ns.DoubleValue(1.0))
        sd("ns3::RedQueueDisc::Gentle", B(False))
        sd("ns3::RedQueueDisc::UseEcn", B(True))
        sd("ns3::RedQueueDisc::UseHardDrop", B(False))
        sd("ns3::RedQueueDisc::MeanPktSize", U(SEGMENT_SIZE + TCP_OPTIONS + TCP_HEADER + IP_HEADER))
        sd("ns3::RedQueueDisc::LinkBandwidth", ns.DataRateValue(ns.DataRate(rate)))
        sd("ns3::RedQueueDisc::LinkDelay", T(ns.Time(delay)))
    for path, value in (extra_defaults or {}).items():
        if path not in _ORIGINAL_DEFAULTS:
            _ORIGINAL_DEFAULTS[path] = _attr(ns, path)
        sd(path, S(str(value)))

    names = [
        "ns3::TcpL4Protocol::SocketType",
        "ns3::TcpL4Protocol::RecoveryType",
        "ns3::TcpSocket::SegmentSize",
        "ns3::TcpSocket::InitialCwnd",
        "ns3::TcpSocket::InitialSlowStartThreshold",
        "ns3::TcpSocket::DelAckCount",
        "ns3::TcpSocket::DelAckTimeout",
        "ns3::TcpSocket::SndBufSize",
        "ns3::TcpSocket::RcvBufSize",
        "ns3::TcpSocket::TcpNoDelay",
        "ns3::TcpSocketBase::Sack",
        "ns3::TcpSocketBase::Timestamp",
        "ns3::TcpSocketBase::WindowScaling",
        "ns3::TcpSocketBase::MinRto",
        "ns3::TcpSocketBase::ClockGranularity",
        "ns3::TcpSocketBase::ReTxThreshold",
        "ns3::TcpSocketBase::LimitedTransmit",
        "ns3::TcpSocketBase::UseEcn",
        "ns3::TcpSocketState::EnablePacing",
        "ns3::BulkSendApplication::SendSize",
    ]
    if cc == "cubic":
        names += [
            "ns3::TcpCubic::HyStart",
            "ns3::TcpCubic::HyStartDetect",
            "ns3::TcpCubic::HyStartLowWindow",
            "ns3::TcpCubic::Beta",
            "ns3::TcpCubic::C",
            "ns3::TcpCubic::FastConvergence",
            "ns3::TcpCubic::TcpFriendliness",
        ]
    if cc == "htcp":
        names += ["ns3::TcpHtcp::DefaultBackoff", "ns3::TcpHtcp::ThroughputRatio", "ns3::TcpHtcp::DeltaL"]
    if cc == "dctcp":
        names += [
            "ns3::TcpDctcp::DctcpShiftG",
            "ns3::TcpDctcp::DctcpAlphaOnInit",
            "ns3::TcpDctcp::UseEct0",
            "ns3::RedQueueDisc::MaxSize",
            "ns3::RedQueueDisc::MinTh",
            "ns3::RedQueueDisc::MaxTh",
            "ns3::RedQueueDisc::QW",
            "ns3::RedQueueDisc::Gentle",
            "ns3::RedQueueDisc::UseEcn",
            "ns3::RedQueueDisc::UseHardDrop",
            "ns3::RedQueueDisc::MeanPktSize",
            "ns3::RedQueueDisc::LinkBandwidth",
            "ns3::RedQueueDisc::LinkDelay",
        ]
    names += [n for n in (extra_defaults or {}) if n not in names]
    return {n.replace("ns3::", ""): _attr(ns, n) for n in names}


def flow_counters(H, f):
    """What the trace helpers ``H`` (``fsref``) counted for flow ``f``: bytes at its sink, retransmitted
    segments, entries into CA_LOSS (RTOs), CA_RECOVERY and CA_CWR, and the time of its first RTO."""
    first_rto = float(H.FlowFirstLoss(f))
    return {
        "rx_bytes": int(H.FlowRx(f)),
        "retransmits": int(H.FlowRetx(f)),
        "rto_events": int(H.FlowLoss(f)),
        "fast_recovery_events": int(H.FlowRecovery(f)),
        "cwr_events": int(H.FlowCwr(f)),
        "first_rto_s": first_rto if first_rto >= 0 else None,
    }


def fct_summary(fcts):
    """Minimum, median, mean and maximum of the completed flows' FCTs (seconds; None without any)."""
    return {
        "min": min(fcts) if fcts else None,
        "median": statistics.median(fcts) if fcts else None,
        "mean": statistics.fmean(fcts) if fcts else None,
        "max": max(fcts) if fcts else None,
    }
