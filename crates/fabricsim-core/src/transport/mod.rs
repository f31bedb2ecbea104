//! Transports: the protocol logic that runs at hosts.
//!
//! Transports are written against a tiny interface: they receive segments and
//! timer calls with the current time and append the segments they want sent to
//! an [`Outbox`](tcp::Outbox). The simulation turns those into packets. They never
//! schedule events themselves: each connection reports its next deadline
//! ([`tcp::Connection::next_deadline`]) and the simulation keeps one timer event
//! per connection.

pub mod apps;
pub mod roce;
pub mod tcp;
