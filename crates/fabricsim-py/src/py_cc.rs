//! TCP congestion controllers for the Python side: the registry's listing
//! and parameter checks, and controllers written as Python classes, called
//! from the core through [`CongestionOps`].
//!
//! A Python controller is a class registered under a name
//! (`fabricsim.extensions.register_cc`); the core makes one instance per
//! connection (`cls(params, conn)`) and calls its methods with the GIL
//! taken for each call. Before each call the instance's `cwnd` and
//! `ssthresh` attributes are set from the sender's window and after it they
//! are read back (with `pacing_rate`), so a method changes the window by
//! assigning them. An exception raised by a method ends the run and reaches
//! the caller as itself (see [`take_failure`]).

use fabricsim_core::extension::tcp_cc::{self, CcFactory, ParamError, Registration};
use fabricsim_core::transport::tcp::cc::{AckInfo, CcInit, CcState, CongestionOps, LossInfo, SlowStartExit, Window};
use fabricsim_core::units::{Rate, SimTime};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde_json::Value;
use std::sync::Arc;

/// The payload a Python controller's exception unwinds with, up to the
/// bindings' guard, which raises the exception itself.
pub struct PyCcFailure(pub PyErr);

/// The Python exception a controller raised, if the unwind `payload` is one.
pub fn take_failure(payload: Box<dyn std::any::Any + Send>) -> Result<PyErr, Box<dyn std::any::Any + Send>> {
    payload.downcast::<PyCcFailure>().map(|f| f.0)
}

fn fail(name: &str, what: &str, e: PyErr) -> ! {
    let err = Python::with_gil(|py| {
        let msg = format!("congestion controller '{name}' failed in {what}: {e}");
        let new = PyErr::new::<pyo3::exceptions::PyRuntimeError, _>(msg);
        new.set_cause(py, Some(e));
        new
    });
    std::panic::resume_unwind(Box::new(PyCcFailure(err)))
}

/// What one ACK of new data tells a Python controller (`ack` of its methods).
#[pyclass(module = "fabricsim._core", name = "CcAck", frozen, get_all)]
pub struct CcAck {
    /// Simulated time, picoseconds.
    now_ps: u64,
    /// Bytes newly acknowledged (with SACK, in `cong_avoid`: bytes delivered, SACKed ones included).
    acked: u64,
    /// The cumulative ACK.
    ack: u64,
    /// Next sequence number to be sent.
    snd_nxt: u64,
    /// Bytes in flight after this ACK.
    flight: u64,
    /// The ACK carried ECN-Echo.
    ece: bool,
    /// RTT sample of this ACK (timestamp echo), smoothed RTT and minimum RTT, picoseconds; None when unknown.
    rtt_ps: Option<u64>,
    srtt_ps: Option<u64>,
    min_rtt_ps: Option<u64>,
    /// Recovery state when the ACK arrived: "open", "cwr", "recovery" or "loss".
    state: &'static str,
    /// Payload bytes per segment.
    mss: u64,
}

impl CcAck {
    fn new(w: &Window, a: &AckInfo) -> Self {
        CcAck {
            now_ps: a.now.0,
            acked: a.acked,
            ack: a.ack,
            snd_nxt: a.snd_nxt,
            flight: a.flight,
            ece: a.ece,
            rtt_ps: a.rtt_sample.map(|t| t.0),
            srtt_ps: a.srtt.map(|t| t.0),
            min_rtt_ps: a.min_rtt.map(|t| t.0),
            state: a.state.name(),
            mss: w.mss,
        }
    }
}

/// What a congestion event tells a Python controller (`on_loss`).
#[pyclass(module = "fabricsim._core", name = "CcLoss", frozen, get_all)]
pub struct CcLoss {
    now_ps: u64,
    /// The bytes the reduction is based on (`tcp.ssthresh_from`: FlightSize by default).
    flight: u64,
    mss: u64,
}

/// A connection's facts when its controller is made (`conn` of `__init__`).
#[pyclass(module = "fabricsim._core", name = "CcConnection", frozen, get_all)]
pub struct CcConnection {
    /// Payload bytes per segment.
    mss: u64,
    /// Initial window, bytes.
    cwnd: u64,
    /// The flow's index in the flows table.
    flow: u32,
    /// A seed of the controller's own (drawn from the core's `("tcp-cc", flow)` stream):
    /// seed `random.Random(conn.seed)` with it; never use the global RNG or the wall clock.
    seed: u64,
}

/// Which optional methods a registered class defines (looked up once).
#[derive(Clone, Copy, Debug, Default)]
struct Methods {
    on_ack: bool,
    cong_avoid: bool,
    on_timeout: bool,
    on_state: bool,
    on_ecn: bool,
    handles_ecn: bool,
    pacing: bool,
}

/// One connection's Python controller.
#[derive(Debug)]
struct PyController {
    name: Arc<str>,
    obj: Py<PyAny>,
    methods: Methods,
    /// The latest `pacing_rate` the instance set (bit/s; 0: no pacing).
    pacing: Option<Rate>,
}

impl PyController {
    /// Calls `method(arg)` with the window exchanged through `cwnd` and
    /// `ssthresh`; returns the call's result.
    fn call(&mut self, w: &mut Window, method: &str, arg: impl FnOnce(Python<'_>) -> PyResult<PyObject>) -> PyObject {
        let r = Python::with_gil(|py| -> PyResult<PyObject> {
            let o = self.obj.bind(py);
            o.setattr("cwnd", w.cwnd)?;
            o.setattr("ssthresh", w.ssthresh)?;
            let a = arg(py)?;
            let out = o.call_method1(method, (a,))?.unbind();
            w.cwnd = o.getattr("cwnd")?.extract::<u64>()?.max(1);
            w.ssthresh = o.getattr("ssthresh")?.extract::<u64>()?;
            if self.methods.pacing {
                self.pacing = o.getattr("pacing_rate")?.extract::<Option<u64>>()?.map(Rate);
            }
            Ok(out)
        });
        r.unwrap_or_else(|e| fail(&self.name, method, e))
    }
}

impl CongestionOps for PyController {
    fn name(&self) -> &str {
        &self.name
    }

    fn on_ack(&mut self, w: &mut Window, ack: &AckInfo) {
        if self.methods.on_ack {
            let a = CcAck::new(w, ack);
            self.call(w, "on_ack", |py| Ok(Py::new(py, a)?.into_any()));
        }
    }

    fn handles_ecn(&self) -> bool {
        self.methods.handles_ecn
    }

    fn on_ecn(&mut self, w: &mut Window, ack: &AckInfo) -> bool {
        if !self.methods.on_ecn {
            return false;
        }
        let a = CcAck::new(w, ack);
        let out = self.call(w, "on_ecn", |py| Ok(Py::new(py, a)?.into_any()));
        let name = self.name.clone();
        Python::with_gil(|py| out.bind(py).is_truthy()).unwrap_or_else(|e| fail(&name, "on_ecn", e))
    }

    fn cong_avoid(&mut self, w: &mut Window, ack: &AckInfo) {
        if self.methods.cong_avoid {
            let a = CcAck::new(w, ack);
            self.call(w, "cong_avoid", |py| Ok(Py::new(py, a)?.into_any()));
        }
    }

    fn ssthresh(&mut self, w: &Window, loss: &LossInfo) -> u64 {
        let mut copy = *w;
        let l = CcLoss { now_ps: loss.now.0, flight: loss.flight, mss: w.mss };
        let out = self.call(&mut copy, "on_loss", |py| Ok(Py::new(py, l)?.into_any()));
        let name = self.name.clone();
        Python::with_gil(|py| out.bind(py).extract::<u64>())
            .unwrap_or_else(|e| fail(&name, "on_loss (it must return the new ssthresh in bytes)", e))
    }

    fn on_timeout(&mut self, w: &Window, now: SimTime) {
        if self.methods.on_timeout {
            let mut copy = *w;
            self.call(&mut copy, "on_timeout", |py| Ok(now.0.into_pyobject(py)?.into_any().unbind()));
        }
    }

    fn set_state(&mut self, w: &Window, state: CcState, _now: SimTime) {
        if self.methods.on_state {
            let mut copy = *w;
            self.call(&mut copy, "on_state", |py| Ok(state.name().into_pyobject(py)?.into_any().unbind()));
        }
    }

    fn pacing_rate(&self) -> Option<Rate> {
        self.pacing
    }

    fn slow_start_exit(&self) -> Option<SlowStartExit> {
        None
    }

    fn clone_box(&self) -> Box<dyn CongestionOps> {
        let obj = Python::with_gil(|py| self.obj.clone_ref(py));
        Box::new(PyController { name: self.name.clone(), obj, methods: self.methods, pacing: self.pacing })
    }
}

/// The factory of a registered Python class: `check(params) -> None |
/// (field, message)` checks parameters, `cls(params, conn)` makes a controller.
struct PyFactory {
    name: Arc<str>,
    cls: Py<PyAny>,
    check: Py<PyAny>,
    methods: Methods,
}

fn to_py(py: Python<'_>, v: &Value) -> PyResult<PyObject> {
    let json = py.import("json")?;
    Ok(json.call_method1("loads", (v.to_string(),))?.unbind())
}

impl CcFactory for PyFactory {
    fn validate(&self, params: &Value) -> Result<(), ParamError> {
        Python::with_gil(|py| -> PyResult<Option<(String, String)>> {
            let p = to_py(py, params)?;
            self.check.bind(py).call1((p,))?.extract()
        })
        .map_err(|e| ParamError::new("", format!("the parameter check raised {e}")))?
        .map_or(Ok(()), |(field, message)| Err(ParamError::new(field, message)))
    }

    fn create(&self, params: &Value, mut init: CcInit) -> Box<dyn CongestionOps> {
        let conn = CcConnection { mss: init.mss, cwnd: init.window.cwnd, flow: init.flow, seed: init.rng.next_u64() };
        let empty = Value::Object(Default::default());
        let params = if params.is_null() { &empty } else { params };
        let obj = Python::with_gil(|py| -> PyResult<Py<PyAny>> {
            let p = to_py(py, params)?;
            Ok(self.cls.bind(py).call1((p, Py::new(py, conn)?))?.unbind())
        })
        .unwrap_or_else(|e| fail(&self.name, "__init__", e));
        Box::new(PyController { name: self.name.clone(), obj, methods: self.methods, pacing: None })
    }
}

/// Registers the Python class `cls` as controller `name`.
#[pyfunction]
#[pyo3(signature = (name, cls, check, schema_json, summary, replace=false))]
fn register_tcp_cc(
    py: Python<'_>,
    name: &str,
    cls: Py<PyAny>,
    check: Py<PyAny>,
    schema_json: &str,
    summary: &str,
    replace: bool,
) -> PyResult<()> {
    let schema: Value = serde_json::from_str(schema_json).map_err(|e| PyValueError::new_err(format!("schema: {e}")))?;
    let c = cls.bind(py);
    let has = |m: &str| c.hasattr(m).unwrap_or(false);
    if !has("on_loss") {
        return Err(PyValueError::new_err(format!(
            "{name}: the class needs an on_loss(self, loss) method returning ssthresh"
        )));
    }
    let handles_ecn = c.getattr("handles_ecn").ok().is_some_and(|v| v.is_truthy().unwrap_or(false));
    let methods = Methods {
        on_ack: has("on_ack"),
        cong_avoid: has("cong_avoid"),
        on_timeout: has("on_timeout"),
        on_state: has("on_state"),
        on_ecn: handles_ecn && has("on_ecn"),
        handles_ecn,
        pacing: has("pacing_rate"),
    };
    let factory = PyFactory { name: Arc::from(name), cls, check, methods };
    let reg = Registration::new(name, summary, schema, factory);
    let r = if replace { tcp_cc::register_or_replace(reg).map(|_| ()) } else { tcp_cc::register(reg) };
    r.map_err(PyValueError::new_err)
}

/// Removes a registered controller; returns whether it was there.
#[pyfunction]
fn unregister_tcp_cc(name: &str) -> bool {
    tcp_cc::unregister(name)
}

/// The registered controllers: a list of `{name, summary, schema}` (schema as JSON text).
#[pyfunction]
fn tcp_cc_registered(py: Python<'_>) -> PyResult<PyObject> {
    let list = pyo3::types::PyList::empty(py);
    for r in tcp_cc::registered() {
        let d = PyDict::new(py);
        d.set_item("name", &r.name)?;
        d.set_item("summary", &r.summary)?;
        d.set_item("schema", r.schema.to_string())?;
        list.append(d)?;
    }
    Ok(list.into_any().unbind())
}

/// Checks a registered controller's parameters (JSON text): None when they
/// pass, else `(field, message)` (field relative to `tcp.cc_params`).
#[pyfunction]
fn tcp_cc_check(py: Python<'_>, name: &str, params_json: &str) -> PyResult<Option<(String, String)>> {
    let params: Value = serde_json::from_str(params_json).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let reg = tcp_cc::lookup(name).ok_or_else(|| PyValueError::new_err(format!("no controller named '{name}'")))?;
    // A Python factory's check takes the GIL itself.
    Ok(py.allow_threads(|| reg.factory.validate(&params)).err().map(|e| (e.field, e.message)))
}

pub fn add(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<CcAck>()?;
    m.add_class::<CcLoss>()?;
    m.add_class::<CcConnection>()?;
    m.add_function(wrap_pyfunction!(register_tcp_cc, m)?)?;
    m.add_function(wrap_pyfunction!(unregister_tcp_cc, m)?)?;
    m.add_function(wrap_pyfunction!(tcp_cc_registered, m)?)?;
    m.add_function(wrap_pyfunction!(tcp_cc_check, m)?)?;
    Ok(())
}
