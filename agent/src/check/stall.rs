//! `stall evidence`: whether the kernel let the probe arm linear retransmission timeouts on
//! the check's watched connection (`lifeline_common::features::LINEAR_TIMEOUTS`, Linux 6.1),
//! i.e. how fast a black-holed flow's unanswered transmissions are collected here.

use lifeline_common::features::LINEAR_TIMEOUTS;

use crate::{
    check::row::Row,
    judge::{LinearTimeouts, Record},
};

/// The row, from the record of a connection the probe watched from its connect.
pub(super) fn row(rec: &Record) -> Row {
    const NAME: &str = "stall evidence";
    match rec.linear {
        // Paused: armed, and off for a trouble episode whose path is not known to work.
        LinearTimeouts::Armed | LinearTimeouts::Paused => Row::pass(
            NAME,
            "linear retransmission timeouts armed: 8 unanswered transmissions in a row take about 2.4 s (--stall-unanswered)".to_owned(),
        ),
        LinearTimeouts::Off => Row::pass(
            NAME,
            "--stall-unanswered 0: the time rule alone (--stall-timeout), retransmission timing left to the kernel".to_owned(),
        ),
        LinearTimeouts::Refused(errno) => Row::warn(
            NAME,
            format!(
                "linear retransmission timeouts refused by the kernel (errno {errno}; needs Linux {}.{}): a stall is found after --stall-timeout (10 s), not in about 3 s",
                LINEAR_TIMEOUTS.since.0, LINEAR_TIMEOUTS.since.1
            ),
        ),
    }
}
