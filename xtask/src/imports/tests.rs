use std::collections::BTreeSet;

use super::lexer::{Tok, tokens};
use super::rules::OnlyFrom;
use super::scan::scan;
use super::{Report, analyse};

fn m(path: &str) -> Vec<String> {
    path.split("::")
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

fn files(list: &[(&str, &str)]) -> Vec<(Vec<String>, String)> {
    list.iter()
        .map(|(p, src)| (m(p), (*src).to_owned()))
        .collect()
}

fn written(src: &str, module: &str) -> BTreeSet<String> {
    scan(&tokens(src), &m(module))
        .paths
        .iter()
        .map(|w| w.path.join("::"))
        .collect()
}

fn run(list: &[(&str, &str)], rules: &[OnlyFrom]) -> Report {
    analyse("demo", &files(list), rules, &[])
}

#[test]
fn comments_strings_and_lifetimes_are_not_paths() {
    let src = r##"
        // crate::a::f()
        /* crate::b /* nested */ crate::c */
        /// [`crate::d`]
        fn f<'a>(x: &'a str) -> char { let _ = "crate::e"; let _ = r#"crate::g"#; 'x' }
        fn g() { crate::h::i(); }
    "##;
    assert_eq!(
        written(src, "x"),
        BTreeSet::from(["crate::h::i".to_owned()])
    );
    assert_eq!(tokens("r#type::x")[0], Tok::Ident("type".into()));
}

#[test]
fn brace_groups_and_self_are_expanded() {
    let src = "use crate::{a::{b, c::D as E, self}, d::*}; use super::super::f; use self::g::H;";
    let got = written(src, "p::q");
    let want = [
        "crate::a::b",
        "crate::a::c::D",
        "crate::a",
        "crate::d",
        "super::super::f",
        "self::g::H",
    ];
    assert_eq!(got, want.iter().map(|s| (*s).to_owned()).collect());
}

#[test]
fn a_circle_is_found_and_named() {
    let r = run(
        &[
            ("", "mod a; mod b; mod c;"),
            ("a", "mod inner { use super::super::b::X; }"),
            ("b", "pub fn f() { crate::c::g() }"),
            ("c", "use super::{a::{self, Y}};"),
        ],
        &[],
    );
    assert_eq!(r.problems, ["import circle in demo: a -> b -> c -> a"]);
}

#[test]
fn parent_and_child_are_no_circle() {
    let r = run(
        &[
            ("", "mod p; fn main() { p::run() }"),
            ("p", "mod k; pub use k::K; pub fn run() { k::go() }"),
            ("p::k", "use super::run; use crate::p::*;"),
        ],
        &[],
    );
    assert!(r.problems.is_empty(), "{:?}", r.problems);
}

#[test]
fn bare_paths_follow_bindings_and_globs_and_test_code_is_skipped() {
    let r = run(
        &[
            ("", "mod a; mod b; mod c; mod d;"),
            ("a", "use super::b; fn f() { b::x(); }"),
            ("b", "use super::*; fn g() { c::y(); }"),
            (
                "c",
                "#[cfg(test)]\nmod tests { use crate::a::f; }\n#[cfg(test)] fn t() { crate::a::f() }",
            ),
            ("d", "#![cfg(test)]\nuse crate::a::f;"),
        ],
        &[],
    );
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    let chain: Vec<String> = r.chain.iter().map(|c| c.join("::")).collect();
    assert_eq!(chain, ["a", "b", "c"]);
}

#[test]
fn an_only_from_rule_names_the_importer_it_refuses() {
    let rules = [OnlyFrom {
        module: "cli",
        importers: &["run"],
    }];
    let r = run(
        &[
            (
                "",
                "mod cli; mod run; mod judge; fn main() { cli::parse() }",
            ),
            ("cli", "mod args;"),
            ("cli::args", "use super::*;"),
            ("run", "use crate::cli::args::Args;"),
            ("run::loop_", "use crate::cli::Args;"),
            ("judge", "fn f() { crate::cli::args::Args::new() }"),
        ],
        &rules,
    );
    assert_eq!(
        r.problems,
        ["import rule in demo: judge imports cli::args, which only run may import"]
    );
}

#[test]
fn an_import_up_the_layers_is_named_and_one_down_is_not() {
    let files: Vec<(Vec<String>, String)> = [
        ("", "mod kernel; mod judge; mod report;"),
        ("kernel", "mod probe; fn f() { crate::report::show() }"),
        ("kernel::probe", "use super::*;"),
        ("judge", "use crate::kernel::probe::Probe;"),
        ("report", "use crate::{judge::Verdict, kernel::probe};"),
    ]
    .iter()
    .map(|(m, s)| {
        let m = m.split("::").filter(|p| !p.is_empty()).map(str::to_owned);
        (m.collect(), (*s).to_owned())
    })
    .collect();
    let r = analyse("demo", &files, &[], &[&["kernel"], &["judge"], &["report"]]);
    assert_eq!(
        r.problems,
        ["import layer in demo: kernel imports report, a stage at or above its own"]
    );
}

#[test]
fn this_workspace_has_no_circles_outside_the_agent() {
    let ws = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap();
    for krate in super::CRATES.iter().filter(|c| c.name != "agent") {
        let files = super::read_tree(&ws.join(krate.src)).unwrap();
        let r = analyse(krate.name, &files, krate.rules, krate.layers);
        assert!(r.problems.is_empty(), "{:?}", r.problems);
        assert!(r.chain.len() > 1, "{} has imports", krate.name);
    }
}
