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

pub mod assertions;
pub mod fixtures;
pub mod infra;
pub mod scenarios;

pub use assertions::decision::Decision;
pub use assertions::ss::{SsSocket, established};
pub use assertions::status::{Status, StatusSocket};
pub use fixtures::agent::{Agent, AgentArgs};
pub use fixtures::client::{Client, ClientEvent};
pub use fixtures::fake_kubelet::FakeKubelet;
pub use infra::api_addrs::{API_NAME, ENDPOINT, api};
pub use infra::apilab::ApiLab;
pub use infra::cgroup::Cgroup;
pub use infra::dns::Dnsmasq;
pub use infra::dns_rotate::Rotation;
pub use infra::lab::{CLIENT_V4, CLIENT_V6, Lab, SERVER_PORT, SERVER_V4, SERVER_V6};
pub use infra::mountinfo::cgroup2_mount;
pub use infra::netns::NetNs;
pub use infra::nft::Fault;
pub use infra::proc::Proc;
pub use infra::util::{
    TempDir, mono_ms, parse_duration, require_root, sleep_to_boundary, unique_name, wait_until,
};
