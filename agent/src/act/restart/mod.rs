//! Escalation to a unit restart over systemd's D-Bus API: the bus connection, the restart
//! policy (hourly budget, pause), the scope check (is the socket the unit's own?) and the
//! restarter task that carries a judged request out.

pub(crate) mod dbus;
pub(crate) mod policy;
pub(crate) mod restarter;
pub(crate) mod scope;
