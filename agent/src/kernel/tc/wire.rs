//! The rtnetlink messages lifeline sends about tc (`struct tcmsg` requests) and the parts of
//! the kernel's answers it reads: a filter's priority, protocol, handle, kind and, for
//! `cls_bpf`, the program's name (`TCA_BPF_NAME`). Layouts from
//! <https://github.com/torvalds/linux/blob/v6.18/include/uapi/linux/rtnetlink.h> and
//! <https://github.com/torvalds/linux/blob/v6.18/include/uapi/linux/pkt_cls.h>.

pub(super) const NLMSG_HDRLEN: usize = 16;
pub(super) const NLMSG_ERROR: u16 = 2;
pub(super) const NLMSG_DONE: u16 = 3;
pub(super) const RTM_DELQDISC: u16 = 37;
pub(super) const RTM_NEWTFILTER: u16 = 44;
pub(super) const RTM_GETTFILTER: u16 = 46;
pub(super) const NLM_F_REQUEST: u16 = 1;
pub(super) const NLM_F_MULTI: u16 = 2;
pub(super) const NLM_F_ACK: u16 = 4;
pub(super) const NLM_F_DUMP: u16 = 0x300;
/// `sizeof(struct tcmsg)`.
pub(super) const TCMSG_LEN: usize = 20;
/// `TC_H_CLSACT`, the clsact qdisc's parent; its handle is `ffff:`.
pub(super) const TC_H_CLSACT: u32 = 0xFFFF_FFF1;
pub(super) const CLSACT_HANDLE: u32 = 0xFFFF_0000;
/// `TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_INGRESS)`, `..._EGRESS`: where its filters hang.
pub(crate) const INGRESS: u32 = 0xFFFF_FFF2;
pub(crate) const EGRESS: u32 = 0xFFFF_FFF3;
const TCA_KIND: u16 = 1;
const TCA_OPTIONS: u16 = 2;
const TCA_BPF_NAME: u16 = 7;
const NLA_TYPE_MASK: u16 = 0x3FFF;

/// One filter as the kernel lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Filter {
    pub priority: u16,
    /// The link-layer protocol it matches, host order (`ETH_P_ALL` is 3).
    pub protocol: u16,
    pub handle: u32,
    /// The classifier ("bpf", "u32", "flower", ...).
    pub kind: String,
    /// A `cls_bpf` filter's program name, as its loader gave it.
    pub name: Option<String>,
}

/// A request: the netlink header, a `tcmsg` for `ifindex` with `parent`, `handle` and
/// `info` (priority and protocol of a filter), no attributes.
#[must_use]
pub(super) fn request(kind: u16, flags: u16, seq: u32, tc: (i32, u32, u32, u32)) -> Vec<u8> {
    let (ifindex, handle, parent, info) = tc;
    let len = NLMSG_HDRLEN + TCMSG_LEN;
    let mut m = Vec::with_capacity(len);
    m.extend_from_slice(&u32::try_from(len).unwrap_or(0).to_ne_bytes());
    m.extend_from_slice(&kind.to_ne_bytes());
    m.extend_from_slice(&flags.to_ne_bytes());
    m.extend_from_slice(&seq.to_ne_bytes());
    m.extend_from_slice(&0u32.to_ne_bytes());
    // tcm_family (AF_UNSPEC) and two bytes of padding.
    m.extend_from_slice(&[0u8; 4]);
    m.extend_from_slice(&ifindex.to_ne_bytes());
    m.extend_from_slice(&handle.to_ne_bytes());
    m.extend_from_slice(&parent.to_ne_bytes());
    m.extend_from_slice(&info.to_ne_bytes());
    m
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// The `tcmsg` of a message body: (ifindex, handle, parent, info).
#[must_use]
pub(super) fn tcmsg(body: &[u8]) -> Option<(i32, u32, u32, u32)> {
    let ifindex = i32::from_ne_bytes(body.get(4..8)?.try_into().ok()?);
    Some((
        ifindex,
        u32_at(body, 8)?,
        u32_at(body, 12)?,
        u32_at(body, 16)?,
    ))
}

/// Each attribute's type and payload in `b` (a malformed tail ends the walk).
fn attrs(mut b: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        let len = usize::from(u16::from_ne_bytes(b.get(0..2)?.try_into().ok()?));
        let kind = u16::from_ne_bytes(b.get(2..4)?.try_into().ok()?) & NLA_TYPE_MASK;
        let payload = b.get(4..len)?;
        b = b.get((len + 3) & !3..).unwrap_or(&[]);
        Some((kind, payload))
    })
}

fn string(b: &[u8]) -> String {
    let end = b.iter().position(|c| *c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

/// A filter from an `RTM_NEWTFILTER` body; `None` for the entry that stands for a whole
/// priority (handle 0, listed before its filters) or a malformed body.
#[must_use]
pub(super) fn filter(body: &[u8]) -> Option<Filter> {
    let (_, handle, _, info) = tcmsg(body)?;
    if handle == 0 {
        return None;
    }
    let mut kind = String::new();
    let mut name = None;
    for (t, payload) in attrs(body.get(TCMSG_LEN..)?) {
        match t {
            TCA_KIND => kind = string(payload),
            TCA_OPTIONS => {
                name = attrs(payload)
                    .find(|(t, _)| *t == TCA_BPF_NAME)
                    .map(|(_, p)| string(p));
            }
            _ => {}
        }
    }
    Some(Filter {
        priority: u16::try_from(info >> 16).ok()?,
        protocol: u16::from_be(u16::try_from(info & 0xFFFF).ok()?),
        handle,
        kind,
        name,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr(kind: u16, payload: &[u8]) -> Vec<u8> {
        let mut a = u16::try_from(4 + payload.len())
            .unwrap()
            .to_ne_bytes()
            .to_vec();
        a.extend_from_slice(&kind.to_ne_bytes());
        a.extend_from_slice(payload);
        while a.len() % 4 != 0 {
            a.push(0);
        }
        a
    }

    #[test]
    fn a_bpf_filter_reads_back_with_priority_protocol_handle_and_name() {
        // prio 4, protocol all (ETH_P_ALL, network order), handle 0x4c4c, as tc dumps it.
        let info = (4u32 << 16) | u32::from(3u16.to_be());
        let mut body =
            request(RTM_NEWTFILTER, 0, 1, (7, 0x4c4c, EGRESS, info))[NLMSG_HDRLEN..].to_vec();
        body.extend(attr(TCA_KIND, b"bpf\0"));
        let mut opts = attr(1, &0u32.to_ne_bytes()); // TCA_BPF_CLASSID
        opts.extend(attr(TCA_BPF_NAME, b"lifeline_probe_byte\0"));
        body.extend(attr(TCA_OPTIONS | 0x8000, &opts)); // NLA_F_NESTED
        assert_eq!(tcmsg(&body), Some((7, 0x4c4c, EGRESS, info)));
        assert_eq!(
            filter(&body),
            Some(Filter {
                priority: 4,
                protocol: 3,
                handle: 0x4c4c,
                kind: "bpf".into(),
                name: Some("lifeline_probe_byte".into()),
            })
        );
    }

    #[test]
    fn a_priority_s_own_entry_and_truncated_bodies_are_no_filter() {
        let info = 1u32 << 16;
        let body = request(RTM_NEWTFILTER, 0, 1, (7, 0, EGRESS, info))[NLMSG_HDRLEN..].to_vec();
        assert_eq!(filter(&body), None, "handle 0: the priority itself");
        assert_eq!(filter(&body[..10]), None);
        // An attribute that claims more than there is ends the walk, no panic.
        let mut b = body.clone();
        b.extend(attr(TCA_KIND, b"u32\0"));
        b.extend_from_slice(&[200, 0, 1, 0]);
        let info = (2u32 << 16) | u32::from(0x0800u16.to_be());
        b[16..20].copy_from_slice(&info.to_ne_bytes());
        b[8..12].copy_from_slice(&5u32.to_ne_bytes());
        let f = filter(&b).expect("a filter");
        assert_eq!(
            (f.priority, f.protocol, f.handle, f.kind.as_str(), f.name),
            (2, 0x0800, 5, "u32", None)
        );
    }
}
