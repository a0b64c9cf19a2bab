//! The lab: every scenario test of lifeline against the real kernel, in one test binary
//! (root only). One module per scenario file; a test's name is `module::test`, e.g.
//! `blackhole::blackhole_is_killed`. Run one module or one test with a filter:
//! `cargo test -p lifeline-tests --test lab -- blackhole::`. The fixtures, scenarios and
//! checks the modules share are the `lifeline_tests` library (`tests/src/`).

mod adopted_fast;
mod bad_input;
mod blackhole;
mod blip;
mod capabilities;
mod check;
mod config_file;
mod container;
mod discovery_trust;
mod dry_run;
mod endpoint_budgets;
mod endpoint_clients;
mod endpoint_identity;
mod endpoint_long;
mod endpoint_orphan_action;
mod endpoint_probe;
mod endpoint_resolution;
mod endpoint_rotation;
mod endpoint_selftest;
mod escalation;
mod escalation_restarts;
mod escalation_scope;
mod fast_busy;
mod go_client;
mod hostile_capacity;
mod hostile_lock;
mod hostile_servers;
mod idle;
mod ip_netns_exec;
mod journald;
mod keepalive_news;
mod keepalive_news_confined;
mod kubeconfig_discovery;
mod lab_selftest;
mod loss_soak;
mod metrics;
mod no_false_positive;
mod packaging;
mod peer_restart;
mod preexisting;
mod prometheus_alerts;
mod proxy_after_agent;
mod proxy_blackhole;
mod proxy_discovery;
mod proxy_follow;
mod proxy_hop_watch;
mod proxy_loss_soak;
mod proxy_orphan;
mod proxy_trust;
mod restore;
mod servers_out_of_fds;
mod single_agent;
mod status_truth;
mod systemd_notify;
mod tc_leftovers;
mod tc_neighbour;
mod unit_lifecycle;
mod unit_sandbox;
