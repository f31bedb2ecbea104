//! Writing the results: the run's tables and summary, with its conservation
//! and buffer-accounting checks.

use super::*;

impl Simulation {
    /// Packets in queues, in transmission or on wires right now.
    pub fn packets_in_network(&self) -> u64 {
        let queued: usize = self.ports.iter().map(|p| p.queued_packets() + p.in_tx().is_some() as usize).sum();
        let wires: usize = self.channels.iter().map(|c| c.in_flight.len()).sum();
        (queued + wires + self.pipeline.held_packets() + self.host.held_packets() + self.egress.held_packets()) as u64
    }

    /// Runs to the end (if needed) and returns every table and the summary.
    ///
    /// # Panics
    ///
    /// As [`Simulation::run_until`], if the run fails on the way; after
    /// [`Simulation::stop`] it returns the results so far.
    pub fn finish(&mut self) -> RunOutput {
        self.run();
        let in_network = self.packets_in_network();
        let dropped = self.drops.packets;
        let flows_sent: u64 = self.flows.iter().map(|f| f.packets_sent).sum();
        let ports_ok = self
            .ports
            .iter()
            .all(|p| p.enqueued_packets == p.tx_packets + p.queued_packets() as u64 + p.in_tx().is_some() as u64);
        let conservation_ok = self.created_packets + self.mcast.replicated
            == self.delivered_packets + dropped + in_network
            && self.pool.live() as u64 == in_network
            && flows_sent + self.pfc.ctrl_created == self.created_packets
            && ports_ok;
        let mut buffer_in_use = 0u64;
        let mut buffer_ok = true;
        for n in &self.nodes {
            let queued: u64 = (0..n.num_ports).map(|l| self.ports[n.port(l).idx()].total_queued_bytes).sum();
            buffer_in_use += n.buffer.used_bytes();
            buffer_ok &= n.buffer.used_bytes() == queued;
            // The model's own state is back to empty when nothing is queued.
            buffer_ok &= queued != 0 || n.buffer.model_settled();
            // A registered policy's books agree with the ports, port by port.
            if let Some(view) = n.buffer.policy_view() {
                for l in 0..n.num_ports {
                    buffer_ok &= view.port_bytes(l as usize) == self.ports[n.port(l).idx()].total_queued_bytes;
                }
            }
        }
        let completed = self.flows.iter().filter(|f| f.completed()).count();

        let mut s = BTreeMap::new();
        let int = |v: u64| Value::Int(v as i64);
        s.insert("scenario".into(), Value::Str(self.name.clone()));
        s.insert("seed".into(), int(self.seed));
        s.insert("sim_time_ps".into(), int(self.now.0));
        s.insert("sim_time_s".into(), Value::Float(self.now.as_secs_f64()));
        s.insert("duration_s".into(), Value::Float(self.duration.as_secs_f64()));
        s.insert("events".into(), int(self.events));
        s.insert("packets_created".into(), int(self.created_packets));
        s.insert("packets_delivered".into(), int(self.delivered_packets));
        s.insert("packets_dropped".into(), int(dropped));
        s.insert("packets_in_network".into(), int(in_network));
        s.insert("bytes_created".into(), int(self.created_bytes));
        s.insert("bytes_delivered".into(), int(self.delivered_bytes));
        s.insert("bytes_dropped".into(), int(self.drops.bytes));
        s.insert("conservation_ok".into(), Value::Bool(conservation_ok));
        s.insert("buffer_accounting_ok".into(), Value::Bool(buffer_ok));
        s.insert("buffer_bytes_in_use".into(), int(buffer_in_use));
        s.insert("drained".into(), Value::Bool(in_network == 0));
        s.insert("flows_total".into(), int(self.flows.len() as u64));
        s.insert("flows_completed".into(), int(completed as u64));
        s.insert("flows_incomplete".into(), int((self.flows.len() - completed) as u64));
        s.insert("flows_lossy".into(), int(self.flows.iter().filter(|f| f.status() == 1).count() as u64));
        if !self.failures.is_empty() {
            s.insert("link_failures".into(), int(self.failures.downs));
            s.insert("reroutes".into(), int(self.failures.reroutes));
            if self.failures.has_impairments() {
                s.insert("link_impairments".into(), int(self.failures.impairments));
            }
        }
        // Draining was cut short: the time cap (duration + drain_limit) came
        // with events still pending (flows unfinished or packets in flight).
        s.insert("drain_limit_reached".into(), Value::Bool(self.capped && self.end_cap > self.duration));
        s.insert("peak_packets_alive".into(), int(self.pool.capacity_used() as u64));
        s.insert("nodes".into(), int(self.nodes.len() as u64));
        s.insert("links".into(), int(self.channels.len() as u64 / 2));

        let mut tables = BTreeMap::new();
        tables.insert("nodes".to_string(), self.nodes_table());
        tables.insert("flows".to_string(), self.flows_table());
        tables.insert("queues".to_string(), std::mem::take(&mut self.samples).into_table());
        tables.insert("drops".to_string(), self.drops.to_table());
        tables.insert("links".to_string(), self.links_table());
        self.fabric_outputs(&mut tables, &mut s);
        self.pfc_outputs(&mut tables, &mut s);
        self.pipeline_outputs(&mut tables, &mut s);
        self.arbitration_outputs(&mut tables);
        self.multicast_outputs(&mut tables, &mut s);
        self.power_outputs(&mut tables, &mut s);
        self.broadcast_outputs(&mut tables);
        self.roce_summary(&mut s);
        self.host_outputs(&mut tables, &mut s);
        self.egress_outputs(&mut tables, &mut s);
        self.app_outputs(&mut tables, &mut s);
        self.tcp_receiver_outputs(&mut tables);
        self.capture_outputs(&mut tables);
        self.packet_latency_outputs(&mut tables, &mut s);
        self.tcp_trace_outputs(&mut tables, &mut s);
        let throughput = std::mem::take(&mut self.throughput);
        tables.insert("throughput".to_string(), throughput.into_table(&self.flows));
        let ends: Vec<(u32, u32, u32)> = self
            .channels
            .iter()
            .map(|c| (c.from_node.0, self.ports[c.from_port.idx()].local as u32, c.to_node.0))
            .collect();
        tables.insert("carried_links".to_string(), self.carried.links_table(&ends));
        tables.insert("carried_flows".to_string(), self.carried.flows_table(&self.flows));
        tables.insert("latency_hist".to_string(), self.latency_table());
        RunOutput { summary: s, node_names: self.nodes.iter().map(|n| n.name.clone()).collect(), tables }
    }

    pub(super) fn nodes_table(&self) -> Table {
        let mut t = Table::default();
        let n = self.nodes.len() as u32;
        t.push("id", Column::U32((0..n).collect()));
        t.push(
            "name",
            Column::Cat { codes: (0..n).collect(), labels: self.nodes.iter().map(|x| x.name.clone()).collect() },
        );
        t.push(
            "kind",
            Column::Cat {
                codes: (0..n)
                    .map(|i| {
                        if self.is_broadcast(i) {
                            2
                        } else {
                            (self.nodes[i as usize].kind == NodeKind::Switch) as u32
                        }
                    })
                    .collect(),
                labels: vec!["host".into(), "switch".into(), "broadcast".into()],
            },
        );
        t.push("ports", Column::U32(self.nodes.iter().map(|x| x.num_ports as u32).collect()));
        t.push("latency_ps", Column::U64(self.nodes.iter().map(|x| x.latency.0).collect()));
        t
    }

    pub(super) fn flows_table(&self) -> Table {
        let f = &self.flows;
        let mut t = Table::default();
        let opt = |c: bool, v: u64| if c { v as i64 } else { -1 };
        t.push("flow_id", Column::U32((0..f.len() as u32).collect()));
        t.push("name", Column::Cat { codes: f.iter().map(|x| x.name).collect(), labels: self.flow_names.clone() });
        t.push(
            "kind",
            Column::Cat {
                codes: f.iter().map(|x| x.kind.code()).collect(),
                labels: FlowKind::ALL.iter().map(|k| k.name().to_string()).collect(),
            },
        );
        t.push("src", Column::U32(f.iter().map(|x| x.src).collect()));
        t.push("dst", Column::U32(f.iter().map(|x| x.dst).collect()));
        t.push("class", Column::U8(f.iter().map(|x| x.class).collect()));
        t.push("start_ps", Column::U64(f.iter().map(|x| x.start_ps).collect()));
        t.push("end_ps", Column::I64(f.iter().map(|x| opt(x.packets_delivered > 0, x.last_delivery_ps)).collect()));
        t.push("packets_sent", Column::U64(f.iter().map(|x| x.packets_sent).collect()));
        t.push("bytes_sent", Column::U64(f.iter().map(|x| x.bytes_sent).collect()));
        t.push("packets_delivered", Column::U64(f.iter().map(|x| x.packets_delivered).collect()));
        t.push("bytes_delivered", Column::U64(f.iter().map(|x| x.bytes_delivered).collect()));
        t.push("packets_dropped", Column::U64(f.iter().map(|x| x.packets_dropped).collect()));
        t.push("bytes_dropped", Column::U64(f.iter().map(|x| x.bytes_dropped).collect()));
        t.push("completed", Column::Bool(f.iter().map(|x| x.completed()).collect()));
        t.push(
            "status",
            Column::Cat {
                codes: f.iter().map(|x| x.status()).collect(),
                labels: crate::stats::FLOW_STATUS.iter().map(|s| s.to_string()).collect(),
            },
        );
        t.push(
            "loss_ratio",
            Column::F64(
                f.iter()
                    .map(|x| if x.packets_sent > 0 { x.packets_dropped as f64 / x.packets_sent as f64 } else { 0.0 })
                    .collect(),
            ),
        );
        t.push("fct_ps", Column::I64(f.iter().map(|x| x.fct_ps().map_or(-1, |v| v as i64)).collect()));
        t.push("reordered_packets", Column::U64(f.iter().map(|x| x.reorder.packets).collect()));
        t.push(
            "reorder_distance_max",
            Column::I64(f.iter().map(|x| opt(x.reorder.packets > 0, x.reorder.distance_max as u64)).collect()),
        );
        t.push(
            "reorder_distance_mean",
            Column::F64(
                f.iter()
                    .map(|x| {
                        let r = &x.reorder;
                        if r.packets > 0 {
                            r.distance_sum as f64 / r.packets as f64
                        } else {
                            f64::NAN
                        }
                    })
                    .collect(),
            ),
        );
        t.push(
            "latency_mean_ps",
            Column::F64(
                f.iter()
                    .map(|x| {
                        let n = x.latency.total();
                        if n > 0 {
                            x.latency_sum_ps as f64 / n as f64
                        } else {
                            f64::NAN
                        }
                    })
                    .collect(),
            ),
        );
        t.push("latency_min_ps", Column::I64(f.iter().map(|x| x.latency.min().map_or(-1, |v| v as i64)).collect()));
        for (name, q) in [("latency_p50_ps", 0.5), ("latency_p99_ps", 0.99), ("latency_p999_ps", 0.999)] {
            t.push(name, Column::I64(f.iter().map(|x| x.latency.quantile(q).map_or(-1, |v| v as i64)).collect()));
        }
        t.push("latency_max_ps", Column::I64(f.iter().map(|x| x.latency.max().map_or(-1, |v| v as i64)).collect()));
        self.tcp_flow_columns(&mut t);
        self.roce_flow_columns(&mut t);
        t
    }

    /// Per flow, the non-empty buckets of its one-way latency histogram
    /// (see `histogram.rs`): `[low_ps, high_ps)` and the packets in it.
    pub(super) fn latency_table(&self) -> Table {
        let mut rows: Vec<(u32, u8, u64, u64, u64)> = Vec::new();
        for (i, f) in self.flows.iter().enumerate() {
            rows.extend(f.latency.buckets().map(|(lo, hi, n)| (i as u32, f.class, lo, hi, n)));
        }
        let mut t = Table::default();
        t.push("flow_id", Column::U32(rows.iter().map(|r| r.0).collect()));
        t.push("class", Column::U8(rows.iter().map(|r| r.1).collect()));
        t.push("low_ps", Column::U64(rows.iter().map(|r| r.2).collect()));
        t.push("high_ps", Column::U64(rows.iter().map(|r| r.3).collect()));
        t.push("packets", Column::U64(rows.iter().map(|r| r.4).collect()));
        t
    }

    pub(super) fn links_table(&self) -> Table {
        let c = &self.channels;
        let p = |ch: &Channel| &self.ports[ch.from_port.idx()];
        let span = self.now.0.max(1) as f64;
        let mut t = Table::default();
        t.push("link", Column::U32(c.iter().map(|x| x.link).collect()));
        t.push("src", Column::U32(c.iter().map(|x| x.from_node.0).collect()));
        t.push("src_port", Column::U32(c.iter().map(|x| p(x).local as u32).collect()));
        t.push("dst", Column::U32(c.iter().map(|x| x.to_node.0).collect()));
        t.push("dst_port", Column::U32(c.iter().map(|x| x.to_port_local as u32).collect()));
        // A wire's own rate, also when an impairment holds at the end.
        let nominal: Vec<Rate> = (0..c.len()).map(|i| self.failures.nominal_rate(i).unwrap_or(c[i].rate)).collect();
        t.push("rate_bps", Column::U64(nominal.iter().map(|r| r.0).collect()));
        t.push("delay_ps", Column::U64(c.iter().map(|x| x.delay.0).collect()));
        t.push("packets", Column::U64(c.iter().map(|x| p(x).tx_packets).collect()));
        t.push("bytes", Column::U64(c.iter().map(|x| p(x).tx_bytes).collect()));
        t.push(
            "utilization",
            Column::F64(
                c.iter()
                    .zip(&nominal)
                    .map(|(x, rate)| {
                        let port = p(x);
                        let busy = rate.serialization_time(port.tx_bytes + port.tx_packets * self.overhead).0 as f64;
                        busy / span
                    })
                    .collect(),
            ),
        );
        t.push(
            "queue_delay_mean_ps",
            Column::F64(
                c.iter()
                    .map(|x| {
                        let port = p(x);
                        let started = port.tx_packets + port.in_tx().is_some() as u64;
                        if started > 0 {
                            port.queue_delay_sum_ps as f64 / started as f64
                        } else {
                            0.0
                        }
                    })
                    .collect(),
            ),
        );
        t.push("queue_high_water_bytes", Column::U64(c.iter().map(|x| p(x).high_water_bytes).collect()));
        t.push("dropped_packets", Column::U64(c.iter().map(|x| p(x).dropped_packets).collect()));
        t
    }
}
