//! Python bindings for fabricsim-core: conversion only, no model logic.
//!
//! The resolved scenario comes in as JSON text; results go out as a dict of
//! little-endian column buffers. The GIL is released while the core runs, and
//! a Rust panic is caught and raised as `SimulationError`, never propagated.

mod convert;
mod py_cc;

use fabricsim_core::units::SimTime;
use fabricsim_core::{Progress, Scenario, Simulation as CoreSim};
use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};

create_exception!(
    _core,
    ConfigError,
    PyValueError,
    "The resolved scenario is invalid; the message starts with the field path."
);
create_exception!(_core, SimulationError, PyRuntimeError, "The simulation failed internally.");
create_exception!(
    _core,
    WorldTooLarge,
    PyValueError,
    "The world's estimated bytes (the argument) are more than the memory limit it was built under."
);

fn panic_message(e: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = e.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = e.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

/// Runs `f`, turning a panic into `SimulationError`.
fn guarded<T>(f: impl FnOnce() -> T) -> PyResult<T> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|e| match py_cc::take_failure(e) {
        // A Python congestion controller raised: its exception, as itself.
        Ok(err) => err,
        Err(e) => SimulationError::new_err(format!("internal error in the simulation core: {}", panic_message(e))),
    })
}

/// A simulation built from a resolved scenario.
#[pyclass(module = "fabricsim._core")]
struct Simulation {
    inner: Option<CoreSim>,
}

impl Simulation {
    fn sim(&mut self) -> PyResult<&mut CoreSim> {
        self.inner.as_mut().ok_or_else(|| SimulationError::new_err("the simulation failed earlier and cannot continue"))
    }
}

#[pymethods]
impl Simulation {
    /// Parses and builds the scenario. With `memory_limit` (bytes), a world whose
    /// estimate (`estimate_memory`) is larger is refused before it is built:
    /// `WorldTooLarge`, its argument the estimate. The document is parsed once.
    #[new]
    #[pyo3(signature = (scenario_json, memory_limit=None))]
    fn new(py: Python<'_>, scenario_json: &str, memory_limit: Option<u64>) -> PyResult<Self> {
        let built = py.allow_threads(|| {
            guarded(|| -> Result<Result<CoreSim, u64>, fabricsim_core::ConfigError> {
                let sc = Scenario::from_json(scenario_json)?;
                if let Some(limit) = memory_limit {
                    let estimate = fabricsim_core::sim::limits::estimated_world_bytes(&sc)?;
                    if estimate > limit {
                        return Ok(Err(estimate));
                    }
                }
                CoreSim::new(&sc).map(Ok)
            })
        })?;
        match built {
            Ok(Ok(s)) => Ok(Simulation { inner: Some(s) }),
            Ok(Err(estimate)) => Err(WorldTooLarge::new_err(estimate)),
            Err(e) => Err(ConfigError::new_err(e.to_string())),
        }
    }

    #[getter]
    fn now_ps(&mut self) -> PyResult<u64> {
        Ok(self.sim()?.progress().ps())
    }

    #[getter]
    fn end_ps(&mut self) -> PyResult<u64> {
        Ok(self.sim()?.duration().ps())
    }

    #[getter]
    fn events(&mut self) -> PyResult<u64> {
        Ok(self.sim()?.events())
    }

    /// Processes events up to `t_ps` with the GIL released; True once the run is over.
    ///
    /// The core runs in slices of at most [`EVENTS_PER_SLICE`] events; between
    /// slices the GIL is taken back and pending signals are handled, so Ctrl-C
    /// raises `KeyboardInterrupt` within a fraction of a second, however long
    /// the stretch of simulated time. The simulation stays usable afterwards
    /// (`stop()` then `finish()` gives the results so far).
    fn run_until(&mut self, py: Python<'_>, t_ps: u64) -> PyResult<bool> {
        loop {
            match self.advance(py, SimTime(t_ps))? {
                Progress::Paused => py.check_signals()?,
                p => return Ok(p == Progress::Finished),
            }
        }
    }

    /// Bytes held by the simulation's state, by part: `packets`, `port_queues`,
    /// `wires`, `events`, `routing`, and `peak_packets` (packets alive at once).
    fn memory(&mut self, py: Python<'_>) -> PyResult<PyObject> {
        let m = self.sim()?.memory_use();
        let d = pyo3::types::PyDict::new(py);
        d.set_item("packets", m.packets)?;
        d.set_item("port_queues", m.port_queues)?;
        d.set_item("wires", m.wires)?;
        d.set_item("events", m.events)?;
        d.set_item("routing", m.routing)?;
        d.set_item("peak_packets", m.peak_packets)?;
        Ok(d.into_any().unbind())
    }

    /// Ends the run where it is: `finish()` then returns the results so far.
    fn stop(&mut self) -> PyResult<()> {
        self.sim()?.stop();
        Ok(())
    }

    /// The stall guard's limit: events at one simulated time that fail the run.
    #[getter]
    fn stall_limit(&mut self) -> PyResult<u64> {
        Ok(self.sim()?.stall_limit_in_use())
    }

    #[setter]
    fn set_stall_limit(&mut self, limit: u64) -> PyResult<()> {
        self.sim()?.set_stall_limit(limit);
        Ok(())
    }

    /// Runs to completion (as `run_until`, interruptible) and returns
    /// {"summary", "node_names", "tables", "strings"}.
    fn finish(&mut self, py: Python<'_>) -> PyResult<PyObject> {
        self.run_until(py, u64::MAX)?;
        let mut sim = self.inner.take().ok_or_else(|| SimulationError::new_err("the simulation failed earlier"))?;
        let (sim, out) = py.allow_threads(move || {
            let r = guarded(|| sim.finish());
            (if r.is_ok() { Some(sim) } else { None }, r)
        });
        self.inner = sim;
        convert::output_to_py(py, out?)
    }
}

/// Events the core processes between two checks for signals (about 10-100 ms).
const EVENTS_PER_SLICE: u64 = 1 << 20;

impl Simulation {
    /// One slice of the run with the GIL released. A panic drops the
    /// simulation (its state is unknown); a stall keeps it (its state is intact).
    fn advance(&mut self, py: Python<'_>, limit: SimTime) -> PyResult<Progress> {
        let mut sim = self.inner.take().ok_or_else(|| SimulationError::new_err("the simulation failed earlier"))?;
        let (sim, res) = py.allow_threads(move || {
            let r = guarded(|| sim.advance(limit, EVENTS_PER_SLICE));
            (if r.is_ok() { Some(sim) } else { None }, r)
        });
        self.inner = sim;
        res?.map_err(|e| SimulationError::new_err(e.to_string()))
    }
}

/// The resolved scenario `scenario_json` with the core's defaults filled in
/// for every field it leaves out (checks that they agree with the schema's).
#[pyfunction]
fn fill_defaults(scenario_json: &str) -> PyResult<String> {
    let sc = guarded(|| Scenario::from_json(scenario_json))?.map_err(|e| ConfigError::new_err(e.to_string()))?;
    guarded(|| sc.to_json())
}

/// The estimated bytes the world of a resolved scenario takes before its
/// first event (`sim/limits.rs`); raises ConfigError where a limit is passed,
/// as building it would.
#[pyfunction]
fn estimate_memory(scenario_json: &str) -> PyResult<u64> {
    let sc = guarded(|| Scenario::from_json(scenario_json))?.map_err(|e| ConfigError::new_err(e.to_string()))?;
    guarded(|| fabricsim_core::sim::limits::estimated_world_bytes(&sc))?
        .map_err(|e| ConfigError::new_err(e.to_string()))
}

/// The models registered from outside the core, as JSON:
/// `{"buffer": {name: {"summary", "schema"}}, "rate_cc": {...}}`.
#[pyfunction]
fn extensions() -> PyResult<String> {
    use fabricsim_core::extension::{buffer_policy, rate_cc};
    guarded(|| {
        let mut buffer = serde_json::Map::new();
        for n in buffer_policy::names() {
            if let Some(i) = buffer_policy::info(&n) {
                buffer.insert(n, serde_json::json!({"summary": i.summary, "schema": i.schema}));
            }
        }
        let mut rate = serde_json::Map::new();
        for n in rate_cc::names() {
            if let Some(i) = rate_cc::info(&n) {
                rate.insert(n, serde_json::json!({"summary": i.summary, "schema": i.schema}));
            }
        }
        serde_json::json!({"buffer": buffer, "rate_cc": rate}).to_string()
    })
}

/// Checks the parameters of registered model `name` (`kind`: "buffer" or
/// "rate_cc") as its factory would; raises `ConfigError` with the field
/// (`params.<field>` / `cc_params.<field>`, or `model` / `cc` for an
/// unknown name). `classes`: the scenario's classes.
#[pyfunction]
fn check_extension_params(kind: &str, name: &str, params_json: &str, classes: usize) -> PyResult<()> {
    use fabricsim_core::extension::{buffer_policy, rate_cc};
    let params: serde_json::Value =
        serde_json::from_str(params_json).map_err(|e| ConfigError::new_err(format!("params: {e}")))?;
    let res = guarded(|| match kind {
        "buffer" => buffer_policy::validate(name, &params, &[100_000_000_000; 2], classes.clamp(1, 8)),
        "rate_cc" => rate_cc::validate(name, &params),
        other => {
            Err(fabricsim_core::ConfigError::new("kind", format!("unknown value '{other}'; allowed: buffer, rate_cc")))
        }
    })?;
    res.map_err(|e| ConfigError::new_err(e.to_string()))
}

/// Panics inside the same guard as every call into the core, to check that a
/// panic reaches Python as `SimulationError` (used by the tests only).
#[pyfunction]
fn _panic_in_core(message: &str) -> PyResult<()> {
    guarded(|| panic!("{message}"))
}

/// How this core was compiled, as `fabricsim bench` reports it: "debug" or
/// "optimized", with profile-guided optimization named when
/// `scripts/build-pgo.sh` built it (it sets `FABRICSIM_PGO` to `generate` for
/// the instrumented build it trains and to `use` for the final one).
fn build_flavor() -> &'static str {
    match (cfg!(debug_assertions), option_env!("FABRICSIM_PGO")) {
        (true, _) => "debug",
        (false, Some("use")) => "optimized, profile-guided",
        (false, Some("generate")) => "instrumented for profiling (slow)",
        (false, _) => "optimized",
    }
}

/// The cargo features this core was built with (`example-extensions`: the
/// example crate's controllers are registered when the module loads).
fn features() -> Vec<&'static str> {
    let mut f = Vec::new();
    if cfg!(feature = "example-extensions") {
        f.push("example-extensions");
    }
    if cfg!(feature = "example-buffer") {
        f.push("example-buffer");
    }
    f
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Simulation>()?;
    m.add_function(wrap_pyfunction!(_panic_in_core, m)?)?;
    m.add_function(wrap_pyfunction!(fill_defaults, m)?)?;
    m.add_function(wrap_pyfunction!(estimate_memory, m)?)?;
    m.add_function(wrap_pyfunction!(extensions, m)?)?;
    m.add_function(wrap_pyfunction!(check_extension_params, m)?)?;
    // Models built into this package from crates outside the core.
    #[cfg(feature = "example-buffer")]
    fabricsim_ext_example_buffer::register();
    m.add("ConfigError", m.py().get_type::<ConfigError>())?;
    m.add("SimulationError", m.py().get_type::<SimulationError>())?;
    m.add("WorldTooLarge", m.py().get_type::<WorldTooLarge>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("BUILD", build_flavor())?;
    py_cc::add(m)?;
    #[cfg(feature = "example-extensions")]
    fabricsim_ext_example::register();
    m.add("FEATURES", features())?;
    Ok(())
}
