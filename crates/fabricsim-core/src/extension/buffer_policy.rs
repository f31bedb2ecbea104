//! The registry of switch-buffer admission policies
//! ([`AdmissionPolicy`](crate::buffer::AdmissionPolicy)) by name.
//!
//! A crate calls [`register`] once (before building a simulation) with the
//! policy's name, a JSON Schema of its parameters and a factory. A scenario's
//! switch buffer `{"model": "<name>", "params": {...}}` makes the core call the
//! factory once per switch with the parameters, read through [`Params`], which
//! names the field and the allowed values of anything wrong. The Python front
//! end asks for [`names`] and [`schema`] through the bindings.
//!
//! [`Params`] and [`ParamError`] are shared by the rate-controller registry
//! (`rate_cc.rs`).

use crate::buffer::{AdmissionPolicy, BUILTIN_MODELS};
use crate::error::ConfigError;
use serde_json::Value;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::RwLock;

/// What a factory knows of the device it builds a policy for.
#[derive(Clone, Copy, Debug)]
pub struct DeviceContext<'a> {
    /// Line rate of each egress port (index = local port), bit/s.
    pub port_rates_bps: &'a [u64],
    /// Classes (queues per port).
    pub classes: usize,
}

/// A parameter the factory refused: `field` (inside `params`) and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamError {
    pub field: String,
    pub message: String,
}

impl ParamError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> ParamError {
        ParamError { field: field.into(), message: message.into() }
    }
}

/// Builds a policy for one device from its checked parameters.
pub type BufferPolicyFactory = fn(&Params<'_>, &DeviceContext<'_>) -> Result<Box<dyn AdmissionPolicy>, ParamError>;

/// A registered policy.
#[derive(Clone, Debug)]
pub struct BufferPolicyInfo {
    /// The name scenarios give as the buffer's `model`.
    pub name: String,
    /// One line on what it does.
    pub summary: String,
    /// JSON Schema of `params` (an object schema).
    pub schema: Value,
    pub factory: BufferPolicyFactory,
}

static REGISTRY: RwLock<BTreeMap<String, BufferPolicyInfo>> = RwLock::new(BTreeMap::new());

/// Registers a policy. Registering the same name again with the same factory
/// is a no-op (crates may call their `register` more than once); a built-in
/// model's name, or a name taken by another factory, is refused.
pub fn register(info: BufferPolicyInfo) -> Result<(), String> {
    if BUILTIN_MODELS.contains(&info.name.as_str()) {
        return Err(format!("'{}' is a built-in buffer model", info.name));
    }
    check_name(&info.name)?;
    let mut r = REGISTRY.write().unwrap_or_else(|e| e.into_inner());
    if let Some(old) = r.get(&info.name) {
        if old.factory as usize == info.factory as usize {
            return Ok(());
        }
        return Err(format!("buffer policy '{}' is already registered", info.name));
    }
    r.insert(info.name.clone(), info);
    Ok(())
}

/// Names of the registered policies, sorted.
pub fn names() -> Vec<String> {
    REGISTRY.read().unwrap_or_else(|e| e.into_inner()).keys().cloned().collect()
}

/// The registered policy `name`, if any.
pub fn info(name: &str) -> Option<BufferPolicyInfo> {
    REGISTRY.read().unwrap_or_else(|e| e.into_inner()).get(name).cloned()
}

/// The JSON Schema of policy `name`'s parameters.
pub fn schema(name: &str) -> Option<Value> {
    info(name).map(|i| i.schema)
}

/// Every model a buffer may name: the built-in ones, then the registered ones.
pub fn allowed_models() -> Vec<String> {
    BUILTIN_MODELS.iter().map(|s| s.to_string()).chain(names()).collect()
}

/// Builds policy `name` with `params` for a device; `path` names the buffer
/// section in errors (`<path>.model`, `<path>.params.<field>`).
pub fn build(
    name: &str,
    params: &Value,
    ctx: &DeviceContext<'_>,
    path: &str,
) -> Result<Box<dyn AdmissionPolicy>, ConfigError> {
    let Some(info) = info(name) else {
        return Err(ConfigError::new(
            format!("{path}.model"),
            format!("unknown value '{name}'; allowed: {}", allowed_models().join(", ")),
        ));
    };
    let p = Params::new(params).map_err(|e| e.at(&format!("{path}.params")))?;
    let policy = (info.factory)(&p, ctx).map_err(|e| e.at(&format!("{path}.params")))?;
    p.finish().map_err(|e| e.at(&format!("{path}.params")))?;
    Ok(policy)
}

/// Checks `params` of policy `name` as [`build`] would, for a device with
/// ports of `port_rates_bps` (the front end checks a scenario before it knows
/// the topology's rates, and passes stand-ins).
pub fn validate(name: &str, params: &Value, port_rates_bps: &[u64], classes: usize) -> Result<(), ConfigError> {
    build(name, params, &DeviceContext { port_rates_bps, classes }, "buffer").map(|_| ()).map_err(|e| {
        // Paths relative to the buffer section: `model` or `params.<field>`.
        ConfigError::new(e.path.strip_prefix("buffer.").unwrap_or(&e.path).to_string(), e.message)
    })
}

pub(super) fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_') {
        return Err(format!("name '{name}' must be lowercase letters, digits and '_'"));
    }
    Ok(())
}

impl ParamError {
    pub(super) fn at(self, prefix: &str) -> ConfigError {
        if self.field.is_empty() {
            ConfigError::new(prefix.to_string(), self.message)
        } else {
            ConfigError::new(format!("{prefix}.{}", self.field), self.message)
        }
    }
}

/// The `params` object of a registered model, read field by field. Every
/// field read is remembered; once the factory returns, a field it did not read
/// is an error listing the ones it did ("unknown key").
#[derive(Debug)]
pub struct Params<'a> {
    map: Option<&'a serde_json::Map<String, Value>>,
    read: RefCell<Vec<String>>,
}

impl<'a> Params<'a> {
    /// `params` must be an object (or null / absent: no parameters).
    pub fn new(v: &'a Value) -> Result<Params<'a>, ParamError> {
        let map = match v {
            Value::Null => None,
            Value::Object(m) => Some(m),
            other => return Err(ParamError::new("", format!("must be a mapping of parameters, got {other}"))),
        };
        Ok(Params { map, read: RefCell::new(Vec::new()) })
    }

    fn get(&self, name: &str) -> Option<&'a Value> {
        self.read.borrow_mut().push(name.to_string());
        self.map.and_then(|m| m.get(name)).filter(|v| !v.is_null())
    }

    /// A number in `[min, max]`; `default` when absent (`None`: required).
    pub fn f64(&self, name: &str, default: Option<f64>, min: f64, max: f64) -> Result<f64, ParamError> {
        let x = match self.get(name) {
            None => default.ok_or_else(|| ParamError::new(name, "required field is missing"))?,
            Some(v) => v.as_f64().ok_or_else(|| ParamError::new(name, format!("must be a number, got {v}")))?,
        };
        if !(min..=max).contains(&x) {
            return Err(ParamError::new(name, format!("{x} is out of range; allowed: {min} to {max}")));
        }
        Ok(x)
    }

    /// An integer in `[min, max]`; `default` when absent (`None`: required).
    pub fn u64(&self, name: &str, default: Option<u64>, min: u64, max: u64) -> Result<u64, ParamError> {
        let x = match self.get(name) {
            None => default.ok_or_else(|| ParamError::new(name, "required field is missing"))?,
            Some(v) => {
                v.as_u64().ok_or_else(|| ParamError::new(name, format!("must be a whole number >= 0, got {v}")))?
            }
        };
        if !(min..=max).contains(&x) {
            return Err(ParamError::new(name, format!("{x} is out of range; allowed: {min} to {max}")));
        }
        Ok(x)
    }

    /// A boolean; `default` when absent.
    pub fn bool(&self, name: &str, default: bool) -> Result<bool, ParamError> {
        match self.get(name) {
            None => Ok(default),
            Some(v) => v.as_bool().ok_or_else(|| ParamError::new(name, format!("must be true or false, got {v}"))),
        }
    }

    /// One of `allowed` strings; `default` when absent.
    pub fn choice(&self, name: &str, default: &'static str, allowed: &[&'static str]) -> Result<&'a str, ParamError> {
        let Some(v) = self.get(name) else {
            return Ok(default);
        };
        match v.as_str() {
            Some(s) if allowed.contains(&s) => Ok(s),
            _ => Err(ParamError::new(name, format!("unknown value {v}; allowed: {}", allowed.join(", ")))),
        }
    }

    /// One number per class, or one for all of them (`classes` values out).
    pub fn f64_per_class(
        &self,
        name: &str,
        default: f64,
        min: f64,
        max: f64,
        classes: usize,
    ) -> Result<Vec<f64>, ParamError> {
        let Some(Value::Array(items)) = self.get(name) else {
            let one = self.f64(name, Some(default), min, max)?;
            return Ok(vec![one; classes]);
        };
        if items.len() != 1 && items.len() != classes {
            return Err(ParamError::new(
                name,
                format!("expected 1 or {classes} values (one per class), got {}", items.len()),
            ));
        }
        let mut out = Vec::with_capacity(classes);
        for (i, v) in items.iter().enumerate() {
            let field = format!("{name}[{i}]");
            let x = v.as_f64().ok_or_else(|| ParamError::new(&field, format!("must be a number, got {v}")))?;
            if !(min..=max).contains(&x) {
                return Err(ParamError::new(field, format!("{x} is out of range; allowed: {min} to {max}")));
            }
            out.push(x);
        }
        if out.len() == 1 {
            out = vec![out[0]; classes];
        }
        Ok(out)
    }

    /// Fails on a field the factory did not read.
    pub fn finish(&self) -> Result<(), ParamError> {
        let Some(m) = self.map else { return Ok(()) };
        let read = self.read.borrow();
        if let Some(k) = m.keys().find(|k| !read.contains(k)) {
            let mut allowed: Vec<&str> = read.iter().map(|s| s.as_str()).collect();
            allowed.sort_unstable();
            allowed.dedup();
            return Err(ParamError::new(k.as_str(), format!("unknown key '{k}'; allowed: {}", allowed.join(", "))));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::{AdmitRequest, BufferView, Verdict};
    use serde_json::json;

    #[derive(Debug)]
    struct Cap(u64);
    impl AdmissionPolicy for Cap {
        fn capacity_bytes(&self) -> u64 {
            self.0
        }
        fn admit(&mut self, _r: &AdmitRequest, _v: &BufferView<'_>) -> Verdict {
            Verdict::Admit
        }
    }

    fn cap_factory(p: &Params<'_>, _ctx: &DeviceContext<'_>) -> Result<Box<dyn AdmissionPolicy>, ParamError> {
        Ok(Box::new(Cap(p.u64("size", None, 1, u64::MAX)?)))
    }

    fn other_factory(_p: &Params<'_>, _ctx: &DeviceContext<'_>) -> Result<Box<dyn AdmissionPolicy>, ParamError> {
        Ok(Box::new(Cap(1)))
    }

    fn info(name: &str, factory: BufferPolicyFactory) -> BufferPolicyInfo {
        BufferPolicyInfo { name: name.into(), summary: "test".into(), schema: json!({"type": "object"}), factory }
    }

    #[test]
    fn registry_builds_by_name_and_checks_params() {
        register(info("test_cap", cap_factory)).unwrap();
        register(info("test_cap", cap_factory)).unwrap();
        assert!(register(info("test_cap", other_factory)).unwrap_err().contains("already registered"));
        assert!(register(info("shared", cap_factory)).unwrap_err().contains("built-in"));
        assert!(register(info("Bad-Name", cap_factory)).is_err());
        assert!(names().contains(&"test_cap".to_string()));
        let ctx = DeviceContext { port_rates_bps: &[1], classes: 1 };
        let p = build("test_cap", &json!({"size": 9000}), &ctx, "sw.buffer").unwrap();
        assert_eq!(p.capacity_bytes(), 9000);
        let e = build("test_cap", &json!({}), &ctx, "sw.buffer").unwrap_err();
        assert_eq!((e.path.as_str(), e.message.as_str()), ("sw.buffer.params.size", "required field is missing"));
        let e = build("test_cap", &json!({"size": 1, "alpha": 2}), &ctx, "sw.buffer").unwrap_err();
        assert_eq!(e.path, "sw.buffer.params.alpha");
        assert!(e.message.contains("unknown key 'alpha'; allowed: size"), "{}", e.message);
        let e = build("test_cap", &json!({"size": -3}), &ctx, "sw.buffer").unwrap_err();
        assert!(e.message.contains("whole number"), "{}", e.message);
        let e = build("no_such", &json!({}), &ctx, "sw.buffer").unwrap_err();
        assert_eq!(e.path, "sw.buffer.model");
        assert!(e.message.starts_with("unknown value 'no_such'; allowed: static, shared, voq, intelligent"));
        assert!(e.message.contains("test_cap"));
        let e = validate("test_cap", &json!({"size": 0}), &[1], 1).unwrap_err();
        assert_eq!(e.path, "params.size");
        assert!(e.message.contains("out of range; allowed: 1 to"), "{}", e.message);
    }
}
