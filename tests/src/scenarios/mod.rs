//! Steps the lab's scenarios share: the standard setup, the black hole, blips, idle and
//! keepalive-news flows, the proxy and tc-chain scenarios, the demo's timeline.

pub mod blip;
pub mod defer_lab;
pub mod endpoint_scenario;
pub mod idle_lab;
pub mod news_lab;
pub mod proxy_lab;
pub mod proxy_late;
pub mod scenario;
pub mod setup;
pub mod tc_check;
pub mod tc_lab;
pub mod tc_steps;
pub mod timeline;
