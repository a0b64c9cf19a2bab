//! The lab's machinery: network namespaces, cgroups, processes, the system tools it drives
//! (nft, dnsmasq, systemd, journald, podman, Prometheus), the kernel's features, and cleanup.

pub mod api_addrs;
pub mod apilab;
pub mod cgroup;
pub mod cmd;
pub mod dns;
pub(crate) mod dns_rotate;
pub mod dnsquery;
pub mod journald;
pub mod kernel;
pub mod kustomize;
pub mod lab;
pub mod manifest;
pub mod mountinfo;
pub mod netns;
pub mod nft;
pub(crate) mod nft_flows;
pub mod nft_probes;
pub mod nobody;
pub mod paths;
pub mod pidfd;
pub mod pod;
pub mod pod_syscalls;
pub mod podman;
pub mod proc;
pub mod prometheus;
pub mod routed;
pub(crate) mod stale;
pub mod systemd;
pub(crate) mod teardown;
pub mod tracefs;
pub mod util;
