//! TCP states as the kernel numbers them (`include/net/tcp_states.h`) and as `ss` names
//! them, and the states a watched socket can be in while its record lives: from ESTABLISHED
//! (the probe records it there) until it closes (the probe removes the record at CLOSE; a
//! TIME-WAIT socket is no full socket any more and has no record).
//! <https://github.com/torvalds/linux/blob/v6.18/include/net/tcp_states.h>

pub(crate) const ESTABLISHED: u8 = 1;
const FIN_WAIT1: u8 = 4;
const FIN_WAIT2: u8 = 5;
const CLOSE_WAIT: u8 = 8;
const LAST_ACK: u8 = 9;
const CLOSING: u8 = 11;

/// The `sock_diag` state mask of every state a watched socket's record can be in.
pub(crate) const RECORDED: u32 = 1 << ESTABLISHED
    | 1 << FIN_WAIT1
    | 1 << FIN_WAIT2
    | 1 << CLOSE_WAIT
    | 1 << LAST_ACK
    | 1 << CLOSING;

/// The state's name as `ss` prints it.
#[must_use]
pub(crate) const fn name(state: u8) -> &'static str {
    match state {
        ESTABLISHED => "ESTABLISHED",
        2 => "SYN-SENT",
        3 => "SYN-RECV",
        FIN_WAIT1 => "FIN-WAIT-1",
        FIN_WAIT2 => "FIN-WAIT-2",
        6 => "TIME-WAIT",
        7 => "CLOSE",
        CLOSE_WAIT => "CLOSE-WAIT",
        LAST_ACK => "LAST-ACK",
        10 => "LISTEN",
        CLOSING => "CLOSING",
        _ => "UNKNOWN",
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_and_mask() {
        assert_eq!(super::name(4), "FIN-WAIT-1");
        assert_eq!(super::name(8), "CLOSE-WAIT");
        assert_eq!(
            super::RECORDED & (1 << 6 | 1 << 10),
            0,
            "no TIME-WAIT, no LISTEN"
        );
        assert_ne!(super::RECORDED & (1 << 1), 0);
    }
}
