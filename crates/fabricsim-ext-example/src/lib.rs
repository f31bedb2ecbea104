//! Models added to fabricsim from outside its core, as an example of the
//! extension interfaces (`fabricsim_core::extension`).
//!
//! - [`swift`]: a Swift-like delay-based TCP congestion controller, `tcp.cc: swift`.
//!
//! [`register`] registers them all; the Python bindings call it when built
//! with the `example-extensions` feature.

pub mod swift;

use fabricsim_core::extension::tcp_cc::{self, Registration};

/// Registers this crate's controllers (again: a second call replaces them).
pub fn register() {
    let reg = Registration::new(
        "swift",
        "Swift-like delay-based control: target delay with flow scaling, AI/MD on delay (SIGCOMM 2020)",
        swift::SwiftParams::schema(),
        swift::SwiftFactory,
    );
    tcp_cc::register_or_replace(reg).expect("'swift' is a valid controller name");
}
