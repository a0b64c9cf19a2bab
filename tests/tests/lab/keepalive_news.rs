//! Keepalive news: the kernel itself reports a watched idle socket whose keepalive probes go
//! unanswered (`news::UNANSWERED`, counted in `lifeline_probe_unanswered_news_total`), and
//! says nothing about a healthy idle socket, whose probes are all answered.
//!
//! Two idle watched connections sit side by side. While both are healthy no news comes; once
//! one flow is black-holed, news comes when its first probe went unanswered, then not again
//! until its 11th (`--silent-probes` 12 minus 2, 1 s apart after 1 s idle), and stops once
//! lifeline killed it, while the healthy one keeps being probed.

use anyhow::Result;
use lifeline_tests::require_root;

#[test]
fn unanswered_keepalive_probes_are_news_and_answered_ones_are_not() -> Result<()> {
    require_root();
    lifeline_tests::scenarios::news_lab::scenario(None)
}
