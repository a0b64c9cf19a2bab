//! The lifeline lab: network-namespace hosts and guards around the real `lifeline` binary.
//!
//! A lab is three network namespaces (client, wire with a bridge, server) joined by veth
//! pairs. Faults are nft rules in the wire namespace, so they hit the packets in flight and
//! neither end can see them, exactly like a load balancer that silently drops a flow.
//! Every resource (namespace, process, cgroup, temp dir) is a guard removed on `Drop`, so a
//! failing assertion still leaves the machine clean.
//!
//! The endpoint lab (`ApiLab`) adds API hosts and a real dnsmasq on the same bridge, with an
//! HTTP/2 kubelet-like client (`kube-client`) that re-resolves and re-dials on errors.

pub mod agent;
pub mod api_addrs;
pub mod apilab;
pub mod blip;
pub mod cgroup;
pub mod client;
pub mod cmd;
pub mod crowd;
pub mod decision;
pub mod defer_lab;
pub mod dns;
mod dns_rotate;
pub mod dnsquery;
pub mod endpoint_checks;
pub mod endpoint_log;
pub mod endpoint_scenario;
pub mod fake_kubelet;
pub mod hostile;
pub mod idle_lab;
pub mod journald;
pub mod keepalive;
pub mod kernel;
pub mod kube;
pub mod kubelet_unit;
pub mod kustomize;
pub mod lab;
pub mod local_listener;
pub mod manifest;
pub mod metrics;
pub mod mountinfo;
pub mod netns;
pub mod news_lab;
pub mod nft;
mod nft_flows;
pub mod nft_probes;
pub mod nobody;
pub mod outside;
pub mod paths;
pub mod pidfd;
pub mod pod;
pub mod pod_syscalls;
pub mod podman;
pub mod proc;
pub mod prometheus;
pub mod proxy;
mod proxy_conf;
pub mod proxy_lab;
pub mod proxy_node;
pub mod routed;
pub mod scenario;
pub mod setup;
pub mod ss;
mod stale;
pub mod status;
mod status_endpoint;
pub mod systemd;
pub mod tc_chain;
pub mod tc_check;
pub mod tc_lab;
pub mod tc_neighbour;
pub mod tc_steps;
mod teardown;
pub mod timeline;
pub mod tracefs;
pub mod unit_agent;
pub mod unit_sandbox;
pub mod util;
pub mod watched;

pub use agent::{Agent, AgentArgs};
pub use api_addrs::{API_NAME, ENDPOINT, api};
pub use apilab::ApiLab;
pub use cgroup::Cgroup;
pub use client::{Client, ClientEvent};
pub use decision::Decision;
pub use dns::Dnsmasq;
pub use dns_rotate::Rotation;
pub use fake_kubelet::FakeKubelet;
pub use lab::{CLIENT_V4, CLIENT_V6, Lab, SERVER_PORT, SERVER_V4, SERVER_V6};
pub use mountinfo::cgroup2_mount;
pub use netns::NetNs;
pub use nft::Fault;
pub use proc::Proc;
pub use ss::{SsSocket, established};
pub use status::{Status, StatusSocket};
pub use util::{
    TempDir, mono_ms, parse_duration, require_root, sleep_to_boundary, unique_name, wait_until,
};
