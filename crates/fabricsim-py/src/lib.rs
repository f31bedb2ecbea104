//! Python bindings for fabricsim-core: conversion only, no model logic.
//!
//! The resolved scenario comes in as JSON text; results go out as a dict of
//! little-endian column buffers. The GIL is released while the core runs, and
//! a Rust panic is caught and raised as `SimulationError`, never propagated.

mod convert;

use fabricsim_core::{Scenario, Simulation as CoreSim};
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
    catch_unwind(AssertUnwindSafe(f))
        .map_err(|e| SimulationError::new_err(format!("internal error in the simulation core: {}", panic_message(e))))
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
    #[new]
    fn new(py: Python<'_>, scenario_json: &str) -> PyResult<Self> {
        let built =
            py.allow_threads(|| guarded(|| Scenario::from_json(scenario_json).and_then(|sc| CoreSim::new(&sc))))?;
        built.map(|s| Simulation { inner: Some(s) }).map_err(|e| ConfigError::new_err(e.to_string()))
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
    fn run_until(&mut self, py: Python<'_>, t_ps: u64) -> PyResult<bool> {
        let mut sim = self.inner.take().ok_or_else(|| SimulationError::new_err("the simulation failed earlier"))?;
        let (sim, res) = py.allow_threads(move || {
            let r = guarded(|| sim.run_until(fabricsim_core::units::SimTime(t_ps)));
            (if r.is_ok() { Some(sim) } else { None }, r)
        });
        self.inner = sim;
        res
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

    /// Runs to completion and returns {"summary", "node_names", "tables", "strings"}.
    fn finish(&mut self, py: Python<'_>) -> PyResult<PyObject> {
        let mut sim = self.inner.take().ok_or_else(|| SimulationError::new_err("the simulation failed earlier"))?;
        let (sim, out) = py.allow_threads(move || {
            let r = guarded(|| sim.finish());
            (if r.is_ok() { Some(sim) } else { None }, r)
        });
        self.inner = sim;
        convert::output_to_py(py, out?)
    }
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Simulation>()?;
    m.add("ConfigError", m.py().get_type::<ConfigError>())?;
    m.add("SimulationError", m.py().get_type::<SimulationError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
