//! What the endpoint-client watch's arming (`arming.rs`) reads of a set: when an answer last
//! held each address, and which addresses are trusted at once.

use std::{
    net::IpAddr,
    time::{Duration, Instant},
};

use super::EndpointSet;

impl EndpointSet {
    /// Addresses given as IP literals (a proxy's list names them): trusted as the first
    /// answer is, since no DNS answer brought them.
    pub(crate) fn literals(&mut self, ips: impl IntoIterator<Item = IpAddr>) {
        self.trusted.extend(ips);
    }

    /// Each address `within_grace`, when an answer last held it, and whether it is trusted
    /// at once (`trusted`): what the endpoint-client watch arms.
    pub(crate) fn arming(
        &self,
        grace: Duration,
    ) -> impl Iterator<Item = (IpAddr, Instant, bool)> + '_ {
        self.within_grace(grace).filter_map(|ip| {
            let held = *self.held_at.get(&ip)?;
            Some((ip, held, self.fixed || self.trusted.contains(&ip)))
        })
    }
}
