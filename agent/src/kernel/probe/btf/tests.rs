use super::*;

/// A BTF blob built by hand: `strings` (first byte NUL), then each type as its 12-byte
/// record plus trailing data, as 32-bit words.
fn blob(strings: &[u8], types: &[&[u32]]) -> Vec<u8> {
    let words: Vec<u32> = types.iter().flat_map(|t| t.iter().copied()).collect();
    let type_len = u32::try_from(words.len() * 4).unwrap();
    let mut b = Vec::new();
    b.extend(MAGIC.to_ne_bytes());
    b.extend([1, 0]); // version, flags
    for w in [
        24,
        0,
        type_len,
        type_len,
        u32::try_from(strings.len()).unwrap(),
    ] {
        b.extend(w.to_ne_bytes());
    }
    b.extend(words.iter().flat_map(|w| w.to_ne_bytes()));
    b.extend(strings);
    b
}

fn info(kind: u32, vlen: u32, kind_flag: bool) -> u32 {
    kind << 24 | vlen | u32::from(kind_flag) << 31
}

/// Strings: 1 "u8", 4 "s", 6 "a", 8 "b", 10 "c", 12 "u64", 16 "t", 18 "e", 20 "d".
const STRINGS: &[u8] = b"\0u8\0s\0a\0b\0c\0u64\0t\0e\0d\0";

fn sample() -> Vec<u8> {
    blob(
        STRINGS,
        &[
            // 1: int u8; 2: int u64.
            &[1, info(INT, 0, false), 1, 8],
            &[12, info(INT, 0, false), 8, 64],
            // 3: enum64 e with one value, 4: decl_tag on it, 5: type_tag, 6: const u64.
            &[18, info(ENUM64, 1, false), 8, 6, 1, 0],
            &[6, info(DECL_TAG, 0, false), 3, u32::MAX],
            &[16, info(TYPE_TAG, 0, false), 6],
            &[0, info(CONST, 0, false), 2],
            // 7: union { u8 b; const u64 c (through the type tag) } at byte 0.
            &[0, info(UNION, 2, false), 8, 8, 1, 0, 10, 5, 0],
            // 8: struct s (kind_flag: bitfield sizes in the top byte) { u8 a:8 at bit 8;
            //    anonymous union at byte 8; u8 d:3 at bit 3 }.
            &[
                4,
                info(STRUCT, 3, true),
                16,
                6,
                1,
                8 << 24 | 8,
                0,
                7,
                64,
                20,
                1,
                3 << 24 | 3,
            ],
            // 9: func_proto with one param, 10: array of 4 u8.
            &[0, info(FUNC_PROTO, 1, false), 0, 0, 1],
            &[0, info(ARRAY, 0, false), 0, 1, 1, 4],
        ],
    )
}

#[test]
fn members_direct_and_inside_anonymous_unions() {
    let raw = sample();
    let btf = Btf::parse(&raw).unwrap();
    assert_eq!(btf.types.len(), 10);
    assert_eq!(btf.member("s", "a").unwrap(), (1, 1));
    assert_eq!(btf.member("s", "b").unwrap(), (8, 1));
    assert_eq!(btf.member("s", "c").unwrap(), (8, 8));
    let e = btf.member("s", "d").unwrap_err().to_string();
    assert_eq!(e, "s.d is a bitfield");
    let e = btf.member("s", "zz").unwrap_err().to_string();
    assert_eq!(e, "struct s has no member zz");
    let e = btf.member("t", "a").unwrap_err().to_string();
    assert_eq!(e, "struct t not in the kernel's BTF");
}

#[test]
fn bad_blobs_are_refused() {
    let raw = sample();
    assert!(Btf::parse(&raw[..20]).is_err());
    let mut swapped = raw.clone();
    swapped.swap(0, 1);
    assert!(Btf::parse(&swapped).is_err());
    let unknown = blob(STRINGS, &[&[0, info(31, 0, false), 0]]);
    let e = Btf::parse(&unknown).err().unwrap().to_string();
    assert_eq!(e, "unknown BTF kind 31");
}

#[test]
fn the_running_kernels_offsets() {
    let Ok(raw) = std::fs::read("/sys/kernel/btf/vmlinux") else {
        eprintln!("no /sys/kernel/btf/vmlinux: skipped");
        return;
    };
    let btf = Btf::parse(&raw).unwrap();
    let (probes_out, size) = btf
        .member("inet_connection_sock", "icsk_probes_out")
        .unwrap();
    assert_eq!(size, 1);
    // After the embedded `struct inet_sock` (itself after `struct sock`).
    assert!(probes_out > 500, "{probes_out}");
    // `struct sock_common` starts `struct sock`; the cookie sits in its first cache lines.
    let (cookie, size) = btf.member("sock_common", "skc_cookie").unwrap();
    assert_eq!(size, 8);
    assert!(cookie % 8 == 0 && cookie < 256, "{cookie}");
    assert_eq!(btf.member("sock", "__sk_common").unwrap().0, 0);
    assert_eq!(btf.member("timer_list", "function").unwrap().1, 8);
}
