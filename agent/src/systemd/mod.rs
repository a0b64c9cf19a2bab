//! Running under systemd: the notify protocol, and escalation to a unit restart over D-Bus.

pub mod dbus;
pub mod notify;
pub mod policy;
pub mod restarter;
pub mod scope;
