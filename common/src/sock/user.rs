//! User-space side of [`SockState`]: map access.

use super::SockState;

// SAFETY: `SockState` is `repr(C)`, its padding is an explicit field (size checked in
// `sock.rs`), and every bit pattern is a valid value.
unsafe impl aya::Pod for SockState {}
