//! Carrying out the judge's decisions: the kill itself (`SOCK_DESTROY` over `sock_diag`),
//! and one structured decision event per decision (target `lifeline::decision`).

mod log;

pub use log::{log_decision, log_orphan_report};

use crate::{
    diag::{Destroyed, SockDiag},
    judge::{Action, Kill, Outcome},
};

/// The outcome of `action` on `kill`; only `Action::Kill` touches the socket.
/// `Action::Quiet` and `Action::Restart` are not carried out here.
pub fn execute(diag: &mut SockDiag, kill: &Kill, action: Action) -> Option<Outcome> {
    Some(match action {
        Action::Kill => match diag.destroy(kill.rec.local(), kill.rec.peer(), kill.cookie) {
            Ok(Destroyed::Killed) => Outcome::Killed,
            Ok(Destroyed::Gone) => Outcome::Gone,
            Err(e) => Outcome::Failed(e.to_string()),
        },
        Action::DryRun => Outcome::DryRun,
        Action::RateLimited => Outcome::RateLimited,
        Action::Hold => Outcome::Held,
        Action::Quiet | Action::Restart => return None,
    })
}
