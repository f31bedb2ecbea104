//! The admission-policy interface: how a buffer model that is not built into
//! the core decides which packets a switch may store.
//!
//! A policy answers two calls (see [`AdmissionPolicy`]):
//!
//! - [`admit`](AdmissionPolicy::admit): a packet (size, ingress port, egress
//!   port, class, flow, ECN codepoint, time: an [`AdmitRequest`]) asks to join
//!   the egress queue; the policy reads the occupancy it needs from a
//!   [`BufferView`] and answers [`Verdict::Admit`], [`Verdict::Mark`] (admit and
//!   CE-mark an ECN-capable packet) or [`Verdict::Drop`] with a reason;
//! - [`release`](AdmissionPolicy::release): an admitted packet left its queue
//!   (its transmission started).
//!
//! The books are never kept by the policy. The bytes held in all and their
//! high-water mark are the device's [`super::Buffer`]'s, as for every model;
//! bytes per egress port, bytes and packets per (egress port, class) queue and
//! per class are kept by [`PolicyBuffer`], the wrapper every policy runs in.
//! A packet is charged after the policy admitted it and credited before the
//! policy hears of its release, and a packet that would take the buffer past
//! the policy's [`capacity_bytes`](AdmissionPolicy::capacity_bytes) is dropped
//! (`pool_exhausted`) without asking the policy. A policy sees the books only
//! through the read-only view, so it cannot leave them wrong, and the outputs
//! (`buffers` and `pools` tables, high-water marks) read the same numbers
//! whatever the policy.
//!
//! The built-in models (static, shared, voq, intelligent) implement the trait
//! too and run through [`super::BufferModel`]'s `match` (static dispatch; they
//! keep their own cell-level accounting, which is part of their rules); a
//! policy from outside the core runs as `BufferModel::Custom`, one virtual call
//! per admission and per release. See `docs/extending/buffer-policy.md`.

use super::{AdmitRequest, Verdict};
use crate::stats::DropReason;
use crate::units::Rate;

/// A switch buffer's admission rule. Implementations must be deterministic:
/// the same calls in the same order give the same answers (no clocks, no
/// unseeded randomness, no iteration over hash maps with random state).
pub trait AdmissionPolicy: Send + Sync + std::fmt::Debug {
    /// The buffer's size in bytes: the wrapper never lets the bytes held go
    /// past it, and it is the `capacity` of the buffer in the outputs.
    fn capacity_bytes(&self) -> u64;

    /// Called once, when the device's egress ports exist, with their rates
    /// (index = local port).
    fn attach(&mut self, _port_rates: &[Rate]) {}

    /// Decides whether the packet described by `req` may join egress queue
    /// `(req.out_port, req.class)`. `view` is the occupancy before the packet.
    /// Answer [`Verdict::Admit`], [`Verdict::Mark`] or [`Verdict::Drop`];
    /// [`Verdict::Steer`] (another queue) is for the built-in models only.
    fn admit(&mut self, req: &AdmitRequest, view: &BufferView<'_>) -> Verdict;

    /// A packet admitted earlier left its queue at `req.now`; `view` is the
    /// occupancy after it left.
    fn release(&mut self, _req: &AdmitRequest, _view: &BufferView<'_>) {}
}

/// The wrapper's accounting per port, queue and class, in frame bytes (the
/// total is the device's [`super::Buffer`]'s).
#[derive(Clone, Debug)]
pub struct Books {
    capacity: u64,
    classes: usize,
    port_bytes: Vec<u64>,
    queue_bytes: Vec<u64>,
    queue_packets: Vec<u64>,
    class_bytes: [u64; 8],
    port_rates: Vec<u64>,
}

impl Books {
    /// Empty books of a device with `ports` ports and `classes` classes.
    pub fn new(capacity: u64, ports: usize, classes: usize) -> Books {
        Books {
            capacity,
            classes,
            port_bytes: vec![0; ports],
            queue_bytes: vec![0; ports * classes],
            queue_packets: vec![0; ports * classes],
            class_bytes: [0; 8],
            port_rates: vec![0; ports],
        }
    }

    #[inline]
    fn charge(&mut self, out: usize, class: usize, bytes: u64) {
        let q = out * self.classes + class;
        self.port_bytes[out] += bytes;
        self.queue_bytes[q] += bytes;
        self.queue_packets[q] += 1;
        self.class_bytes[class] += bytes;
    }

    #[inline]
    fn credit(&mut self, out: usize, class: usize, bytes: u64) {
        let q = out * self.classes + class;
        self.port_bytes[out] -= bytes;
        self.queue_bytes[q] -= bytes;
        self.queue_packets[q] -= 1;
        self.class_bytes[class] -= bytes;
    }
}

/// Read-only view of a buffer's occupancy, given to a policy at each call.
#[derive(Clone, Copy, Debug)]
pub struct BufferView<'a> {
    books: &'a Books,
    used: u64,
}

impl<'a> BufferView<'a> {
    /// The buffer's size in bytes.
    pub fn capacity_bytes(&self) -> u64 {
        self.books.capacity
    }
    /// Bytes held in all.
    pub fn used_bytes(&self) -> u64 {
        self.used
    }
    /// Bytes not held: `capacity - used`.
    pub fn free_bytes(&self) -> u64 {
        self.books.capacity - self.used
    }
    /// Number of egress ports of the device.
    pub fn ports(&self) -> usize {
        self.books.port_bytes.len()
    }
    /// Number of classes (queues per port).
    pub fn classes(&self) -> usize {
        self.books.classes
    }
    /// Bytes held by egress port `port`, all classes.
    pub fn port_bytes(&self, port: usize) -> u64 {
        self.books.port_bytes[port]
    }
    /// Bytes held by queue `(port, class)`.
    pub fn queue_bytes(&self, port: usize, class: usize) -> u64 {
        self.books.queue_bytes[port * self.books.classes + class]
    }
    /// Packets held by queue `(port, class)`.
    pub fn queue_packets(&self, port: usize, class: usize) -> u64 {
        self.books.queue_packets[port * self.books.classes + class]
    }
    /// Bytes held by class `class` over all ports.
    pub fn class_bytes(&self, class: usize) -> u64 {
        self.books.class_bytes[class]
    }
    /// Line rate of egress port `port` in bit/s.
    pub fn port_rate_bps(&self, port: usize) -> u64 {
        self.books.port_rates[port]
    }
}

/// A policy and the books kept for it (see the module documentation).
#[derive(Debug)]
pub struct PolicyBuffer {
    name: String,
    books: Books,
    policy: Box<dyn AdmissionPolicy>,
}

impl PolicyBuffer {
    /// Wraps `policy` for a device with `ports` ports and `classes` classes.
    pub fn new(name: &str, policy: Box<dyn AdmissionPolicy>, ports: usize, classes: usize) -> PolicyBuffer {
        PolicyBuffer { name: name.to_string(), books: Books::new(policy.capacity_bytes(), ports, classes), policy }
    }

    /// The name the policy is registered by.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The device's egress ports exist: their rates go to the view and the policy.
    pub fn attach(&mut self, rates: &[Rate]) {
        for (r, x) in self.books.port_rates.iter_mut().zip(rates) {
            *r = x.bps();
        }
        self.policy.attach(rates);
    }

    /// The occupancy as the policy sees it, with `held` bytes in all.
    pub fn view(&self, held: u64) -> BufferView<'_> {
        BufferView { books: &self.books, used: held }
    }

    /// Asks the policy about a packet arriving while the buffer holds `held`
    /// bytes; charges the packet if it is admitted. Out of line and taking the
    /// request by value, so that the built-in models' admission keeps its
    /// request in registers.
    #[inline(never)]
    pub fn admit(&mut self, req: AdmitRequest, held: u64) -> Verdict {
        let req = &req;
        let b = req.bytes as u64;
        if held + b > self.books.capacity {
            return Verdict::Drop(DropReason::PoolExhausted);
        }
        let v = self.policy.admit(req, &BufferView { books: &self.books, used: held });
        match v {
            Verdict::Admit | Verdict::Mark => self.books.charge(req.out_port as usize, req.class as usize, b),
            Verdict::Drop(_) => {}
            // Custom policies answer for the packet's own queue only.
            Verdict::Steer { .. } => panic!("an admission policy answered Steer, which only built-in models may"),
        }
        v
    }

    /// Credits the packet, then tells the policy; `held` is what the buffer
    /// holds once the packet left (out of line and by value, as `admit`).
    #[inline(never)]
    pub fn release(&mut self, req: AdmitRequest, held: u64) {
        let req = &req;
        self.books.credit(req.out_port as usize, req.class as usize, req.bytes as u64);
        self.policy.release(req, &BufferView { books: &self.books, used: held });
    }

    /// Whether every port, queue and class is back to zero in the books.
    pub fn settled(&self) -> bool {
        let b = &self.books;
        b.port_bytes.iter().chain(&b.queue_bytes).chain(&b.queue_packets).chain(&b.class_bytes).all(|&x| x == 0)
    }

    pub fn capacity_bytes(&self) -> u64 {
        self.books.capacity
    }

    /// The policy itself (for tests and outputs of its own).
    pub fn policy(&self) -> &dyn AdmissionPolicy {
        &*self.policy
    }
}

// The built-in models answer through the same interface; they keep their own
// (cell-level) books, which their rules read, and ignore the view.

impl AdmissionPolicy for super::StaticBuffer {
    fn capacity_bytes(&self) -> u64 {
        super::StaticBuffer::capacity_bytes(self)
    }
    fn admit(&mut self, req: &AdmitRequest, _view: &BufferView<'_>) -> Verdict {
        super::StaticBuffer::admit(self, req)
    }
    fn release(&mut self, req: &AdmitRequest, _view: &BufferView<'_>) {
        super::StaticBuffer::release(self, req)
    }
}

impl AdmissionPolicy for super::SharedBuffer {
    fn capacity_bytes(&self) -> u64 {
        super::SharedBuffer::capacity_bytes(self)
    }
    fn admit(&mut self, req: &AdmitRequest, _view: &BufferView<'_>) -> Verdict {
        super::SharedBuffer::admit(self, req)
    }
    fn release(&mut self, req: &AdmitRequest, _view: &BufferView<'_>) {
        super::SharedBuffer::release(self, req)
    }
}

impl AdmissionPolicy for super::VoqBuffer {
    fn capacity_bytes(&self) -> u64 {
        super::VoqBuffer::capacity_bytes(self)
    }
    fn attach(&mut self, rates: &[Rate]) {
        self.set_port_rates(rates)
    }
    fn admit(&mut self, req: &AdmitRequest, view: &BufferView<'_>) -> Verdict {
        super::VoqBuffer::admit(self, req, view.used_bytes())
    }
    fn release(&mut self, req: &AdmitRequest, _view: &BufferView<'_>) {
        super::VoqBuffer::release(self, req)
    }
}

impl AdmissionPolicy for super::IntelligentBuffer {
    fn capacity_bytes(&self) -> u64 {
        self.base().capacity_bytes()
    }
    fn attach(&mut self, rates: &[Rate]) {
        self.set_port_rates(rates)
    }
    fn admit(&mut self, req: &AdmitRequest, _view: &BufferView<'_>) -> Verdict {
        super::IntelligentBuffer::admit(self, req)
    }
    fn release(&mut self, req: &AdmitRequest, _view: &BufferView<'_>) {
        super::IntelligentBuffer::release(self, req)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::{Buffer, Occupancy, SharedBuffer, SharedParams, StaticBuffer, StaticLimits};
    use crate::units::SimTime;

    fn req(out: u16, class: u8, bytes: u32, queued: Occupancy) -> AdmitRequest {
        AdmitRequest { in_port: Some(0), out_port: out, class, bytes, flow: 0, now: SimTime::ZERO, ecn: 0, queued }
    }

    /// A deterministic stream of (admit?, port, class, bytes) operations.
    fn ops(n: usize) -> Vec<(bool, u16, u8, u32)> {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (!x.is_multiple_of(3), (x >> 8) as u16 % 4, (x >> 16) as u8 % 2, 64 + (x >> 24) as u32 % 1500)
            })
            .collect()
    }

    /// Runs the same operations through a model directly (books kept beside
    /// it as the ports keep them) and through the wrapper: the verdicts and
    /// the bytes held must agree at every step.
    fn same_through_wrapper(mut direct: impl AdmissionPolicy + Clone + 'static) {
        let mut wrapped = Buffer::custom("direct", Box::new(direct.clone()), 4, 2);
        let mut mine = Books::new(direct.capacity_bytes(), 4, 2);
        let (mut used, mut high_water) = (0u64, 0u64);
        let mut held: Vec<Vec<u32>> = vec![Vec::new(); 8];
        let (mut admitted, mut dropped) = (0, 0);
        for (admit, out, class, bytes) in ops(4000) {
            let q = out as usize * 2 + class as usize;
            let queued = Occupancy {
                port_bytes: mine.port_bytes[out as usize],
                queue_bytes: mine.queue_bytes[q],
                queue_packets: mine.queue_packets[q],
            };
            if admit {
                let r = req(out, class, bytes, queued);
                let a = direct.admit(&r, &BufferView { books: &mine, used });
                let b = wrapped.admit(r).0;
                // The wrapper's capacity check comes first: a packet the
                // buffer cannot hold may be refused for that reason instead.
                if b != Verdict::Drop(DropReason::PoolExhausted) {
                    assert_eq!(a, b);
                } else {
                    assert!(matches!(a, Verdict::Drop(_)));
                }
                if a == Verdict::Admit {
                    mine.charge(out as usize, class as usize, bytes as u64);
                    used += bytes as u64;
                    high_water = high_water.max(used);
                    held[q].push(bytes);
                    admitted += 1;
                } else {
                    dropped += 1;
                }
            } else if let Some(bytes) = held[q].pop() {
                let r = req(out, class, bytes, queued);
                mine.credit(out as usize, class as usize, bytes as u64);
                used -= bytes as u64;
                direct.release(&r, &BufferView { books: &mine, used });
                wrapped.release_request(r);
            }
            assert_eq!(wrapped.used_bytes(), used);
            let v = wrapped.policy_view().unwrap();
            for p in 0..4 {
                assert_eq!(v.port_bytes(p), mine.port_bytes[p]);
            }
        }
        assert!(admitted > 100 && dropped > 100, "{admitted} admitted, {dropped} dropped");
        assert_eq!(wrapped.high_water_bytes(), high_water);
    }

    #[test]
    fn static_model_answers_the_same_through_the_wrapper() {
        same_through_wrapper(StaticBuffer::new(
            4,
            StaticLimits { port_bytes: 6000, queue_bytes: Some(4500), queue_packets: Some(5) },
        ));
    }

    #[test]
    fn shared_model_answers_the_same_through_the_wrapper() {
        let p = SharedParams::from_config(20_000, 100, 0, &[0.5, 2.0], 200, None, None, None, 4, 2, "b").unwrap();
        same_through_wrapper(SharedBuffer::new(4, 2, &p));
    }

    /// A policy that admits everything: the wrapper's capacity check is what
    /// stops it, and its books follow.
    #[derive(Debug)]
    struct Greedy;
    impl AdmissionPolicy for Greedy {
        fn capacity_bytes(&self) -> u64 {
            3000
        }
        fn admit(&mut self, _req: &AdmitRequest, _view: &BufferView<'_>) -> Verdict {
            Verdict::Mark
        }
    }

    #[test]
    fn wrapper_enforces_capacity_and_keeps_the_books() {
        let mut b = Buffer::custom("greedy", Box::new(Greedy), 2, 1);
        let o = Occupancy::default();
        assert_eq!(b.admit(req(0, 0, 1500, o)).0, Verdict::Mark);
        assert_eq!(b.admit(req(1, 0, 1500, o)).0, Verdict::Mark);
        assert_eq!(b.admit(req(1, 0, 1, o)).0, Verdict::Drop(DropReason::PoolExhausted));
        let v = b.policy_view().unwrap();
        assert_eq!((v.used_bytes(), v.free_bytes(), v.port_bytes(0), v.queue_packets(1, 0)), (3000, 0, 1500, 1));
        b.release_request(req(0, 0, 1500, o));
        assert_eq!((b.used_bytes(), b.high_water_bytes(), b.policy_view().unwrap().class_bytes(0)), (1500, 3000, 1500));
        b.release_request(req(1, 0, 1500, o));
        assert!(b.used_bytes() == 0 && b.model_settled());
    }
}
