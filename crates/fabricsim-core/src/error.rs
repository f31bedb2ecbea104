//! Errors the core reports to its caller. The core never panics on bad input:
//! every check of a scenario produces a [`ConfigError`] naming the field.

use std::fmt;

/// A problem with the scenario, with the dotted path of the offending field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub path: String,
    pub message: String,
}

impl ConfigError {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigError { path: path.into(), message: message.into() }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for ConfigError {}

/// Why a run cannot go on (the scenario was valid, the world was built).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunError {
    /// Simulated time stopped advancing: `events` events ran at `time_ps`,
    /// reaching the stall guard's `limit` (see `sim/guard.rs`); `culprit`
    /// names the component that scheduled most of the last ones.
    Stalled { time_ps: u64, events: u64, limit: u64, culprit: String },
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Stalled { time_ps, events, limit, culprit } => write!(
                f,
                "simulated time stopped advancing at {time_ps} ps ({:.6} ms): {events} events ran at that \
                 instant (the stall limit is {limit}); {culprit}",
                *time_ps as f64 / 1e9
            ),
        }
    }
}

impl std::error::Error for RunError {}
