//! Conversion of core outputs to Python objects.

use fabricsim_core::stats::{Column, RunOutput, Value};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

fn le_bytes<T: Copy, const N: usize>(v: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
    let mut out = Vec::with_capacity(v.len() * N);
    for &x in v {
        out.extend_from_slice(&f(x));
    }
    out
}

fn column<'py>(py: Python<'py>, c: &Column) -> (&'static str, Bound<'py, PyBytes>) {
    let (dtype, bytes) = match c {
        Column::U8(v) => ("u8", v.clone()),
        Column::U32(v) => ("u32", le_bytes(v, u32::to_le_bytes)),
        Column::U64(v) => ("u64", le_bytes(v, u64::to_le_bytes)),
        Column::I64(v) => ("i64", le_bytes(v, i64::to_le_bytes)),
        Column::F64(v) => ("f64", le_bytes(v, f64::to_le_bytes)),
        Column::Bool(v) => ("bool", v.iter().map(|&b| b as u8).collect()),
        Column::Cat { codes, .. } => ("u32", le_bytes(codes, u32::to_le_bytes)),
    };
    (dtype, PyBytes::new(py, &bytes))
}

pub fn output_to_py(py: Python<'_>, out: RunOutput) -> PyResult<PyObject> {
    let result = PyDict::new(py);
    let summary = PyDict::new(py);
    for (k, v) in &out.summary {
        match v {
            Value::Int(i) => summary.set_item(k, i)?,
            Value::Float(f) => summary.set_item(k, f)?,
            Value::Bool(b) => summary.set_item(k, b)?,
            Value::Str(s) => summary.set_item(k, s)?,
        }
    }
    result.set_item("summary", summary)?;
    result.set_item("node_names", PyList::new(py, &out.node_names)?)?;
    let tables = PyDict::new(py);
    let strings = PyDict::new(py);
    for (name, table) in &out.tables {
        let cols = PyDict::new(py);
        for (cname, col) in &table.columns {
            cols.set_item(cname, column(py, col))?;
            if let Column::Cat { labels, .. } = col {
                strings.set_item(format!("{name}.{cname}"), PyList::new(py, labels)?)?;
            }
        }
        tables.set_item(name, cols)?;
    }
    result.set_item("tables", tables)?;
    result.set_item("strings", strings)?;
    Ok(result.into_any().unbind())
}
