//! Escalation to a unit restart over systemd's D-Bus API: the bus connection, the restart
//! policy (hourly budget, pause), the scope check (is the socket the unit's own?) and the
//! restarter task that carries a judged request out.

pub mod dbus;
pub mod policy;
pub mod restarter;
pub mod scope;
