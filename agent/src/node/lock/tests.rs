//! The lock in a directory of the test's own, so a real agent on the machine is neither seen
//! nor disturbed. A record lock belongs to a process, so the first holder is this test binary
//! run again as a child (`child_holds_the_lock`).

use std::{
    io::{BufRead as _, BufReader, Write as _},
    os::unix::fs::PermissionsExt as _,
    path::PathBuf,
    process::{Command, Stdio},
};

use super::acquire_in;

const DIR_VAR: &str = "LIFELINE_LOCK_TEST_DIR";
const NAME: &str = "agent.net-test.lock";

fn test_dir(what: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lifeline-lock-{what}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Not a test of its own: the holder the parent test starts. It takes the lock, says so,
/// and holds it until its stdin closes.
#[test]
#[ignore = "run by second_holder_is_refused_with_the_first_ones_pid as its child"]
fn child_holds_the_lock() {
    // `cargo test -- --ignored` alone: nothing to hold for.
    let Some(dir) = std::env::var_os(DIR_VAR).map(PathBuf::from) else {
        return;
    };
    let _lock = acquire_in(&dir, NAME).expect("the child takes the lock");
    // Past libtest's capture of `println!`, straight to the parent's pipe.
    let mut out = std::io::stdout();
    writeln!(out, "held").and_then(|()| out.flush()).unwrap();
    let _ = std::io::stdin().read_line(&mut String::new());
}

#[test]
fn second_holder_is_refused_with_the_first_ones_pid() {
    let dir = test_dir("held");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "node::lock::tests::child_holds_the_lock"])
        .args(["--ignored", "--nocapture", "--test-threads=1"])
        .env(DIR_VAR, &dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Kept open until the child has exited: libtest writes its result line last.
    let mut out = BufReader::new(child.stdout.take().unwrap());
    // After libtest's `test NAME ... ` on the same line.
    let held = (&mut out)
        .lines()
        .map_while(Result::ok)
        .any(|l| l.ends_with("held"));
    assert!(held, "the child did not take the lock");
    assert_eq!(
        std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
        0o700,
        "made root-only"
    );

    let err = format!("{:#}", acquire_in(&dir, NAME).err().expect("refused"));
    let pid = child.id();
    assert!(
        err.starts_with(&format!(
            "another lifeline agent is already running in this network namespace (pid {pid}, "
        )) && err.contains("child_holds_the_lock"),
        "{err}"
    );
    drop(child.stdin.take()); // the child lets go and exits
    assert!(child.wait().unwrap().success());
    drop(out);
    assert!(!dir.join(NAME).exists(), "the holder removes its file");

    let again = acquire_in(&dir, NAME).expect("taken once the holder is gone");
    assert!(dir.join(NAME).exists());
    drop(again);
    assert!(!dir.join(NAME).exists(), "removed on drop");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_directory_others_can_write_or_own_is_refused() {
    let dir = test_dir("open");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let err = format!("{:#}", acquire_in(&dir, NAME).err().expect("refused"));
    assert_eq!(
        err,
        format!(
            "the agent lock's directory {} is writable by group or others (mode 1777): refusing it (chmod 0700 it)",
            dir.display()
        )
    );
    assert!(!dir.join(NAME).exists(), "nothing made in it");

    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    // SAFETY: geteuid(2) cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        std::os::unix::fs::chown(&dir, Some(65534), None).unwrap();
        let err = format!("{:#}", acquire_in(&dir, NAME).err().expect("refused"));
        assert!(
            err.contains("belongs to uid 65534, not uid 0: refusing it"),
            "{err}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();

    let file = test_dir("file");
    std::fs::write(&file, "").unwrap();
    let err = format!("{:#}", acquire_in(&file, NAME).err().expect("refused"));
    assert!(err.ends_with("is not a directory: refusing it"), "{err}");
    std::fs::remove_file(&file).unwrap();
}
