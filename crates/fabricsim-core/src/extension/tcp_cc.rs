//! The registry of TCP congestion controllers made outside the core.
//!
//! ```ignore
//! use fabricsim_core::extension::tcp_cc::{self, CcFactory, ParamError, Params};
//! struct MyFactory;
//! impl CcFactory for MyFactory {
//!     fn validate(&self, params: &serde_json::Value) -> Result<(), ParamError> { ... }
//!     fn create(&self, params: &serde_json::Value, init: CcInit) -> Box<dyn CongestionOps> { ... }
//! }
//! tcp_cc::register(tcp_cc::Registration::new("mine", "one line", schema, MyFactory))?;
//! ```
//!
//! A scenario then says `tcp: {cc: mine, cc_params: {...}}`. The factory's
//! [`CcFactory::validate`] runs once per TCP configuration when the world is
//! built; [`CcFactory::create`] once per connection, with the connection's
//! MSS, initial window, flow index and a random stream of its own
//! ([`CcInit`]). The names of the built-in controllers cannot be taken.

use crate::error::ConfigError;
use crate::transport::tcp::cc::{CcInit, CongestionOps};
use crate::transport::tcp::config::CcExtension;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock, RwLock};

/// The built-in controllers' names, as `tcp.cc` takes them.
pub const BUILT_IN: &[&str] = &["newreno", "cubic", "dctcp", "htcp"];

/// A parameter that a factory refuses: the field (relative to
/// `tcp.cc_params`, empty for the whole object) and why, with the allowed
/// values or range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamError {
    pub field: String,
    pub message: String,
}

impl ParamError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        ParamError { field: field.into(), message: message.into() }
    }
}

/// Makes the controllers of one registered kind.
pub trait CcFactory: Send + Sync {
    /// Checks `params` (`tcp.cc_params`, JSON `null` when left out).
    fn validate(&self, params: &Value) -> Result<(), ParamError>;
    /// A controller for one connection; `params` passed [`Self::validate`].
    fn create(&self, params: &Value, init: CcInit) -> Box<dyn CongestionOps>;
}

/// One registered controller kind.
#[derive(Clone)]
pub struct Registration {
    pub name: String,
    /// One line for listings.
    pub summary: String,
    /// JSON Schema of `tcp.cc_params` (an object schema), for editors and the
    /// Python front end's listings.
    pub schema: Value,
    pub factory: Arc<dyn CcFactory>,
}

impl Registration {
    pub fn new(
        name: impl Into<String>,
        summary: impl Into<String>,
        schema: Value,
        factory: impl CcFactory + 'static,
    ) -> Self {
        Registration { name: name.into(), summary: summary.into(), schema, factory: Arc::new(factory) }
    }
}

fn registry() -> &'static RwLock<BTreeMap<String, Registration>> {
    static R: OnceLock<RwLock<BTreeMap<String, Registration>>> = OnceLock::new();
    R.get_or_init(|| RwLock::new(BTreeMap::new()))
}

fn check_name(name: &str) -> Result<(), String> {
    if BUILT_IN.contains(&name) || name == "registered" {
        return Err(format!("'{name}' is a built-in controller's name"));
    }
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
        && name.as_bytes()[0].is_ascii_lowercase();
    if !ok {
        return Err(format!(
            "'{name}' is not a controller name: lower-case letters, digits, '_' and '-', starting with a letter"
        ));
    }
    Ok(())
}

/// Registers a controller kind; refuses a built-in's name, a malformed one,
/// and a name already registered (see [`register_or_replace`]).
pub fn register(reg: Registration) -> Result<(), String> {
    check_name(&reg.name)?;
    let mut r = registry().write().unwrap_or_else(|e| e.into_inner());
    if r.contains_key(&reg.name) {
        return Err(format!("a controller named '{}' is already registered", reg.name));
    }
    r.insert(reg.name.clone(), reg);
    Ok(())
}

/// Registers a controller kind, replacing one of the same name (the next
/// world built uses the new one). Returns whether one was replaced.
pub fn register_or_replace(reg: Registration) -> Result<bool, String> {
    check_name(&reg.name)?;
    let mut r = registry().write().unwrap_or_else(|e| e.into_inner());
    Ok(r.insert(reg.name.clone(), reg).is_some())
}

/// Removes a registered kind; returns whether it was there.
pub fn unregister(name: &str) -> bool {
    registry().write().unwrap_or_else(|e| e.into_inner()).remove(name).is_some()
}

/// The registered kinds, by name.
pub fn registered() -> Vec<Registration> {
    registry().read().unwrap_or_else(|e| e.into_inner()).values().cloned().collect()
}

/// The registered kind `name`, if any.
pub fn lookup(name: &str) -> Option<Registration> {
    registry().read().unwrap_or_else(|e| e.into_inner()).get(name).cloned()
}

/// Every name `tcp.cc` takes now: the built-ins, then the registered ones.
pub fn allowed_names() -> Vec<String> {
    BUILT_IN.iter().map(|s| s.to_string()).chain(registered().into_iter().map(|r| r.name)).collect()
}

/// The factory of a configuration's registered controller, its parameters
/// checked; `path` is the configuration's (`tcp`, `traffic[2].tcp`).
pub fn resolve(ext: &CcExtension, path: &str) -> Result<Arc<dyn CcFactory>, ConfigError> {
    let Some(reg) = lookup(&ext.name) else {
        return Err(ConfigError::new(
            format!("{path}.cc"),
            format!("unknown value '{}'; allowed: {}", ext.name, allowed_names().join(", ")),
        ));
    };
    reg.factory.validate(&ext.params).map_err(|e| {
        let field =
            if e.field.is_empty() { format!("{path}.cc_params") } else { format!("{path}.cc_params.{}", e.field) };
        ConfigError::new(field, e.message)
    })?;
    Ok(reg.factory)
}

/// Reads a factory's parameters: an object (or `null`, all defaults) with
/// known keys only, each a number in a range or a boolean, with its default.
pub struct Params<'a> {
    obj: Option<&'a serde_json::Map<String, Value>>,
}

impl<'a> Params<'a> {
    /// `params` must be `null` or an object whose keys are all in `known`.
    pub fn new(params: &'a Value, known: &[&str]) -> Result<Self, ParamError> {
        let obj = match params {
            Value::Null => None,
            Value::Object(m) => Some(m),
            other => return Err(ParamError::new("", format!("must be a mapping of parameters, not {other}"))),
        };
        if let Some(m) = obj {
            if let Some(k) = m.keys().find(|k| !known.contains(&k.as_str())) {
                return Err(ParamError::new(k.clone(), format!("unknown key; allowed: {}", known.join(", "))));
            }
        }
        Ok(Params { obj })
    }

    fn get(&self, key: &str) -> Option<&'a Value> {
        self.obj.and_then(|m| m.get(key))
    }

    /// A number in `[min, max]`, `default` when absent.
    pub fn f64(&self, key: &str, default: f64, min: f64, max: f64) -> Result<f64, ParamError> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => match v.as_f64() {
                Some(x) if x >= min && x <= max => Ok(x),
                _ => Err(ParamError::new(key, format!("must be a number from {min} to {max}, not {v}"))),
            },
        }
    }

    /// A whole number in `[min, max]`, `default` when absent.
    pub fn u64(&self, key: &str, default: u64, min: u64, max: u64) -> Result<u64, ParamError> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => match v.as_u64() {
                Some(x) if x >= min && x <= max => Ok(x),
                _ => Err(ParamError::new(key, format!("must be a whole number from {min} to {max}, not {v}"))),
            },
        }
    }

    /// `true` or `false`, `default` when absent.
    pub fn bool(&self, key: &str, default: bool) -> Result<bool, ParamError> {
        match self.get(key) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => Err(ParamError::new(key, format!("must be true or false, not {v}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::tcp::cc::{AckInfo, LossInfo, Window};
    use serde_json::json;

    #[derive(Clone, Debug)]
    struct Fixed(u64);

    impl CongestionOps for Fixed {
        fn name(&self) -> &str {
            "fixed-test"
        }
        fn cong_avoid(&mut self, w: &mut Window, _ack: &AckInfo) {
            w.cwnd = self.0;
        }
        fn ssthresh(&mut self, _w: &Window, _loss: &LossInfo) -> u64 {
            self.0
        }
        fn clone_box(&self) -> Box<dyn CongestionOps> {
            Box::new(self.clone())
        }
    }

    struct FixedFactory;

    impl CcFactory for FixedFactory {
        fn validate(&self, params: &Value) -> Result<(), ParamError> {
            Params::new(params, &["segments"])?.u64("segments", 10, 1, 1000).map(|_| ())
        }
        fn create(&self, params: &Value, init: CcInit) -> Box<dyn CongestionOps> {
            let n = Params::new(params, &["segments"]).and_then(|p| p.u64("segments", 10, 1, 1000)).unwrap_or(10);
            Box::new(Fixed(n * init.mss))
        }
    }

    fn reg(name: &str) -> Registration {
        Registration::new(name, "a fixed window", json!({"type": "object"}), FixedFactory)
    }

    #[test]
    fn names_are_checked_and_unique() {
        assert!(register(reg("cubic")).unwrap_err().contains("built-in"));
        assert!(register(reg("Bad Name")).unwrap_err().contains("not a controller name"));
        register(reg("fixed-unique-test")).unwrap();
        assert!(register(reg("fixed-unique-test")).unwrap_err().contains("already registered"));
        assert!(register_or_replace(reg("fixed-unique-test")).unwrap());
        assert!(allowed_names().contains(&"fixed-unique-test".to_string()));
        assert!(unregister("fixed-unique-test"));
        assert!(!allowed_names().contains(&"fixed-unique-test".to_string()));
    }

    #[test]
    fn errors_name_the_field_and_what_it_allows() {
        register_or_replace(reg("fixed-errors-test")).unwrap();
        let ext = |params| CcExtension { name: "fixed-errors-test".into(), params };
        assert!(resolve(&ext(json!({"segments": 4})), "tcp").is_ok());
        assert!(resolve(&ext(Value::Null), "tcp").is_ok());
        let e = resolve(&ext(json!({"segments": 0})), "traffic[1].tcp").err().unwrap();
        assert_eq!(e.path, "traffic[1].tcp.cc_params.segments");
        assert!(e.message.contains("from 1 to 1000"), "{}", e.message);
        let e = resolve(&ext(json!({"segs": 4})), "tcp").err().unwrap();
        assert_eq!((e.path.as_str(), e.message.as_str()), ("tcp.cc_params.segs", "unknown key; allowed: segments"));
        let e = resolve(&ext(json!([1])), "tcp").err().unwrap();
        assert_eq!(e.path, "tcp.cc_params");
        let e = resolve(&CcExtension { name: "nope".into(), params: Value::Null }, "tcp").err().unwrap();
        assert_eq!(e.path, "tcp.cc");
        assert!(e.message.starts_with("unknown value 'nope'; allowed: newreno, cubic, dctcp, htcp"), "{}", e.message);
        assert!(e.message.contains("fixed-errors-test"));
        unregister("fixed-errors-test");
    }
}
