//! Shared buffer with dynamic thresholds (Choudhury & Hahne, 1998), as in
//! Broadcom-style MMUs.
//!
//! The buffer is counted in cells: a packet of `L` bytes takes
//! `ceil((L + per_packet_overhead) / cell)` cells. Each (egress port, class)
//! queue first uses its reserved minimum; cells beyond it come from the class's
//! service pool. A queue may take shared cells only while its shared occupancy
//! plus the packet stays within `alpha[class] * (pool size - pool shared used)`.
//! Optionally the same rule limits each (ingress port, priority group = class)
//! with its own alpha. A packet is admitted only if both stages accept it.
//!
//! Alpha is a power of two from 1/128 to 8 (the hardware ladder) and is held as
//! its exponent, so every threshold test is exact integer arithmetic.
//!
//! Shared occupancy is derived rather than tracked per packet: a queue holding
//! `u` cells uses `max(0, u - reserved)` shared cells, so a release needs only
//! the packet's size, class and ports.
//!
//! Besides the per-queue egress minimum, a device may set aside
//! [`Reservations`]: a minimum per ingress priority group (classes map to
//! priority groups with `class_pg`), headroom per ingress port (by port speed;
//! reserved whether it is used or not) and a fixed amount for the device's own
//! queues that the model does not carry (CPU, loopback, multicast,
//! replication). All of them are taken out of the shared pool.

use super::{AdmitRequest, Verdict};
use crate::error::ConfigError;
use crate::stats::DropReason;
use serde::{Deserialize, Serialize};

/// Resolved `buffer` of `model: shared`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SharedBufferConfig {
    /// Whole buffer of the device, reserved minimums included.
    pub total_bytes: u64,
    #[serde(default = "default_cell_bytes")]
    pub cell_bytes: u32,
    #[serde(default)]
    pub per_packet_overhead_bytes: u32,
    /// Egress alpha: one value for every class, or one per class.
    #[serde(default = "default_alpha")]
    pub alpha: Vec<f64>,
    #[serde(default)]
    pub reserved_bytes_per_queue: u64,
    /// Ingress (priority group) alpha; `None` leaves ingress unlimited.
    #[serde(default)]
    pub ingress_alpha: Option<Vec<f64>>,
    /// Shared service pool sizes; `None` gives one pool holding all shared cells.
    #[serde(default)]
    pub pools: Option<Vec<u64>>,
    /// Service pool of each class; `None` maps every class to pool 0.
    #[serde(default)]
    pub class_pool: Option<Vec<u8>>,
    /// Buffer slices, each with its own share of the pools (1 = one buffer).
    #[serde(default = "default_one")]
    pub slices: u32,
    /// Slice of each egress port; `None` splits the ports into equal blocks.
    #[serde(default)]
    pub port_slice: Option<Vec<u8>>,
    /// Guaranteed bytes per ingress priority group.
    #[serde(default)]
    pub pg_min_bytes: u64,
    /// Priority group of each class (one value: every class); `None`: the group is the class.
    #[serde(default)]
    pub class_pg: Option<Vec<u8>>,
    /// Headroom set aside per ingress port, by speed: `[up to rate_bps, bytes]`.
    #[serde(default)]
    pub headroom_per_port: Vec<[u64; 2]>,
    /// Bytes set aside for the device's own queues (CPU, loopback, multicast).
    #[serde(default)]
    pub reserved_fixed_bytes: u64,
}

fn default_cell_bytes() -> u32 {
    256
}
fn default_alpha() -> Vec<f64> {
    vec![1.0]
}
fn default_one() -> u32 {
    1
}

impl SharedBufferConfig {
    /// The checked parameters for a device with ports of rates `port_rates` (bit/s)
    /// and `classes` classes.
    pub fn params(&self, port_rates: &[u64], classes: usize, path: &str) -> Result<SharedParams, ConfigError> {
        let ports = port_rates.len();
        let reserve = Reservations {
            pg_min_bytes: self.pg_min_bytes,
            class_pg: self.class_pg.clone(),
            port_headroom: self.headroom_per_port.iter().map(|&[r, b]| (r, b)).collect(),
            fixed_bytes: self.reserved_fixed_bytes,
        };
        SharedParams::from_config(
            self.total_bytes,
            self.cell_bytes,
            self.per_packet_overhead_bytes,
            &self.alpha,
            self.reserved_bytes_per_queue,
            self.ingress_alpha.as_deref(),
            self.pools.as_deref(),
            self.class_pool.as_deref(),
            ports,
            classes,
            path,
        )?
        .with_reservations(&reserve, port_rates, path)?
        .with_slices(self.slices, self.port_slice.as_deref(), ports, path)
    }
}

/// The alpha values the hardware offers: 2^-7 ..= 2^3.
pub const ALPHA_LADDER: [f64; 11] =
    [1.0 / 128.0, 1.0 / 64.0, 1.0 / 32.0, 1.0 / 16.0, 1.0 / 8.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0];

/// Exponent of a ladder alpha (`alpha = 2^k`), or `None` off the ladder.
pub fn alpha_exponent(alpha: f64) -> Option<i8> {
    ALPHA_LADDER.iter().position(|&a| a == alpha).map(|i| i as i8 - 7)
}

fn ladder_text() -> String {
    "1/128, 1/64, 1/32, 1/16, 1/8, 1/4, 1/2, 1, 2, 4, 8".to_string()
}

/// `lhs <= 2^k * free`, exactly.
#[inline]
fn within(lhs: u64, k: i8, free: u64) -> bool {
    if k >= 0 {
        lhs <= free << k
    } else {
        lhs << (-k) <= free
    }
}

/// Validated parameters of a shared buffer, in cells.
#[derive(Clone, Debug, PartialEq)]
pub struct SharedParams {
    /// Whole buffer in cells.
    pub total_cells: u64,
    pub cell_bytes: u32,
    pub overhead_bytes: u32,
    /// Egress alpha exponent per class.
    pub alpha: Vec<i8>,
    /// Ingress alpha exponent per class (priority group), if ingress is limited.
    pub ingress_alpha: Option<Vec<i8>>,
    pub reserved_cells: u64,
    /// Shared cells of each service pool.
    pub pool_cells: Vec<u64>,
    /// Pool of each class.
    pub class_pool: Vec<u8>,
    /// Buffer slices (for chips whose buffer is split per pipe); every slice
    /// has its own copy of the pools, each `1 / slices` of the size.
    pub slices: u32,
    /// Slice of each egress port.
    pub port_slice: Vec<u8>,
    /// Priority group of each class (ingress accounting).
    pub class_pg: Vec<u8>,
    /// Guaranteed cells per ingress priority group.
    pub pg_min_cells: u64,
    /// Headroom cells set aside per ingress port.
    pub headroom_cells: Vec<u64>,
    /// Cells set aside for the device's own queues.
    pub fixed_cells: u64,
}

/// What a device sets aside besides the per-queue egress minimum.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reservations {
    /// Guaranteed bytes per ingress priority group (all groups in use).
    pub pg_min_bytes: u64,
    /// Priority group of each class (one value: every class); `None`: the group is the class.
    pub class_pg: Option<Vec<u8>>,
    /// Headroom per ingress port by port speed: `(up to this rate in bit/s,
    /// bytes)`, increasing rates; a port faster than every entry takes the last.
    pub port_headroom: Vec<(u64, u64)>,
    /// Bytes set aside for queues the model does not carry (CPU, loopback, multicast).
    pub fixed_bytes: u64,
}

impl Reservations {
    /// Headroom bytes of a port of `rate_bps`.
    pub fn headroom_bytes(&self, rate_bps: u64) -> u64 {
        match self.port_headroom.iter().find(|&&(up_to, _)| rate_bps <= up_to) {
            Some(&(_, b)) => b,
            None => self.port_headroom.last().map_or(0, |&(_, b)| b),
        }
    }
}

impl SharedParams {
    /// Checks the resolved configuration of a device with `ports` ports and
    /// `classes` classes; `path` names the buffer section in errors.
    #[allow(clippy::too_many_arguments)]
    pub fn from_config(
        total_bytes: u64,
        cell_bytes: u32,
        per_packet_overhead_bytes: u32,
        alpha: &[f64],
        reserved_bytes_per_queue: u64,
        ingress_alpha: Option<&[f64]>,
        pools: Option<&[u64]>,
        class_pool: Option<&[u8]>,
        ports: usize,
        classes: usize,
        path: &str,
    ) -> Result<SharedParams, ConfigError> {
        let err = |field: &str, msg: String| ConfigError::new(format!("{path}.{field}"), msg);
        if cell_bytes == 0 {
            return Err(err("cell", "must be > 0".into()));
        }
        if total_bytes == 0 {
            return Err(err("size", "must be > 0".into()));
        }
        let cell = cell_bytes as u64;
        let per_class = |field: &str, values: &[f64]| -> Result<Vec<i8>, ConfigError> {
            if values.len() != 1 && values.len() != classes {
                return Err(err(
                    field,
                    format!("expected 1 or {classes} values (one per class), got {}", values.len()),
                ));
            }
            let mut out = Vec::with_capacity(classes);
            for c in 0..classes {
                let a = if values.len() == 1 { values[0] } else { values[c] };
                match alpha_exponent(a) {
                    Some(k) => out.push(k),
                    None => return Err(err(field, format!("{a} is not an allowed alpha; allowed: {}", ladder_text()))),
                }
            }
            Ok(out)
        };
        let alpha = per_class("alpha", alpha)?;
        let ingress_alpha = match ingress_alpha {
            Some(v) => Some(per_class("ingress_alpha", v)?),
            None => None,
        };
        let total_cells = total_bytes / cell;
        let reserved_cells = reserved_bytes_per_queue.div_ceil(cell);
        let reserved_total = reserved_cells * (ports * classes) as u64;
        if reserved_total >= total_cells {
            return Err(err(
                "reserved_per_queue",
                format!(
                    "{ports} ports x {classes} classes reserve {reserved_total} cells, \
                     leaving no shared cells of the {total_cells} in the buffer"
                ),
            ));
        }
        let shared_cells = total_cells - reserved_total;
        let pool_cells: Vec<u64> = match pools {
            None => vec![shared_cells],
            Some(p) => {
                if p.is_empty() || p.len() > 8 {
                    return Err(err("pools", format!("expected 1 to 8 pools, got {}", p.len())));
                }
                let cells: Vec<u64> = p.iter().map(|b| b / cell).collect();
                if let Some(i) = cells.iter().position(|&c| c == 0) {
                    return Err(err(
                        &format!("pools[{i}]"),
                        format!("must hold at least one cell of {cell_bytes} bytes"),
                    ));
                }
                let sum: u64 = cells.iter().sum();
                if sum > shared_cells {
                    return Err(err(
                        "pools",
                        format!(
                            "pools need {sum} cells but only {shared_cells} of {total_cells} \
                             are left after the reserved minimums"
                        ),
                    ));
                }
                cells
            }
        };
        let class_pool: Vec<u8> = match class_pool {
            None => vec![0; classes],
            Some(m) => {
                if m.len() != classes {
                    return Err(err(
                        "class_pool",
                        format!("expected {classes} entries (one per class), got {}", m.len()),
                    ));
                }
                if let Some(i) = m.iter().position(|&x| x as usize >= pool_cells.len()) {
                    return Err(err(
                        &format!("class_pool[{i}]"),
                        format!("pool {} does not exist (pools are 0..{})", m[i], pool_cells.len() - 1),
                    ));
                }
                m.to_vec()
            }
        };
        Ok(SharedParams {
            total_cells,
            cell_bytes,
            overhead_bytes: per_packet_overhead_bytes,
            alpha,
            ingress_alpha,
            reserved_cells,
            pool_cells,
            class_pool,
            slices: 1,
            port_slice: vec![0; ports],
            class_pg: (0..classes as u8).collect(),
            pg_min_cells: 0,
            headroom_cells: vec![0; ports],
            fixed_cells: 0,
        })
    }

    /// Sets aside the device's [`Reservations`] (ingress PG minimums, port
    /// headroom by the speed of each port in `port_rates`, fixed cells) out of
    /// the shared pool. Call before [`SharedParams::with_slices`].
    pub fn with_reservations(
        mut self,
        r: &Reservations,
        port_rates: &[u64],
        path: &str,
    ) -> Result<SharedParams, ConfigError> {
        let err = |field: &str, msg: String| ConfigError::new(format!("{path}.{field}"), msg);
        let classes = self.class_pg.len();
        let cell = self.cell_bytes as u64;
        if let Some(m) = &r.class_pg {
            if m.len() != 1 && m.len() != classes {
                return Err(err(
                    "class_pg",
                    format!("expected 1 or {classes} entries (one per class), got {}", m.len()),
                ));
            }
            if let Some(i) = m.iter().position(|&g| g > 7) {
                return Err(err(&format!("class_pg[{i}]"), format!("priority groups are 0..7 (got {})", m[i])));
            }
            self.class_pg = if m.len() == 1 { vec![m[0]; classes] } else { m.clone() };
        }
        if r.port_headroom.windows(2).any(|w| w[0].0 >= w[1].0) {
            return Err(err("headroom_per_port", "speeds must be increasing".into()));
        }
        let ports = port_rates.len();
        let mut groups: Vec<u8> = self.class_pg.clone();
        groups.sort_unstable();
        groups.dedup();
        self.pg_min_cells = r.pg_min_bytes.div_ceil(cell);
        self.headroom_cells = port_rates.iter().map(|&rate| r.headroom_bytes(rate).div_ceil(cell)).collect();
        self.fixed_cells = r.fixed_bytes.div_ceil(cell);
        let extra = self.pg_min_cells * (ports * groups.len()) as u64
            + self.headroom_cells.iter().sum::<u64>()
            + self.fixed_cells;
        if extra == 0 {
            return Ok(self);
        }
        let pooled: u64 = self.pool_cells.iter().sum();
        if self.pool_cells.len() == 1 {
            if extra >= pooled {
                return Err(err(
                    "size",
                    format!(
                        "the reservations (PG minimums, port headroom, fixed) need {extra} cells but only \
                         {pooled} are left after the per-queue minimums"
                    ),
                ));
            }
            self.pool_cells[0] -= extra;
        } else {
            let reserved_q = self.reserved_cells * (ports * classes) as u64;
            let total = self.pool_cells_budget(reserved_q);
            if pooled + extra > total {
                return Err(err(
                    "pools",
                    format!(
                        "pools need {pooled} cells but only {} are left after the minimums, headroom \
                         and fixed reservations",
                        total.saturating_sub(extra)
                    ),
                ));
            }
        }
        Ok(self)
    }

    /// Cells available to pools and the reservations beyond the per-queue minimum.
    fn pool_cells_budget(&self, reserved_q: u64) -> u64 {
        self.total_cells.saturating_sub(reserved_q)
    }

    /// Cells set aside in all (per-queue minimums of `ports` x classes, PG
    /// minimums, headroom, fixed).
    pub fn reserved_total_cells(&self, ports: usize) -> u64 {
        let mut groups: Vec<u8> = self.class_pg.clone();
        groups.sort_unstable();
        groups.dedup();
        self.reserved_cells * (ports * self.class_pg.len()) as u64
            + self.pg_min_cells * (ports * groups.len()) as u64
            + self.headroom_cells.iter().sum::<u64>()
            + self.fixed_cells
    }

    /// Splits the shared pools into `slices` equal slices, each serving the
    /// egress ports mapped to it (`port_slice`, or contiguous equal blocks).
    pub fn with_slices(
        mut self,
        slices: u32,
        port_slice: Option<&[u8]>,
        ports: usize,
        path: &str,
    ) -> Result<SharedParams, ConfigError> {
        let err = |field: &str, msg: String| ConfigError::new(format!("{path}.{field}"), msg);
        if slices == 0 || slices > 16 {
            return Err(err("slices", format!("must be between 1 and 16 (got {slices})")));
        }
        self.port_slice = match port_slice {
            Some(m) => {
                if m.len() != ports {
                    return Err(err("port_slice", format!("expected {ports} entries (one per port), got {}", m.len())));
                }
                if let Some(i) = m.iter().position(|&s| s as u32 >= slices) {
                    return Err(err(
                        &format!("port_slice[{i}]"),
                        format!("slice {} does not exist (0..{})", m[i], slices - 1),
                    ));
                }
                m.to_vec()
            }
            None => (0..ports).map(|p| (p * slices as usize / ports.max(1)) as u8).collect(),
        };
        if slices > 1 {
            for (i, c) in self.pool_cells.iter_mut().enumerate() {
                *c /= slices as u64;
                if *c == 0 {
                    return Err(err(&format!("pools[{i}]"), format!("too small to split into {slices} slices")));
                }
            }
        }
        self.slices = slices;
        Ok(self)
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct Pool {
    size: u64,
    used: u64,
}

#[derive(Clone, Debug)]
pub struct SharedBuffer {
    classes: usize,
    cell: u32,
    overhead: u32,
    reserved: u64,
    alpha: [i8; 8],
    ingress_alpha: Option<[i8; 8]>,
    class_pool: [u8; 8],
    /// Pools of every slice: pool `k` of slice `s` is `pools[s * pools_per_slice + k]`.
    pools: Vec<Pool>,
    pools_per_slice: usize,
    port_slice: Vec<u8>,
    /// Cells held by each (egress port, class) queue, reserved part included.
    queue_cells: Vec<u64>,
    /// Cells held by each (ingress port, priority group), 8 groups per port.
    pg_cells: Vec<u64>,
    /// Priority group of each class and the guaranteed cells of a group.
    class_pg: [u8; 8],
    pg_min: u64,
    /// Port headroom set aside (cells, all ports); PFC headroom comes out of it first.
    headroom_reserved: u64,
    /// Cells set aside in all (minimums, headroom, fixed).
    reserved_total: u64,
    /// Cells held now and at most.
    cells_used: u64,
    high_water_cells: u64,
    total_cells: u64,
    /// PFC ingress accounting of lossless classes (see `buffer/pfc.rs`).
    pub pfc: Option<Box<super::pfc::PfcIngress>>,
}

impl SharedBuffer {
    pub fn new(ports: usize, classes: usize, p: &SharedParams) -> Self {
        let mut alpha = [0i8; 8];
        alpha[..classes].copy_from_slice(&p.alpha);
        let ingress_alpha = p.ingress_alpha.as_ref().map(|v| {
            let mut a = [0i8; 8];
            a[..classes].copy_from_slice(v);
            a
        });
        let mut class_pool = [0u8; 8];
        class_pool[..classes].copy_from_slice(&p.class_pool);
        let mut class_pg = [0u8; 8];
        class_pg[..classes].copy_from_slice(&p.class_pg);
        let reserved_total = p.reserved_total_cells(ports);
        SharedBuffer {
            classes,
            cell: p.cell_bytes,
            overhead: p.overhead_bytes,
            reserved: p.reserved_cells,
            alpha,
            ingress_alpha,
            class_pool,
            pools: (0..p.slices).flat_map(|_| p.pool_cells.iter().map(|&size| Pool { size, used: 0 })).collect(),
            pools_per_slice: p.pool_cells.len(),
            port_slice: p.port_slice.clone(),
            queue_cells: vec![0; ports * classes],
            pg_cells: if p.ingress_alpha.is_some() { vec![0; ports * 8] } else { Vec::new() },
            class_pg,
            pg_min: p.pg_min_cells,
            headroom_reserved: p.headroom_cells.iter().sum(),
            reserved_total,
            cells_used: 0,
            high_water_cells: 0,
            total_cells: p.pool_cells.iter().sum::<u64>() * p.slices as u64 + reserved_total,
            pfc: None,
        }
    }

    /// Turns on PFC; its headroom comes out of the port headroom the device
    /// sets aside, and what that does not cover out of the lossless classes' pool.
    pub fn enable_pfc(&mut self, pfc: super::pfc::PfcIngress) -> Result<(), String> {
        if self.pools.len() != self.pools_per_slice {
            return Err("PFC is not supported together with per-slice pools (slices > 1)".into());
        }
        let pools: Vec<usize> =
            (0..self.classes).filter(|&c| pfc.is_lossless(c as u8)).map(|c| self.class_pool[c] as usize).collect();
        if pools.windows(2).any(|w| w[0] != w[1]) {
            return Err("lossless classes must share one service pool".into());
        }
        let need = pfc.reserved_cells().saturating_sub(self.headroom_reserved);
        let pool = &mut self.pools[pools[0]];
        if need >= pool.size {
            return Err(format!("headroom needs {need} cells but the pool has only {}", pool.size));
        }
        pool.size -= need;
        self.reserved_total += need;
        self.pfc = Some(Box::new(pfc));
        Ok(())
    }

    /// Cells a frame of `bytes` occupies.
    /// The pool a (egress port, class) queue draws from.
    #[inline]
    fn pool_of(&self, out_port: u16, class: usize) -> usize {
        self.port_slice[out_port as usize] as usize * self.pools_per_slice + self.class_pool[class] as usize
    }

    #[inline]
    pub fn cells(&self, bytes: u32) -> u64 {
        (bytes as u64 + self.overhead as u64).div_ceil(self.cell as u64)
    }

    #[inline(always)]
    pub fn admit(&mut self, r: &AdmitRequest) -> Verdict {
        let c = self.cells(r.bytes);
        let class = r.class as usize;
        let q = r.out_port as usize * self.classes + class;
        let pool_idx = self.pool_of(r.out_port, class);
        if let (Some(pfc), Some(in_port)) = (self.pfc.as_mut(), r.in_port) {
            if pfc.is_lossless(r.class) {
                let pool = &mut self.pools[pool_idx];
                if let Err(reason) = pfc.admit(in_port, r.class, c, &mut pool.used, pool.size) {
                    return Verdict::Drop(reason);
                }
                self.queue_cells[q] += c;
                self.charge(c);
                return Verdict::Admit;
            }
        }
        let pool = self.pools[pool_idx];
        let used = self.queue_cells[q];
        let shared_now = used.saturating_sub(self.reserved);
        let shared_after = (used + c).saturating_sub(self.reserved);
        let need = shared_after - shared_now;
        let free = pool.size - pool.used;
        if need > free {
            return Verdict::Drop(DropReason::PoolExhausted);
        }
        let mut pg = usize::MAX;
        if let (Some(ia), Some(in_port)) = (self.ingress_alpha, r.in_port) {
            pg = in_port as usize * 8 + self.class_pg[class] as usize;
            // Cells within the group's guaranteed minimum pass the ingress threshold.
            let pg_shared_after = (self.pg_cells[pg] + c).saturating_sub(self.pg_min);
            if pg_shared_after > 0 && !within(pg_shared_after, ia[class], free) {
                return Verdict::Drop(DropReason::IngressThreshold);
            }
        }
        if need > 0 && !within(shared_after, self.alpha[class], free) {
            return Verdict::Drop(DropReason::DynamicThreshold);
        }
        self.queue_cells[q] = used + c;
        self.pools[pool_idx].used += need;
        if pg != usize::MAX {
            self.pg_cells[pg] += c;
        }
        self.charge(c);
        Verdict::Admit
    }

    #[inline(always)]
    pub fn release(&mut self, r: &AdmitRequest) {
        let c = self.cells(r.bytes);
        let class = r.class as usize;
        let q = r.out_port as usize * self.classes + class;
        if let (Some(pfc), Some(in_port)) = (self.pfc.as_mut(), r.in_port) {
            if pfc.is_lossless(r.class) {
                let pool = &mut self.pools[self.class_pool[class] as usize];
                pfc.release(in_port, r.class, c, &mut pool.used, pool.size);
                self.queue_cells[q] -= c;
                self.cells_used -= c;
                return;
            }
        }
        let used = self.queue_cells[q];
        let freed = used.saturating_sub(self.reserved) - (used - c).saturating_sub(self.reserved);
        self.queue_cells[q] = used - c;
        let pool_idx = self.pool_of(r.out_port, class);
        self.pools[pool_idx].used -= freed;
        if let (Some(_), Some(in_port)) = (self.ingress_alpha, r.in_port) {
            self.pg_cells[in_port as usize * 8 + self.class_pg[class] as usize] -= c;
        }
        self.cells_used -= c;
    }

    #[inline]
    fn charge(&mut self, cells: u64) {
        self.cells_used += cells;
        self.high_water_cells = self.high_water_cells.max(self.cells_used);
    }

    /// The most cells held at once.
    pub fn high_water_cells(&self) -> u64 {
        self.high_water_cells
    }

    /// Whole buffer in cells.
    pub fn capacity_cells(&self) -> u64 {
        self.total_cells
    }

    /// Cells set aside: per-queue and per-group minimums, port and PFC headroom, fixed.
    pub fn reserved_cells_total(&self) -> u64 {
        self.reserved_total
    }

    /// Whether every cell is back: no queue, group or pool holds any.
    pub fn settled(&self) -> bool {
        self.cells_used == 0
            && self.queue_cells.iter().all(|&c| c == 0)
            && self.pg_cells.iter().all(|&c| c == 0)
            && self.pools.iter().all(|p| p.used == 0)
    }

    /// Cells currently held, reserved and shared.
    pub fn used_cells(&self) -> u64 {
        debug_assert_eq!(self.cells_used, self.queue_cells.iter().sum::<u64>());
        self.cells_used
    }

    /// Whole buffer in bytes (reserved cells included).
    pub fn capacity_bytes(&self) -> u64 {
        self.total_cells * self.cell as u64
    }

    /// Shared occupancy of each pool in bytes (cells x cell size).
    pub fn pool_bytes(&self) -> Vec<u64> {
        self.pools.iter().map(|p| p.used * self.cell as u64).collect()
    }

    /// Cell size in bytes.
    pub fn cell_bytes(&self) -> u32 {
        self.cell
    }

    /// Shared cells in use in pool `i`.
    pub fn pool_used_cells(&self, i: usize) -> u64 {
        self.pools[i].used
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(total: u64, alpha: &[f64], ports: usize, classes: usize) -> SharedParams {
        SharedParams::from_config(total, 100, 0, alpha, 0, None, None, None, ports, classes, "b").unwrap()
    }

    fn req(in_port: Option<u16>, port: u16, class: u8, bytes: u32) -> AdmitRequest {
        AdmitRequest {
            in_port,
            out_port: port,
            class,
            bytes,
            flow: 0,
            now: crate::units::SimTime::ZERO,
            ecn: 0,
            queued: Default::default(),
        }
    }

    #[test]
    fn alpha_ladder_exponents() {
        assert_eq!(alpha_exponent(1.0), Some(0));
        assert_eq!(alpha_exponent(8.0), Some(3));
        assert_eq!(alpha_exponent(0.0078125), Some(-7));
        assert_eq!(alpha_exponent(3.0), None);
        assert_eq!(alpha_exponent(16.0), None);
        assert!(within(8, -3, 64) && !within(9, -3, 64));
        assert!(within(16, 1, 8) && !within(17, 1, 8));
    }

    #[test]
    fn cells_round_up_and_include_overhead() {
        let p = SharedParams::from_config(10_000, 256, 64, &[1.0], 0, None, None, None, 1, 1, "b").unwrap();
        let b = SharedBuffer::new(1, 1, &p);
        assert_eq!(b.cells(64), 1); // 128 B
        assert_eq!(b.cells(192), 1); // 256 B exactly
        assert_eq!(b.cells(193), 2);
        assert_eq!(b.cells(1500), 7); // 1564 B
    }

    #[test]
    fn one_queue_with_alpha_one_stops_at_half_the_pool() {
        // 100 cells of 100 B; each packet is one cell. Admit while q + 1 <= free.
        let mut b = SharedBuffer::new(2, 1, &params(10_000, &[1.0], 2, 1));
        let mut n = 0;
        while b.admit(&req(None, 0, 0, 100)) == Verdict::Admit {
            n += 1;
        }
        // q + 1 <= 100 - q  =>  q <= 49.5: 50 cells admitted (q = 49 before the last).
        assert_eq!(n, 50);
        assert_eq!(b.admit(&req(None, 0, 0, 100)), Verdict::Drop(DropReason::DynamicThreshold));
        // A second queue sees a smaller threshold: q + 1 <= 50 - q.
        let mut m = 0;
        while b.admit(&req(None, 1, 0, 100)) == Verdict::Admit {
            m += 1;
        }
        assert_eq!(m, 25);
        assert_eq!(b.used_cells(), 75);
        assert_eq!(b.pool_used_cells(0), 75);
        for _ in 0..50 {
            b.release(&req(None, 0, 0, 100));
        }
        for _ in 0..25 {
            b.release(&req(None, 1, 0, 100));
        }
        assert_eq!((b.used_cells(), b.pool_used_cells(0)), (0, 0));
        assert!(b.settled());
    }

    #[test]
    fn large_alpha_runs_into_the_pool_limit() {
        let mut b = SharedBuffer::new(1, 1, &params(1_000, &[8.0], 1, 1));
        // 10 cells: 9 <= 8 * 10 admits; then a 2-cell packet finds 1 free cell.
        assert_eq!(b.admit(&req(None, 0, 0, 900)), Verdict::Admit);
        assert_eq!(b.admit(&req(None, 0, 0, 200)), Verdict::Drop(DropReason::PoolExhausted));
        // The last cell would fit, but 10 <= 8 * 1 does not hold.
        assert_eq!(b.admit(&req(None, 0, 0, 100)), Verdict::Drop(DropReason::DynamicThreshold));
    }

    #[test]
    fn reserved_cells_are_used_first_and_bypass_the_threshold() {
        // 4 queues reserve 2 cells each out of 20: 12 shared cells.
        let p = SharedParams::from_config(2_000, 100, 0, &[0.125], 200, None, None, None, 2, 2, "b").unwrap();
        assert_eq!(p.pool_cells, vec![12]);
        let mut b = SharedBuffer::new(2, 2, &p);
        assert_eq!(b.admit(&req(None, 0, 0, 200)), Verdict::Admit);
        assert_eq!(b.pool_used_cells(0), 0);
        // Shared: 1 <= 12/8 holds, 2 <= 11/8 does not.
        assert_eq!(b.admit(&req(None, 0, 0, 100)), Verdict::Admit);
        assert_eq!(b.admit(&req(None, 0, 0, 100)), Verdict::Drop(DropReason::DynamicThreshold));
        assert_eq!(b.pool_used_cells(0), 1);
        // Release frees shared cells before reserved ones.
        b.release(&req(None, 0, 0, 100));
        assert_eq!(b.pool_used_cells(0), 0);
        assert_eq!(b.used_cells(), 2);
    }

    #[test]
    fn ingress_priority_groups_are_limited_independently() {
        let p = SharedParams::from_config(10_000, 100, 0, &[8.0], 0, Some(&[0.25]), None, None, 3, 1, "b").unwrap();
        let mut b = SharedBuffer::new(3, 1, &p);
        let mut n = 0;
        while b.admit(&req(Some(1), 0, 0, 100)) == Verdict::Admit {
            n += 1;
        }
        // PG: 4 (pg + 1) <= 100 - pg  =>  pg <= 19.2: 20 cells.
        assert_eq!(n, 20);
        assert_eq!(b.admit(&req(Some(1), 0, 0, 100)), Verdict::Drop(DropReason::IngressThreshold));
        // Another ingress port still gets in, locally created packets are not limited at ingress.
        assert_eq!(b.admit(&req(Some(2), 0, 0, 100)), Verdict::Admit);
        assert_eq!(b.admit(&req(None, 0, 0, 100)), Verdict::Admit);
        // After two releases: 4 * (18 + 1) <= 100 - 20.
        b.release(&req(Some(1), 0, 0, 100));
        b.release(&req(Some(1), 0, 0, 100));
        assert_eq!(b.admit(&req(Some(1), 0, 0, 100)), Verdict::Admit);
    }

    #[test]
    fn classes_map_to_separate_pools() {
        let p =
            SharedParams::from_config(10_000, 100, 0, &[8.0], 0, None, Some(&[2_000, 500]), Some(&[0, 1]), 1, 2, "b")
                .unwrap();
        let mut b = SharedBuffer::new(1, 2, &p);
        for _ in 0..5 {
            assert_eq!(b.admit(&req(None, 0, 1, 100)), Verdict::Admit);
        }
        assert_eq!(b.admit(&req(None, 0, 1, 100)), Verdict::Drop(DropReason::PoolExhausted));
        // Pool 0 is untouched by class 1.
        assert_eq!(b.pool_used_cells(0), 0);
        assert_eq!(b.admit(&req(None, 0, 0, 100)), Verdict::Admit);
    }

    #[test]
    fn reservations_come_out_of_the_shared_pool() {
        // 1000 cells of 100 B, 4 ports (two 10G, two 100G), 2 classes in one PG.
        let base = SharedParams::from_config(100_000, 100, 0, &[1.0], 0, None, None, None, 4, 2, "b").unwrap();
        let r = Reservations {
            pg_min_bytes: 250, // 3 cells per port (one group in use)
            class_pg: Some(vec![7, 7]),
            port_headroom: vec![(10_000_000_000, 1_000), (100_000_000_000, 5_000)],
            fixed_bytes: 4_000,
        };
        let g = 1_000_000_000u64;
        let p = base.with_reservations(&r, &[10 * g, 10 * g, 100 * g, 400 * g], "b").unwrap();
        // PG minimums 4 x 3, headroom 10 + 10 + 50 + 50 (faster than every entry: the last), fixed 40.
        assert_eq!(p.headroom_cells, vec![10, 10, 50, 50]);
        assert_eq!(p.reserved_total_cells(4), 12 + 120 + 40);
        assert_eq!(p.pool_cells, vec![1000 - 172]);
        let b = SharedBuffer::new(4, 2, &p);
        assert_eq!((b.capacity_cells(), b.reserved_cells_total()), (1000, 172));
        // Alpha 1 on one queue now stops at half of the smaller pool.
        let mut b = b;
        let mut n = 0;
        while b.admit(&req(None, 0, 0, 100)) == Verdict::Admit {
            n += 1;
        }
        assert_eq!(n, 414);
        assert_eq!(b.high_water_cells(), 414);
    }

    #[test]
    fn a_priority_group_minimum_passes_the_ingress_threshold() {
        // Ingress alpha 1/128 on a 100-cell pool: no shared cell passes
        // (1 <= 100/128 is false), but the group's 5-cell minimum does.
        let base =
            SharedParams::from_config(10_500, 100, 0, &[8.0], 0, Some(&[1.0 / 128.0]), None, None, 1, 1, "b").unwrap();
        let r = Reservations { pg_min_bytes: 500, ..Default::default() };
        let p = base.with_reservations(&r, &[1_000_000_000], "b").unwrap();
        assert_eq!(p.pool_cells, vec![100]);
        let mut b = SharedBuffer::new(1, 1, &p);
        for _ in 0..5 {
            assert_eq!(b.admit(&req(Some(0), 0, 0, 100)), Verdict::Admit);
        }
        assert_eq!(b.admit(&req(Some(0), 0, 0, 100)), Verdict::Drop(DropReason::IngressThreshold));
        b.release(&req(Some(0), 0, 0, 100));
        assert_eq!(b.admit(&req(Some(0), 0, 0, 100)), Verdict::Admit);
    }

    #[test]
    fn pfc_headroom_comes_out_of_the_port_headroom_first() {
        use crate::buffer::pfc::{PfcIngress, Xoff};
        let build = |per_pg: u64| {
            let base = SharedParams::from_config(100_000, 100, 0, &[1.0], 0, None, None, None, 2, 1, "b").unwrap();
            let r = Reservations { port_headroom: vec![(u64::MAX, 5_000)], ..Default::default() };
            let p = base.with_reservations(&r, &[1, 1], "b").unwrap();
            let mut b = SharedBuffer::new(2, 1, &p);
            b.enable_pfc(PfcIngress::new(2, 1, 1, Xoff::Dynamic(-3), 10, vec![per_pg, per_pg])).unwrap();
            (b.pool_used_cells(0), b.pools[0].size, b.reserved_cells_total())
        };
        // 2 x 50 cells of port headroom cover 2 x 30 cells of PFC headroom ...
        assert_eq!(build(30), (0, 900, 100));
        // ... but not 2 x 80: the other 60 come out of the pool.
        assert_eq!(build(80), (0, 840, 160));
    }

    #[test]
    fn reservations_larger_than_the_buffer_are_an_error() {
        let base = SharedParams::from_config(10_000, 100, 0, &[1.0], 0, None, None, None, 2, 1, "x.buffer").unwrap();
        let r = Reservations { fixed_bytes: 10_000, ..Default::default() };
        let msg = base.with_reservations(&r, &[1, 1], "x.buffer").unwrap_err().to_string();
        assert!(msg.starts_with("x.buffer.size: the reservations"), "{msg}");
    }

    #[test]
    fn configuration_errors_name_the_field() {
        let e = |r: Result<SharedParams, ConfigError>| r.unwrap_err().to_string();
        let msg = e(SharedParams::from_config(1000, 100, 0, &[3.0], 0, None, None, None, 1, 1, "x.buffer"));
        assert!(msg.starts_with("x.buffer.alpha: 3 is not an allowed alpha; allowed: 1/128"), "{msg}");
        let msg = e(SharedParams::from_config(1000, 100, 0, &[1.0, 1.0], 0, None, None, None, 1, 3, "x"));
        assert!(msg.contains("x.alpha: expected 1 or 3 values"), "{msg}");
        let msg = e(SharedParams::from_config(1000, 100, 0, &[1.0], 500, None, None, None, 2, 1, "x"));
        assert!(msg.starts_with("x.reserved_per_queue:"), "{msg}");
        let msg = e(SharedParams::from_config(1000, 100, 0, &[1.0], 0, None, Some(&[600, 600]), None, 1, 1, "x"));
        assert!(msg.starts_with("x.pools: pools need 12 cells"), "{msg}");
        let msg = e(SharedParams::from_config(1000, 100, 0, &[1.0], 0, None, Some(&[600]), Some(&[0, 1]), 1, 2, "x"));
        assert!(msg.starts_with("x.class_pool[1]: pool 1 does not exist"), "{msg}");
        let msg = e(SharedParams::from_config(1000, 0, 0, &[1.0], 0, None, None, None, 1, 1, "x"));
        assert!(msg.starts_with("x.cell: must be > 0"), "{msg}");
    }
}
