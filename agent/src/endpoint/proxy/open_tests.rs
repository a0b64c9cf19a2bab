//! Issue 34 test b, the file half: what a neighbour who can write the proxy's files can put
//! at its paths. Each is one clear error, at once.

use std::{os::unix::fs::symlink, path::Path, time::Instant};

use super::*;
use crate::endpoint::proxy::files::{Files, MAX_FILE_BYTES, ReadError, Root};

fn tree(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("lifeline-open-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("etc/nginx")).unwrap();
    d
}

/// A FIFO at the config path: refused by `fstat` after a non-blocking open, at once (a
/// blocking open would wait for a writer forever).
#[test]
fn a_fifo_is_refused_without_waiting() {
    let root = tree("fifo");
    let fifo = root.join("etc/nginx/nginx.conf");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path of our own.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let r = Root::at(&root).unwrap();
    let t0 = Instant::now();
    let e = Files::new(&r, Path::new("/")).read(Path::new("/etc/nginx/nginx.conf"));
    assert!(t0.elapsed().as_millis() < 500);
    let e = e.unwrap_err();
    assert_eq!(
        e.to_string(),
        "/etc/nginx/nginx.conf is a FIFO, not a regular file: not read"
    );
    std::fs::remove_dir_all(&root).unwrap();
}

/// Symlinks resolve inside the proxy's root whatever they say: an absolute one to a file
/// of ours, and one climbing out with `..`, both end at the root's own (missing) paths.
#[test]
fn symlinks_cannot_leave_the_root() {
    let root = tree("escape");
    let outside = tree("outside");
    let secret = outside.join("secret.conf");
    std::fs::write(&secret, "stream { }").unwrap();
    symlink(&secret, root.join("etc/nginx/nginx.conf")).unwrap();
    let up = format!("../../../../../../..{}", secret.display());
    symlink(&up, root.join("etc/nginx/up.conf")).unwrap();
    std::fs::write(root.join("etc/nginx/real.conf"), "x;").unwrap();
    symlink("real.conf", root.join("etc/nginx/inside.conf")).unwrap();
    let r = Root::at(&root).unwrap();
    for flags in [None, Some(())] {
        // None: openat2; Some: the component walk older kernels get.
        let read = |p: &str| -> Result<String, String> {
            let path = Path::new(p);
            match flags {
                None => Files::new(&r, Path::new("/"))
                    .read(path)
                    .map_err(|e| e.to_string()),
                Some(()) => walk(&r_fd(&root), path, libc::O_RDONLY)
                    .map(|_| "opened".to_owned())
                    .map_err(|e| e.to_string()),
            }
        };
        for p in ["/etc/nginx/nginx.conf", "/etc/nginx/up.conf"] {
            let got = read(p);
            assert!(got.is_err(), "{p} read outside the root: {got:?}");
        }
        assert!(
            read("/etc/nginx/inside.conf").is_ok(),
            "a link inside the root"
        );
    }
    let e = Files::new(&r, Path::new("/"))
        .read(Path::new("/etc/nginx/nginx.conf"))
        .unwrap_err();
    assert!(matches!(e, ReadError::Missing { .. }), "{e:?}");
    std::fs::remove_dir_all(&root).unwrap();
    std::fs::remove_dir_all(&outside).unwrap();
}

fn r_fd(root: &Path) -> std::os::fd::OwnedFd {
    dir(root).unwrap()
}

/// The walk follows links as the kernel does: relative ones from their directory, `..`
/// after a link from the link's target, absolute ones from the root, and stops loops.
#[test]
fn the_component_walk_resolves_like_the_kernel() {
    let root = tree("walk");
    std::fs::create_dir_all(root.join("a/b")).unwrap();
    std::fs::write(root.join("a/f"), "f").unwrap();
    symlink("b", root.join("a/lb")).unwrap();
    symlink("/a/f", root.join("a/b/abs")).unwrap();
    symlink("loop", root.join("loop")).unwrap();
    let fd = r_fd(&root);
    for p in ["/a/f", "a/lb/../f", "/a/b/abs", "/../../a/f"] {
        assert!(walk(&fd, Path::new(p), libc::O_RDONLY).is_ok(), "{p}");
        assert!(openat2(&fd, Path::new(p), libc::O_RDONLY).is_ok(), "{p}");
    }
    let e = walk(&fd, Path::new("/loop"), libc::O_RDONLY).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::ELOOP));
    std::fs::remove_dir_all(&root).unwrap();
}

/// A 100 GB sparse file (k3s's load-balancer file, here at its path): refused by its size
/// before a byte is read; a file of exactly the bound is read.
#[test]
fn a_huge_sparse_file_is_refused_by_its_size() {
    let root = tree("sparse");
    let etc = root.join("var/lib/rancher/k3s/agent/etc");
    std::fs::create_dir_all(&etc).unwrap();
    let f = std::fs::File::create(etc.join("k3s-agent-load-balancer.json")).unwrap();
    f.set_len(100 << 30).unwrap();
    let r = Root::at(&root).unwrap();
    let t0 = Instant::now();
    let e = crate::endpoint::proxy::k3s::upstreams(&r, "k3s", Path::new("/var/lib/rancher/k3s"))
        .unwrap_err();
    assert!(t0.elapsed().as_millis() < 500);
    assert_eq!(
        e.to_string(),
        format!(
            "/var/lib/rancher/k3s/agent/etc/k3s-agent-load-balancer.json has 107374182400 bytes, more than the {MAX_FILE_BYTES} read of one file: not read"
        )
    );
    f.set_len(MAX_FILE_BYTES).unwrap();
    let e = crate::endpoint::proxy::k3s::upstreams(&r, "k3s", Path::new("/var/lib/rancher/k3s"))
        .unwrap_err();
    assert!(e.to_string().contains("not a load-balancer file"), "{e}");
    std::fs::remove_dir_all(&root).unwrap();
}
