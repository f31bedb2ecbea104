//! DCQCN reaction point (Zhu et al., SIGCOMM 2015), per queue pair.
//!
//! - **CNP**: alpha <- (1 - g) alpha + g; if no cut happened in the last
//!   `rate_decrease_interval`: target Rt <- Rc, Rc <- max(min, Rc (1 - alpha/2)),
//!   the increase counters restart and the increase timer is re-armed.
//! - **Alpha decay**: alpha <- (1 - g) alpha for every `alpha_interval` that
//!   passed without a CNP (applied lazily when the next CNP arrives, which is
//!   the same as a timer restarted by every CNP).
//! - **Increase**: every `rate_increase_timer` expiry increments T, every
//!   `byte_counter` bytes sent increments BC (if the byte counter is on; else
//!   BC follows T). With F fast-recovery stages: max(T, BC) < F: fast recovery
//!   (Rc <- (Rt + Rc)/2); min(T, BC) > F: hyper increase (Rt += i R_HAI,
//!   i = min(T, BC) - F); otherwise additive increase (Rt += R_AI); then
//!   Rc <- (Rt + Rc)/2. Rates are capped at line rate; the timer stops once
//!   both reach it.

use super::rate::{AckFeedback, RateControl};
use super::DcqcnConfig;
use crate::units::SimTime;

/// The reaction point's state. Its parameters stay with the QP's
/// configuration and come with each call (a million QPs do not each keep a
/// copy); [`DcqcnControl`] pairs the two to answer as a [`RateControl`].
#[derive(Clone, Debug)]
pub struct Dcqcn {
    /// Current rate Rc and target rate Rt in bit/s.
    pub rc: f64,
    pub rt: f64,
    pub alpha: f64,
    line: f64,
    ai: f64,
    hai: f64,
    alpha_at: SimTime,
    last_cut: Option<SimTime>,
    t: u32,
    bc: u32,
    bytes: u64,
    /// When the rate-increase timer fires next, if armed.
    pub inc_at: Option<SimTime>,
    pub cnps: u64,
    pub cuts: u64,
}

impl Dcqcn {
    pub fn new(cfg: &DcqcnConfig, line_bps: u64) -> Self {
        let scale = line_bps as f64 / 25e9;
        Dcqcn {
            rc: line_bps as f64,
            rt: line_bps as f64,
            alpha: cfg.initial_alpha,
            line: line_bps as f64,
            ai: cfg.rate_ai_bps.map_or(5e6 * scale, |v| v as f64),
            hai: cfg.rate_hai_bps.map_or(50e6 * scale, |v| v as f64),
            alpha_at: SimTime::ZERO,
            last_cut: None,
            t: 0,
            bc: 0,
            bytes: 0,
            inc_at: None,
            cnps: 0,
            cuts: 0,
        }
    }

    /// The QP starts at `now` (origin of the alpha timer).
    pub fn start(&mut self, now: SimTime) {
        self.alpha_at = now;
    }

    /// Current sending rate in bit/s (at least 1).
    #[inline]
    pub fn rate_bps(&self) -> u64 {
        (self.rc as u64).max(1)
    }

    pub fn on_cnp(&mut self, cfg: &DcqcnConfig, now: SimTime) {
        self.cnps += 1;
        let k = (now.0 - self.alpha_at.0) / cfg.alpha_interval_ps;
        if k > 0 {
            self.alpha *= libm::pow(1.0 - cfg.g, k as f64);
        }
        self.alpha = (1.0 - cfg.g) * self.alpha + cfg.g;
        self.alpha_at = now;
        if self.last_cut.map_or(true, |t| now.0 - t.0 >= cfg.rate_decrease_interval_ps) {
            self.last_cut = Some(now);
            self.cuts += 1;
            self.rt = self.rc;
            self.rc = (self.rc * (1.0 - self.alpha / 2.0)).max(cfg.min_rate_bps as f64).min(self.line);
            self.t = 0;
            self.bc = 0;
            self.bytes = 0;
            self.inc_at = Some(now + SimTime(cfg.rate_increase_timer_ps));
        }
    }

    /// The increase timer fired at `now`.
    pub fn on_timer(&mut self, cfg: &DcqcnConfig, now: SimTime) {
        self.t += 1;
        self.increase(cfg);
        self.inc_at = if self.rc < self.line || self.rt < self.line {
            Some(now + SimTime(cfg.rate_increase_timer_ps))
        } else {
            None
        };
    }

    /// `n` bytes were sent.
    #[inline]
    pub fn on_sent(&mut self, cfg: &DcqcnConfig, n: u64) {
        let Some(b) = cfg.byte_counter_bytes else { return };
        if self.inc_at.is_none() {
            return;
        }
        self.bytes += n;
        while self.bytes >= b {
            self.bytes -= b;
            self.bc += 1;
            self.increase(cfg);
        }
    }

    fn increase(&mut self, cfg: &DcqcnConfig) {
        let f = cfg.fast_recovery_stages;
        let bc = if cfg.byte_counter_bytes.is_some() { self.bc } else { self.t };
        let (hi, lo) = (self.t.max(bc), self.t.min(bc));
        if hi < f {
            // fast recovery
        } else if lo > f {
            self.rt += (lo - f) as f64 * self.hai;
        } else {
            self.rt += self.ai;
        }
        self.rt = self.rt.min(self.line);
        self.rc = ((self.rt + self.rc) / 2.0).min(self.line);
    }
}

/// DCQCN as a [`RateControl`]: the reaction point with its parameters.
/// ACKs carry nothing DCQCN reads (it reacts to CNPs).
#[derive(Clone, Debug)]
pub struct DcqcnControl {
    pub cfg: DcqcnConfig,
    pub state: Dcqcn,
}

impl DcqcnControl {
    pub fn new(cfg: &DcqcnConfig, line_bps: u64) -> Self {
        DcqcnControl { cfg: *cfg, state: Dcqcn::new(cfg, line_bps) }
    }
}

impl RateControl for DcqcnControl {
    fn start(&mut self, now: SimTime) {
        self.state.start(now)
    }
    fn on_sent(&mut self, bytes: u64, _now: SimTime) {
        self.state.on_sent(&self.cfg, bytes)
    }
    fn on_cnp(&mut self, now: SimTime) {
        self.state.on_cnp(&self.cfg, now)
    }
    fn on_ack(&mut self, _fb: &AckFeedback<'_>) {}
    fn timer_at(&self) -> Option<SimTime> {
        self.state.inc_at
    }
    fn on_timer(&mut self, now: SimTime) {
        self.state.on_timer(&self.cfg, now)
    }
    fn rate_bps(&self) -> u64 {
        self.state.rate_bps()
    }
    fn cuts(&self) -> u64 {
        self.state.cuts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_cnp_halves_then_timer_recovers() {
        let cfg = DcqcnConfig { rate_decrease_interval_ps: 4_000_000, byte_counter_bytes: None, ..Default::default() };
        let mut d = Dcqcn::new(&cfg, 100_000_000_000);
        d.start(SimTime::from_us(10));
        d.on_cnp(&cfg, SimTime::from_us(10));
        // alpha stays 1: rate halves.
        assert_eq!(d.rc, 50e9);
        assert_eq!(d.rt, 100e9);
        // A CNP 1 us later is inside the decrease interval: no second cut.
        d.on_cnp(&cfg, SimTime::from_us(11));
        assert_eq!(d.cuts, 1);
        assert_eq!(d.cnps, 2);
        // Fast recovery: halfway to the target on each of the first F-1 expiries.
        let at = d.inc_at.unwrap();
        d.on_timer(&cfg, at);
        assert_eq!(d.rc, 75e9);
        // Alpha decays lazily: a CNP 55 ms = 1000 alpha intervals after the last
        // one sees alpha decayed as by 1000 timer steps, then the CNP's update.
        let mut expect = d.alpha;
        for _ in 0..1000 {
            expect *= 1.0 - cfg.g;
        }
        expect = (1.0 - cfg.g) * expect + cfg.g;
        d.on_cnp(&cfg, SimTime::from_us(55_011));
        assert!((d.alpha - expect).abs() < 1e-12, "{} vs {expect}", d.alpha);
    }

    #[test]
    fn additive_then_hyper_increase_with_f_one() {
        let cfg = DcqcnConfig { fast_recovery_stages: 1, byte_counter_bytes: None, ..Default::default() };
        let mut d = Dcqcn::new(&cfg, 100_000_000_000);
        d.on_cnp(&cfg, SimTime::from_us(1));
        assert_eq!((d.rc, d.rt), (50e9, 100e9));
        // A target below line rate, so that the additive step is visible.
        d.rt = 60e9;
        d.on_timer(&cfg, SimTime::from_us(56)); // T = 1 = F: additive (20 Mb/s at 100G)
        assert!((d.rt - 60.02e9).abs() < 1.0, "rt {}", d.rt);
        assert!((d.rc - (50e9 + 60.02e9) / 2.0).abs() < 1.0, "rc {}", d.rc);
        let mut d = Dcqcn::new(&cfg, 100_000_000_000);
        d.rc = 10e9;
        d.rt = 10e9;
        d.t = 1;
        d.on_timer(&cfg, SimTime::ZERO); // T = 2 > F: hyper, i = 1 (200 Mb/s)
        assert!((d.rt - 10.2e9).abs() < 1.0);
    }

    /// The same calls through the trait and directly give the same rates.
    #[test]
    fn trait_calls_match_direct_calls() {
        let cfg = DcqcnConfig { byte_counter_bytes: Some(30_000), ..Default::default() };
        let mut a = Dcqcn::new(&cfg, 100_000_000_000);
        let mut b: Box<dyn RateControl> = Box::new(DcqcnControl::new(&cfg, 100_000_000_000));
        a.start(SimTime::ZERO);
        b.start(SimTime::ZERO);
        let mut now = SimTime::ZERO;
        for step in 0..2000u64 {
            now += SimTime::from_us(3);
            if step.is_multiple_of(97) {
                a.on_cnp(&cfg, now);
                b.on_cnp(now);
            }
            a.on_sent(&cfg, 1086);
            b.on_sent(1086, now);
            if a.inc_at.is_some_and(|t| t <= now) {
                assert_eq!(b.timer_at(), a.inc_at);
                a.on_timer(&cfg, now);
                b.on_timer(now);
            }
            assert_eq!(a.rate_bps(), b.rate_bps());
        }
        assert!(a.cuts > 10 && a.cuts == b.cuts());
    }
}
