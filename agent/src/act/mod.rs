//! Carrying out the judge's decisions: the kill itself (`SOCK_DESTROY` over `sock_diag`),
//! and one structured decision event per decision (target `lifeline::decision`).

pub(crate) mod restart;

pub(crate) mod count;
pub(crate) mod decided;
mod group;
mod log;
pub(crate) mod owner;

pub(crate) use count::Counts;
pub(crate) use decided::{Decided, DecisionAction, OutcomeClass};
pub(crate) use log::{log_decision, log_orphan_report};

use crate::{
    judge::{Action, Kill, Outcome},
    kernel::diag::{Destroyed, Diag, DiagError},
};

/// The outcome of `action` on `kill`; only `Action::Kill` touches the socket.
/// `Action::Quiet` and `Action::Restart` are not carried out here.
pub(crate) fn execute(diag: &mut dyn Diag, kill: &Kill, action: Action) -> Option<Outcome> {
    Some(match action {
        Action::Kill => destroyed(diag.destroy(kill.rec.local, kill.rec.peer, kill.cookie)),
        Action::DryRun => Outcome::DryRun,
        Action::RateLimited => Outcome::RateLimited,
        Action::Hold => Outcome::Held,
        Action::Quiet | Action::Restart => return None,
    })
}

/// A `SOCK_DESTROY` answer as an outcome. The socket closed between the look and the kill
/// is `gone`, not a failed kill (nothing is left to kill, so nothing to escalate):
/// - `ENOENT`: no socket with that address pair and cookie (`tcp_diag_find_one_icsk()` in
///   <https://github.com/torvalds/linux/blob/v6.18/net/ipv4/tcp_diag.c>: the lookup found
///   none, or a newer socket holds the address pair), or it is already `TCP_CLOSE`
///   ("Avoid closing the same socket twice" in `tcp_abort()`,
///   <https://github.com/torvalds/linux/blob/v6.18/net/ipv4/tcp.c>);
/// - `ESTALE`: the cookie names another socket (`sock_diag_check_cookie()` in
///   <https://github.com/torvalds/linux/blob/v6.18/net/core/sock_diag.c>; `tcp_diag` turns
///   it into `ENOENT`, other kernels and protocols pass it on).
fn destroyed(answer: Result<Destroyed, DiagError>) -> Outcome {
    match answer {
        Ok(Destroyed::Killed) => Outcome::Killed,
        Ok(Destroyed::Gone) => Outcome::Gone,
        Err(DiagError::Kernel(e))
            if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ESTALE)) =>
        {
            Outcome::Gone
        }
        Err(e) => Outcome::Failed(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use std::io;

    use super::*;

    #[test]
    fn a_socket_gone_before_the_kill_is_gone_not_failed() {
        let kernel = |errno| Err(DiagError::Kernel(io::Error::from_raw_os_error(errno)));
        assert_eq!(destroyed(Ok(Destroyed::Killed)), Outcome::Killed);
        assert_eq!(destroyed(Ok(Destroyed::Gone)), Outcome::Gone);
        assert_eq!(destroyed(kernel(libc::ESTALE)), Outcome::Gone);
        assert_eq!(destroyed(kernel(libc::ENOENT)), Outcome::Gone);
        let Outcome::Failed(why) = destroyed(kernel(libc::EOPNOTSUPP)) else {
            panic!("EOPNOTSUPP (no CONFIG_INET_DIAG_DESTROY) is a failed kill");
        };
        assert!(why.contains("refused"), "{why}");
        assert!(matches!(destroyed(kernel(libc::EPERM)), Outcome::Failed(_)));
    }
}
