//! tc egress: one octet of old data on the keepalive probes of a socket in a fast phase
//! (`lifeline_common::poke`).
//!
//! A keepalive probe is a bare ACK whose sequence number is `snd_una - 1`, with nothing in
//! flight (`tcp_xmit_probe_skb()` in
//! <https://github.com/torvalds/linux/blob/v6.18/net/ipv4/tcp_output.c>). The peer finds it
//! out of window and answers with a duplicate ACK, but at most one per
//! `net.ipv4.tcp_invalid_ratelimit` (500 ms; `tcp_oow_rate_limited()`): probes faster than
//! that would go unanswered from a live peer. Given one octet, the same probe carries the
//! byte just below `snd_una`, which the peer already has: it takes the retransmission path
//! of `tcp_data_queue()` (<https://github.com/torvalds/linux/blob/v6.18/net/ipv4/tcp_input.c>),
//! which schedules an immediate ACK (with a D-SACK of that byte) and drops the data. No rate
//! limit, and nothing reaches the application. The octet is zero (the peer never reads it).
//!
//! Runs for every packet leaving the devices it is attached to (the ones the watched peers
//! are routed through), so the order is by cost: one add to this CPU's `TC_SEEN` slot (how
//! the agent knows the program runs at all), the length, then the socket's cookie in `POKE`
//! (empty unless a probe of a watched socket went unanswered), then the headers.
//! Ethernet devices only (the agent attaches nothing else): the IP header starts at 14.
//!
//! A neighbour in the device's chain (a CNI's, a host firewall's programs): it never drops,
//! redirects or ends the chain, whatever happens (`lifeline_common::tc::PASS_ON`).

use aya_ebpf::{
    bindings::{BPF_F_PSEUDO_HDR, bpf_sock},
    helpers::generated::{
        bpf_get_socket_cookie, bpf_ktime_get_ns, bpf_sk_fullsock, bpf_skb_change_tail, bpf_tcp_sock,
    },
    macros::classifier,
    programs::TcContext,
};
use lifeline_common::{poke::BOUND_NS, tc};

use crate::maps::{POKE, SOCKETS, TC_SEEN};

const ETH_LEN: usize = 14;
const ETH_P_IP: u32 = 0x0800;
const ETH_P_IPV6: u32 = 0x86DD;
const IPPROTO_TCP: u8 = 6;
const TCP_FLAG_ACK: u8 = 0x10;
/// The longest bare ACK: Ethernet, IPv4 with options (60) or IPv6 (40), TCP with options (60).
const MAX_BARE_ACK: u32 = 14 + 60 + 60;

/// tc egress (Linux 4.1; the helpers used: `bpf_skb_change_tail` 4.9, `bpf_get_socket_cookie`
/// 4.12, `bpf_tcp_sock` 5.1). Never drops or redirects, and never ends the chain: it returns
/// `TC_ACT_UNSPEC`, `TCX_NEXT` in tcx (both -1), so every program and filter after it on the
/// device still sees the packet (`tcx_run()`, `sch_handle_egress()` in
/// <https://github.com/torvalds/linux/blob/v6.18/net/core/dev.c>; `cls_bpf_classify()` in
/// <https://github.com/torvalds/linux/blob/v6.18/net/sched/cls_bpf.c>). `TC_ACT_OK` would
/// end it: the neighbours' egress datapath (masquerading, host firewall) would be skipped.
#[classifier]
pub(crate) fn lifeline_probe_byte(ctx: TcContext) -> i32 {
    seen(&ctx);
    let _ = try_probe_byte(&ctx);
    tc::PASS_ON
}

/// One more packet seen leaving this device.
fn seen(ctx: &TcContext) {
    // SAFETY: the context's `ifindex`, a plain field of `__sk_buff`.
    let ifindex = unsafe { (*ctx.skb.skb).ifindex };
    if let Some(n) = TC_SEEN.get_ptr_mut(tc::slot(ifindex)) {
        // SAFETY: this CPU's slot; nothing else writes it while the program runs here.
        unsafe { *n = (*n).wrapping_add(1) };
    }
}

/// Where the TCP header is, and the lengths to fix, of a bare ACK (`None`: not one).
struct BareAck {
    tcp: usize,
    /// IPv4: offset of `tot_len`, IPv6: of `payload_len`.
    ip_len_at: usize,
    ip_len: u16,
    /// IPv4's header checksum, which `tot_len` is part of.
    ip_csum_at: Option<usize>,
    /// TCP header and payload: the pseudo-header's length.
    tcp_len: u16,
}

fn try_probe_byte(ctx: &TcContext) -> Option<()> {
    let skb = ctx.skb.skb;
    if ctx.len() > MAX_BARE_ACK {
        return None;
    }
    // SAFETY: the context's `sk` field, which the verifier types as a socket or NULL.
    let sk: *mut bpf_sock = unsafe { (*skb).__bindgen_anon_2.sk };
    if sk.is_null() {
        return None;
    }
    // SAFETY: the helper takes the skb context.
    let cookie = unsafe { bpf_get_socket_cookie(skb.cast()) };
    // SAFETY: a map value of the right type, read only.
    let started = unsafe { (*POKE.get_ptr(cookie)?).started_ns };
    // A phase older than its bound is over, whoever should have closed it: an agent killed
    // with phases open (its filter outlives it before tcx) must not leave octets added to
    // that socket's probes for good. Only a packet of a socket with an entry gets here.
    // SAFETY: a helper without arguments.
    if unsafe { bpf_ktime_get_ns() }.wrapping_sub(started) > BOUND_NS {
        return None;
    }
    // SAFETY: `sk` was checked non-NULL; the helper returns NULL unless it is a full socket.
    let full = unsafe { bpf_sk_fullsock(sk) };
    if full.is_null() {
        return None;
    }
    // SAFETY: a full socket; NULL unless it is TCP.
    let tp = unsafe { bpf_tcp_sock(full) };
    if tp.is_null() {
        return None;
    }
    // SAFETY: checked non-NULL above; a read-only kernel view of the socket.
    let (snd_una, snd_nxt, srtt) = unsafe { ((*tp).snd_una, (*tp).snd_nxt, (*tp).srtt_us) };
    let ack = bare_ack(ctx)?;
    let seq = u32::from_be(ctx.load::<u32>(ack.tcp + 4).ok()?);
    if snd_una != snd_nxt || seq != snd_una.wrapping_sub(1) {
        return None;
    }
    let len = ctx.len();
    // SAFETY: the skb context; grows the linear data by one byte.
    if unsafe { bpf_skb_change_tail(skb, len + 1, 0) } != 0 {
        return None;
    }
    ctx.store(len as usize, &0u8, 0).ok()?;
    let new_ip = (ack.ip_len + 1).to_be();
    if let Some(at) = ack.ip_csum_at {
        ctx.l3_csum_replace(at, u64::from(ack.ip_len.to_be()), u64::from(new_ip), 2)
            .ok()?;
    }
    ctx.store(ack.ip_len_at, &new_ip, 0).ok()?;
    // The pseudo-header's length grows by one; the zero octet adds nothing to the sum.
    ctx.l4_csum_replace(
        ack.tcp + 16,
        u64::from(ack.tcp_len.to_be()),
        u64::from((ack.tcp_len + 1).to_be()),
        u64::from(BPF_F_PSEUDO_HDR) | 2,
    )
    .ok()?;
    let rec = SOCKETS.get_ptr_mut(cookie)?;
    // SAFETY: a map value of the right type; plain counters.
    unsafe {
        (*rec).probe_bytes = (*rec).probe_bytes.wrapping_add(1);
        (*rec).probe_srtt_us = srtt >> 3;
    }
    Some(())
}

/// The packet's TCP header and lengths, when it is a bare ACK without payload.
fn bare_ack(ctx: &TcContext) -> Option<BareAck> {
    // `skb->protocol` is a network-order u16 in a u32 field.
    let proto = u32::from(u16::from_be(u16::try_from(ctx.skb.protocol()).ok()?));
    let (tcp, ip_len_at, ip_len, ip_csum_at, ip_payload) = match proto {
        ETH_P_IP => {
            let vihl: u8 = ctx.load(ETH_LEN).ok()?;
            let ihl = usize::from(vihl & 0x0f) * 4;
            let next: u8 = ctx.load(ETH_LEN + 9).ok()?;
            let tot = u16::from_be(ctx.load::<u16>(ETH_LEN + 2).ok()?);
            if next != IPPROTO_TCP || ihl < 20 {
                return None;
            }
            let payload = tot.checked_sub(u16::try_from(ihl).ok()?)?;
            (ETH_LEN + ihl, ETH_LEN + 2, tot, Some(ETH_LEN + 10), payload)
        }
        ETH_P_IPV6 => {
            let next: u8 = ctx.load(ETH_LEN + 6).ok()?;
            let payload = u16::from_be(ctx.load::<u16>(ETH_LEN + 4).ok()?);
            if next != IPPROTO_TCP {
                return None;
            }
            (ETH_LEN + 40, ETH_LEN + 4, payload, None, payload)
        }
        _ => return None,
    };
    let doff: u8 = ctx.load(tcp + 12).ok()?;
    let flags: u8 = ctx.load(tcp + 13).ok()?;
    let tcp_len = u16::from(doff >> 4) * 4;
    if flags != TCP_FLAG_ACK || ip_payload != tcp_len {
        return None;
    }
    Some(BareAck {
        tcp,
        ip_len_at,
        ip_len,
        ip_csum_at,
        tcp_len,
    })
}
