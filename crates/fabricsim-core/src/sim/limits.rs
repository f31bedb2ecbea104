//! Size limits, checked on the scenario before anything is allocated: a
//! scenario too large to build is an error naming the field that makes it so,
//! never an allocation failure that aborts the process.
//!
//! | limit | value | why |
//! |---|---|---|
//! | nodes | [`MAX_NODES`] (2^20) | a k = 64 fat tree has 70,656 |
//! | ports per node | [`MAX_PORTS`] (65,534) | local port numbers are 16-bit |
//! | flows | [`MAX_FLOWS`] (2^22) | every flow holds its state for the whole run |
//! | VOQs per VOQ device | [`MAX_VOQS`] (2^22) | one queue per (ingress, egress, class): 724 ports x 8 classes |
//! | throughput bins, queue samples | [`MAX_BINS`] (10^7) over the duration | the tables grow with them |
//! | estimated memory of the world | [`MAX_WORLD_BYTES`] (8 GiB) | nodes, ports, wires, routes, VOQs, flows |
//! | estimated memory of the binned tables | [`MAX_WORLD_BYTES`] (8 GiB) | rows of `throughput`, `carried_links`, `carried_flows` |
//!
//! The memory estimate counts what the world holds before the first event:
//! `size_of` of each arena element, the per-class state of every port, the
//! routing state as `network/routing.rs` builds it, the VOQ counters and
//! sub-queues, the per-input sub-queues of devices with input arbitration
//! (a port's classes times its device's ports plus one each), and the
//! per-flow state. Routing is counted at its peak while
//! it is built: a matrix of one 4-byte ECMP group id per (node with a table,
//! destination class), where nodes with a table are the switches and the
//! multi-homed hosts, and a destination class is a switch's single-homed
//! hosts or one other host; the deduplicated rows kept afterwards are at most
//! as large again (in the generated fabrics a handful of rows); and 24 bytes
//! per node (destination entry, row offset, ECMP salt). Packets in flight
//! come on top and depend on the run.
//!
//! The binned tables get a row per (bin, link direction) and per (bin, flow)
//! that carried a frame, held until the run ends: a link direction has at
//! most one row per bin and at most one per frame it can carry (the run's
//! duration at the fastest link's rate over the smallest frame on the wire,
//! 84 B), and the flows' rows are at most as many as the frames the links
//! carry. Each row costs about [`BINNED_ROW_BYTES`]; the constant's basis is
//! 325 B per row over the three tables on the quick start with 1 ns bins.

use super::transport::TcpFlow;
use crate::buffer::{BufferConfig, BuiltinBufferConfig};
use crate::config::{Scenario, TrafficConfig};
use crate::error::ConfigError;
use crate::network::port::SubQueues;
use crate::network::topology::{ExplicitNode, HostsPerLeaf, NodeKindConfig, TopologyConfig};
use crate::network::{Channel, Node, Port};
use crate::stats::FlowStats;
use std::collections::{BTreeMap, VecDeque};
use std::mem::size_of;

pub const MAX_NODES: u64 = 1 << 20;
pub const MAX_PORTS: u64 = 65_534;
pub const MAX_FLOWS: u64 = 1 << 22;
pub const MAX_VOQS: u64 = 1 << 22;
pub const MAX_BINS: u64 = 10_000_000;
pub const MAX_WORLD_BYTES: u64 = 8 << 30;
/// Bytes one row of a binned table takes until the run ends (module documentation).
pub const BINNED_ROW_BYTES: u128 = 110;
/// Bits of the smallest Ethernet frame on the wire: 64 B, preamble and gap.
const MIN_WIRE_FRAME_BITS: u128 = 84 * 8;

/// What the topology will hold, computed from its description.
struct Shape {
    nodes: u128,
    links: u128,
    /// `(switch name, ports)` of every switch.
    switches: Vec<(String, u64)>,
    /// Nodes with a routing table (switches, hosts with several links).
    tables: u128,
    /// Routing destination classes (`network/routing.rs`).
    classes: u128,
}

fn thousands(n: u128) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn too_many_nodes(path: &str, nodes: u128) -> ConfigError {
    ConfigError::new(
        path,
        format!("makes {} nodes; at most {} are supported", thousands(nodes), thousands(MAX_NODES as u128)),
    )
}

fn too_many_ports(path: &str, node: &str, ports: u128) -> ConfigError {
    ConfigError::new(
        path,
        format!(
            "gives {node} {} ports; a node has at most {} (local port numbers are 16-bit)",
            thousands(ports),
            thousands(MAX_PORTS as u128)
        ),
    )
}

/// Node, link and port counts of a topology, checked against the limits.
fn shape(t: &TopologyConfig) -> Result<Shape, ConfigError> {
    let p = "topology";
    let check_nodes = |field: &str, nodes: u128| {
        if nodes > MAX_NODES as u128 {
            Err(too_many_nodes(&format!("{p}.{field}"), nodes))
        } else {
            Ok(())
        }
    };
    let check_ports = |field: &str, node: &str, ports: u128| {
        if ports > MAX_PORTS as u128 {
            Err(too_many_ports(&format!("{p}.{field}"), node, ports))
        } else {
            Ok(())
        }
    };
    Ok(match t {
        TopologyConfig::Star { hosts, .. } => {
            let h = *hosts as u128;
            check_ports("hosts", "sw0", h)?;
            Shape {
                nodes: h + 1,
                links: h,
                switches: vec![("sw0".into(), h as u64)],
                tables: 1,
                classes: (h > 0) as u128,
            }
        }
        TopologyConfig::Dumbbell { left, right, .. } => {
            let (l, r) = (*left as u128, *right as u128);
            check_ports("left", "sw_left", l + 1)?;
            check_ports("right", "sw_right", r + 1)?;
            Shape {
                nodes: l + r + 2,
                links: l + r + 1,
                switches: vec![("sw_left".into(), l as u64 + 1), ("sw_right".into(), r as u64 + 1)],
                tables: 2,
                classes: (l > 0) as u128 + (r > 0) as u128,
            }
        }
        TopologyConfig::LeafSpine { leaves, spines, hosts_per_leaf, links_per_spine, .. } => {
            let (nl, ns, lps) = (*leaves as u128, *spines as u128, *links_per_spine as u128);
            let counts: Vec<u128> = match hosts_per_leaf {
                HostsPerLeaf::Same(n) => {
                    // One count for every leaf: check before making a vector per leaf.
                    check_nodes("hosts_per_leaf", nl * (*n as u128) + nl + ns)?;
                    vec![*n as u128; nl as usize]
                }
                HostsPerLeaf::Each(v) => v.iter().map(|&n| n as u128).collect(),
            };
            let hosts: u128 = counts.iter().sum();
            check_nodes("hosts_per_leaf", hosts + nl + ns)?;
            check_ports("leaves", "each spine", nl * lps)?;
            let uplinks = ns * lps;
            if let Some((i, &most)) = counts.iter().enumerate().max_by_key(|(_, &c)| c) {
                let field = if most >= uplinks { "hosts_per_leaf" } else { "links_per_spine" };
                check_ports(field, &format!("leaf{i}"), uplinks + most)?;
            }
            let mut switches: Vec<(String, u64)> =
                counts.iter().enumerate().map(|(i, &c)| (format!("leaf{i}"), (uplinks + c) as u64)).collect();
            switches.extend((0..ns).map(|j| (format!("spine{j}"), (nl * lps) as u64)));
            let classes = counts.iter().filter(|&&c| c > 0).count() as u128;
            Shape { nodes: hosts + nl + ns, links: nl * ns * lps + hosts, switches, tables: nl + ns, classes }
        }
        TopologyConfig::FatTree { k, .. } => {
            // k is checked (even, 2..=64) when the graph is built; only sizes here.
            let k = (*k).min(64) as u128;
            let half = k / 2;
            let mut switches = Vec::new();
            switches.extend((0..half * half).map(|i| (format!("core{i}"), k as u64)));
            for pod in 0..k {
                switches.extend((0..half).map(|i| (format!("agg{pod}_{i}"), k as u64)));
                switches.extend((0..half).map(|i| (format!("edge{pod}_{i}"), k as u64)));
            }
            Shape {
                nodes: 5 * k * k / 4 + k * k * k / 4,
                links: 3 * k * k * k / 4,
                switches,
                tables: 5 * k * k / 4,
                classes: k * half,
            }
        }
        TopologyConfig::Explicit { nodes, links } => {
            let mut ports: BTreeMap<&str, u128> = BTreeMap::new();
            for l in links {
                *ports.entry(l.a.as_str()).or_default() += 1;
                *ports.entry(l.b.as_str()).or_default() += 1;
            }
            if let Some((name, &n)) = ports.iter().max_by_key(|(_, &n)| n) {
                check_ports("links", name, n)?;
            }
            check_nodes("nodes", nodes.len() as u128)?;
            let kind_of = |n: &ExplicitNode| n.kind == NodeKindConfig::Switch;
            let switch_names: std::collections::BTreeSet<&str> =
                nodes.iter().filter(|n| kind_of(n)).map(|n| n.name.as_str()).collect();
            // A host with one link to a switch joins that switch's class; any other host is a class of its own.
            let mut peer: BTreeMap<&str, &str> = BTreeMap::new();
            for l in links {
                peer.insert(l.a.as_str(), l.b.as_str());
                peer.insert(l.b.as_str(), l.a.as_str());
            }
            let mut class_switches = std::collections::BTreeSet::new();
            let (mut own_classes, mut multi_homed) = (0u128, 0u128);
            for n in nodes.iter().filter(|n| !kind_of(n)) {
                let name = n.name.as_str();
                let degree = *ports.get(name).unwrap_or(&0);
                match peer.get(name) {
                    Some(&sw) if degree == 1 && switch_names.contains(sw) => {
                        class_switches.insert(sw);
                    }
                    _ => own_classes += 1,
                }
                multi_homed += (degree > 1) as u128;
            }
            Shape {
                nodes: nodes.len() as u128,
                links: links.len() as u128,
                switches: nodes
                    .iter()
                    .filter(|n| kind_of(n))
                    .map(|n| (n.name.clone(), *ports.get(n.name.as_str()).unwrap_or(&0) as u64))
                    .collect(),
                tables: switch_names.len() as u128 + multi_homed,
                classes: class_switches.len() as u128 + own_classes,
            }
        }
    })
}

/// Flows a traffic entry creates.
fn flows_of(t: &TrafficConfig) -> u128 {
    match t {
        TrafficConfig::UdpCbr(u) | TrafficConfig::UdpPoisson(u) => u.src.len() as u128,
        TrafficConfig::Burst(b) => b.src.len() as u128,
        TrafficConfig::TcpBulk(b) => b.src.len() as u128 * b.streams as u128,
        TrafficConfig::TcpIncast(c) => c.servers.len() as u128 * c.flows_per_server as u128 * c.rounds as u128,
        TrafficConfig::TcpFlows(f) => f.flows.len() as u128,
        TrafficConfig::RdmaWrite(r) => r.src.len() as u128 * r.qps as u128,
        TrafficConfig::RdmaFlows(f) => f.flows.len() as u128,
        TrafficConfig::Iperf3(i) => i.instances as u128,
        TrafficConfig::PingPong(_) => 1,
    }
}

fn bins(sc: &Scenario, interval: u64, field: &str, what: &str) -> Result<(), ConfigError> {
    if interval == 0 {
        return Ok(());
    }
    let n = sc.duration_ps / interval;
    if n > MAX_BINS {
        let least = sc.duration_ps.div_ceil(MAX_BINS);
        return Err(ConfigError::new(
            format!("stats.{field}"),
            format!(
                "{interval} ps makes {} {what} over the duration ({} ps); at most {}: use at least {least} ps, \
                 or 0 to turn them off",
                thousands(n as u128),
                thousands(sc.duration_ps as u128),
                thousands(MAX_BINS as u128)
            ),
        ));
    }
    Ok(())
}

/// The fastest link of the topology, in bit/s.
fn fastest_link_bps(t: &TopologyConfig) -> u128 {
    let rate = match t {
        TopologyConfig::Star { link, .. } | TopologyConfig::FatTree { link, .. } => link.rate_bps,
        TopologyConfig::Dumbbell { edge_link, bottleneck_link, .. } => edge_link.rate_bps.max(bottleneck_link.rate_bps),
        TopologyConfig::LeafSpine { host_link, fabric_link, .. } => host_link.rate_bps.max(fabric_link.rate_bps),
        TopologyConfig::Explicit { links, .. } => links.iter().map(|l| l.rate_bps).max().unwrap_or(0),
    };
    rate as u128
}

/// Refuses throughput bins whose rows could not be held (module documentation).
fn binned_tables(sc: &Scenario, s: &Shape, flows: u128) -> Result<(), ConfigError> {
    let interval = sc.stats.throughput_interval_ps as u128;
    if interval == 0 {
        return Ok(());
    }
    let duration = sc.duration_ps as u128;
    let bins = duration / interval + 1;
    let frames = duration * fastest_link_bps(&sc.topology) / 1_000_000_000_000 / MIN_WIRE_FRAME_BITS + 1;
    let link_rows = 2 * s.links * bins.min(frames);
    // throughput and carried_flows: a row per (bin, flow) that carried a frame
    let flow_rows = 2 * (bins * flows).min(link_rows);
    let bytes = (link_rows + flow_rows) * BINNED_ROW_BYTES;
    if bytes > MAX_WORLD_BYTES as u128 {
        let fits = bins * MAX_WORLD_BYTES as u128 / bytes.max(1);
        let least = duration.div_ceil(fits.max(1));
        return Err(ConfigError::new(
            "stats.throughput_interval",
            format!(
                "{interval} ps bins over {duration} ps could make about {} rows of the throughput tables ({:.1} GiB \
                 held until the run ends; {} link directions, {} flows); at most {} GiB: use at least {least} ps, \
                 or 0 to turn them off",
                thousands(link_rows + flow_rows),
                bytes as f64 / (1u64 << 30) as f64,
                thousands(2 * s.links),
                thousands(flows),
                MAX_WORLD_BYTES >> 30
            ),
        ));
    }
    Ok(())
}

/// Peak bytes of the routing state while it is built (module documentation).
fn routing_bytes(s: &Shape) -> u128 {
    2 * s.tables * s.classes * 4 + s.nodes * 24
}

/// Checks every limit of the module documentation.
pub(super) fn check(sc: &Scenario) -> Result<(), ConfigError> {
    estimated_world_bytes(sc).map(|_| ())
}

/// The estimated bytes of the world before the first event (module
/// documentation), after checking every limit.
pub fn estimated_world_bytes(sc: &Scenario) -> Result<u64, ConfigError> {
    let s = shape(&sc.topology)?;
    if s.nodes > MAX_NODES as u128 {
        return Err(too_many_nodes("topology", s.nodes));
    }
    let classes = sc.network.classes.clamp(1, 8) as u128;

    // VOQ state grows with the square of a device's port count.
    let mut voq_bytes: u128 = 0;
    let mut input_queue_bytes: u128 = 0;
    for (name, ports) in &s.switches {
        let (cfg, path) = match sc.network.switch_overrides.get(name) {
            Some(c) => (c, format!("network.switch_overrides.{name}.buffer")),
            None => (&sc.network.switch, "network.switch.buffer".to_string()),
        };
        let voq = matches!(cfg.buffer, BufferConfig::Builtin(BuiltinBufferConfig::Voq(_)));
        if !voq && cfg.arbitration.uses_input_queues() {
            // Input arbitration: every egress port and class keeps a sub-queue per input.
            let p = *ports as u128;
            input_queue_bytes += p * (p + 1) * classes * SubQueues::BYTES_PER_INPUT as u128;
        }
        if voq {
            let p = *ports as u128;
            let voqs = p * (p + 1) * classes;
            if voqs > MAX_VOQS as u128 {
                return Err(ConfigError::new(
                    path,
                    format!(
                        "the VOQ model keeps a queue per (ingress port, egress port, class): {name} has {p} ports \
                         and {classes} classes, {} VOQs; at most {} (fewer ports or classes, or another buffer model)",
                        thousands(voqs),
                        thousands(MAX_VOQS as u128)
                    ),
                ));
            }
            voq_bytes += voqs * (size_of::<u64>() + size_of::<VecDeque<(u32, u32)>>()) as u128;
        }
    }

    let mut flows: u128 = 0;
    let mut tcp_flows: u128 = 0;
    for (i, t) in sc.traffic.iter().enumerate() {
        let n = flows_of(t);
        flows += n;
        if matches!(t, TrafficConfig::TcpBulk(_) | TrafficConfig::TcpIncast(_) | TrafficConfig::TcpFlows(_)) {
            tcp_flows += n;
        }
        if flows > MAX_FLOWS as u128 {
            return Err(ConfigError::new(
                format!("traffic[{i}]"),
                format!(
                    "brings the scenario to {} flows; at most {} are supported",
                    thousands(flows),
                    thousands(MAX_FLOWS as u128)
                ),
            ));
        }
    }

    bins(sc, sc.stats.throughput_interval_ps, "throughput_interval", "throughput bins")?;
    binned_tables(sc, &s, flows)?;
    bins(sc, sc.stats.queue_sample_interval_ps, "queue_sample_interval", "queue samples")?;

    let ports = 2 * s.links;
    let per_port = size_of::<Port>() as u128 + classes * 48;
    let world = s.nodes * (size_of::<Node>() as u128 + 16)
        + ports * per_port
        + ports * size_of::<Channel>() as u128
        + routing_bytes(&s)
        + voq_bytes
        + input_queue_bytes
        + flows * size_of::<FlowStats>() as u128
        + tcp_flows * size_of::<TcpFlow>() as u128;
    if world > MAX_WORLD_BYTES as u128 {
        return Err(ConfigError::new(
            "topology",
            format!(
                "the world would take about {:.1} GiB before the first event ({} nodes, {} links, {} flows); \
                 at most {} GiB",
                world as f64 / (1u64 << 30) as f64,
                thousands(s.nodes),
                thousands(s.links),
                thousands(flows),
                MAX_WORLD_BYTES >> 30
            ),
        ));
    }
    Ok(world as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(topology: &str, extra: &str) -> Scenario {
        Scenario::from_json(&format!(r#"{{"duration_ps": 1000000000, "topology": {topology} {extra}}}"#)).unwrap()
    }

    const L: &str = r#"{"rate_bps": 10000000000, "delay_ps": 1000}"#;

    #[test]
    fn throughput_bins_whose_rows_cannot_be_held_are_refused_naming_the_interval() {
        // The quick start's fabric (4 leaves x 8 hosts at 25G, 2 spines at 100G) for 5 ms with a few
        // flows: 500 ps bins are within the bin limit (10^7) but their rows are not.
        let topo = r#"{"kind": "leaf_spine", "leaves": 4, "spines": 2, "hosts_per_leaf": 8,
            "host_link": {"rate_bps": 25000000000, "delay_ps": 1000000},
            "fabric_link": {"rate_bps": 100000000000, "delay_ps": 1000000}}"#;
        let with = |interval: u64| {
            Scenario::from_json(&format!(
                r#"{{"duration_ps": 5000000000, "topology": {topo}, "stats": {{"throughput_interval_ps": {interval}}},
                "traffic": [{{"kind": "tcp_incast", "client": "h0", "servers": ["h8", "h9", "h10", "h11"],
                "response_bytes": 1000, "rounds": 4}}]}}"#
            ))
            .unwrap()
        };
        let e = check(&with(500)).unwrap_err();
        assert_eq!(e.path, "stats.throughput_interval");
        assert!(e.message.contains("GiB held until the run ends") && e.message.contains("use at least"), "{e}");
        check(&with(100_000_000)).unwrap();
        check(&with(1_000_000)).unwrap();
    }

    #[test]
    fn a_billion_hosts_are_refused_before_anything_is_allocated() {
        let sc = scenario(&format!(r#"{{"kind": "star", "hosts": 1000000000, "link": {L}}}"#), "");
        let e = check(&sc).unwrap_err();
        assert_eq!(e.path, "topology.hosts");
        assert!(e.message.contains("gives sw0 1,000,000,000 ports"), "{e}");
        let sc = scenario(
            &format!(
                r#"{{"kind": "leaf_spine", "leaves": 4000, "spines": 4, "hosts_per_leaf": 4000,
                "host_link": {L}, "fabric_link": {L}}}"#
            ),
            "",
        );
        let e = check(&sc).unwrap_err();
        assert_eq!(e.path, "topology.hosts_per_leaf");
        assert!(e.message.contains("16,004,004 nodes"), "{e}");
    }

    #[test]
    fn a_large_fabric_that_fits_is_accepted() {
        // 4,096 leaves of 128 hosts (524,288 hosts, 4,112 switches): routing
        // counted as a 4-byte entry per switch and host would be 8.6 GB alone;
        // the compact tables need 4,112 x 4,096 class entries (67 MB) at most.
        let sc = scenario(
            &format!(
                r#"{{"kind": "leaf_spine", "leaves": 4096, "spines": 16, "hosts_per_leaf": 128,
                "host_link": {L}, "fabric_link": {L}}}"#
            ),
            "",
        );
        let bytes = estimated_world_bytes(&sc).unwrap();
        assert!(bytes < 2 << 30, "{bytes} B");
        // 32,768 leaves are too many: 32,768 destination classes seen from
        // 32,769 switches is 8.6 GB of routing while it is built.
        let sc = scenario(
            &format!(
                r#"{{"kind": "leaf_spine", "leaves": 32768, "spines": 1, "hosts_per_leaf": 30,
                "host_link": {L}, "fabric_link": {L}}}"#
            ),
            "",
        );
        let e = check(&sc).unwrap_err();
        assert!(e.message.contains("the world would take about"), "{e}");
    }

    #[test]
    fn voq_devices_with_too_many_ports_are_refused() {
        let voq = r#", "network": {"switch": {"buffer": {"model": "voq", "total_bytes": 1000000000, "voq_limit_bytes": 1000000}}}"#;
        let ls = |lps: u32| {
            format!(
                r#"{{"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2, "links_per_spine": {lps},
                "host_link": {L}, "fabric_link": {L}}}"#
            )
        };
        let e = check(&scenario(&ls(1000), voq)).unwrap_err();
        assert_eq!(e.path, "network.switch.buffer");
        assert!(e.message.contains("leaf0 has 2002 ports"), "{e}");
        check(&scenario(&ls(100), voq)).unwrap();
    }

    #[test]
    fn too_many_flows_or_bins_are_refused_naming_the_field() {
        let star = format!(r#"{{"kind": "star", "hosts": 3, "link": {L}}}"#);
        let incast = r#", "traffic": [{"kind": "tcp_incast", "client": "h0", "servers": ["h1", "h2"],
            "response_bytes": 1000, "rounds": 4000000000}]"#;
        let e = check(&scenario(&star, incast)).unwrap_err();
        assert_eq!(e.path, "traffic[0]");
        let e = check(&scenario(&star, r#", "stats": {"throughput_interval_ps": 1}"#)).unwrap_err();
        assert_eq!(e.path, "stats.throughput_interval");
        assert!(e.message.contains("1,000,000,000 throughput bins") && e.message.contains("at least 100 ps"), "{e}");
        let e = check(&scenario(&star, r#", "stats": {"queue_sample_interval_ps": 10}"#)).unwrap_err();
        assert_eq!(e.path, "stats.queue_sample_interval");
        check(&scenario(&star, r#", "stats": {"queue_sample_interval_ps": 100}"#)).unwrap();
    }
}
