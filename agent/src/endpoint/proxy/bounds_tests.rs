//! Issue 34 test b, the parser half: a neighbour's configuration text against the parsers'
//! bounds. Each is one clear error naming its bound, at once, with the memory the parse
//! allocated measured on its own thread (`peak`): far under the unit's `MemoryMax=128M`.

use std::{path::Path, time::Instant};

use super::{
    files::{MAX_FILE_BYTES, Root},
    haproxy, nginx, peak,
};

fn tree(name: &str, conf: &[u8]) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("lifeline-bounds-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("etc/nginx")).unwrap();
    std::fs::write(d.join("etc/nginx/nginx.conf"), conf).unwrap();
    std::fs::write(d.join("etc/nginx/haproxy.cfg"), conf).unwrap();
    d
}

/// nginx's parse of `conf` on a thread of its own: its error, how long it took and the
/// most it had allocated at once.
fn nginx_parse(name: &str, conf: &[u8]) -> (String, u128, usize) {
    let root = tree(name, conf);
    let r = root.clone();
    let out = std::thread::spawn(move || {
        let root = Root::at(&r).unwrap();
        let t0 = Instant::now();
        let (got, most) =
            peak::measure(|| nginx::upstreams(&root, Path::new("/etc/nginx/nginx.conf"), 6443));
        (got.unwrap_err().to_string(), t0.elapsed().as_millis(), most)
    })
    .join()
    .unwrap();
    std::fs::remove_dir_all(&root).unwrap();
    out
}

#[test]
fn a_hundred_thousand_nested_braces_stop_at_the_depth_bound() {
    let (e, ms, most) = nginx_parse("braces", &b"{".repeat(100_000));
    assert_eq!(
        e,
        "/etc/nginx/nginx.conf: blocks nested more than 32 deep: not read further"
    );
    assert!(ms < 1000, "{ms} ms");
    assert!(most < 4 << 20, "{most} bytes");
}

/// 1 MiB of `a;` (half a million directives): stopped at the directive bound, having held
/// the file's text and the directives kept, about 2 MiB; the parse before the bounds held
/// a token list and its directives, about 100 MB.
#[test]
fn a_mebibyte_of_directives_stops_at_the_directive_bound() {
    let conf = b"a;".repeat(usize::try_from(MAX_FILE_BYTES).unwrap() / 2);
    let (e, ms, most) = nginx_parse("directives", &conf);
    assert_eq!(
        e,
        "/etc/nginx/nginx.conf: more than 10000 directives: not read further"
    );
    assert!(ms < 2000, "{ms} ms");
    assert!(
        most < 8 << 20,
        "{most} bytes allocated at most, want < 8 MiB of 128"
    );
    let (e, _, most) = nginx_parse("words", &b"a ".repeat(500_000));
    assert_eq!(
        e,
        "/etc/nginx/nginx.conf: more than 100000 words: not read further"
    );
    assert!(most < 16 << 20, "{most} bytes");
}

#[test]
fn haproxy_keeps_only_what_it_needs_of_a_huge_file() {
    let conf = b"backend b\n".repeat(60_000);
    let root = tree("haproxy", &conf);
    let r = Root::at(&root).unwrap();
    let e =
        haproxy::upstreams(&r, &[Path::new("/etc/nginx/haproxy.cfg").into()], 6443).unwrap_err();
    assert_eq!(
        e.to_string(),
        "/etc/nginx/haproxy.cfg: more than 10000 sections and servers: not read further"
    );
    let too_big = b"#".repeat(usize::try_from(MAX_FILE_BYTES).unwrap() + 1);
    std::fs::write(root.join("etc/nginx/haproxy.cfg"), too_big).unwrap();
    let e =
        haproxy::upstreams(&r, &[Path::new("/etc/nginx/haproxy.cfg").into()], 6443).unwrap_err();
    assert!(
        e.to_string()
            .contains("more than the 1048576 read of one file"),
        "{e}"
    );
    std::fs::remove_dir_all(&root).unwrap();
}
