//! The long endpoint scenarios (one test binary in several
//! files, so they run side by side under --test-threads=4):
//! (c) round-robin DNS answering rotating subsets for 2 minutes: nothing is killed;
//! (d) the DNS server stopped for 60 s: nothing is killed, the last good set is kept and
//!     the failure is reported (log and status);
//! (e) every server black-holed: nothing is killed while no endpoint is healthy (hold);
//!     once api2 is back, the stalled socket is killed, once;
//! the control for (a): the same rotation without the agent keeps the client down for the
//!     whole 90 s window.

mod control;
mod dns_outage;
mod hold;
mod round_robin;
