//! One file's module paths as written: every `use` tree (brace groups expanded, `self` in a
//! group standing for its prefix) and every path in code, each with the module scope it was
//! written in (the file's module, or an inline `mod` inside it). Test-only code is left out:
//! items under `#[cfg(test)]`, and a file that starts with `#![cfg(test)]`.

use super::lexer::{Tok, close_of};
use super::use_tree::use_tree;

/// A path as written, in the module `scope` (absolute, from the crate root).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Written {
    pub scope: Vec<String>,
    /// Segments as written: `crate`, `self` or `super`s first, or a bare name.
    pub path: Vec<String>,
    /// A `use` leaf: the name it brings into `scope` (`as` respected); None for a glob.
    pub binds: Option<String>,
    pub from_use: bool,
}

/// What one file says.
#[derive(Debug, Default)]
pub(super) struct Scan {
    pub paths: Vec<Written>,
    /// Children declared `#[cfg(test)] mod x;`: their files are test code.
    pub test_children: Vec<String>,
    /// `#![cfg(test)]`: the whole file is test code.
    pub test_only: bool,
}

const ITEM_START: [&str; 15] = [
    "mod",
    "pub",
    "use",
    "fn",
    "impl",
    "const",
    "static",
    "struct",
    "enum",
    "trait",
    "type",
    "macro_rules",
    "extern",
    "unsafe",
    "async",
];

/// Scans the tokens of the file whose module is `module`.
#[must_use]
pub(super) fn scan(t: &[Tok], module: &[String]) -> Scan {
    let mut out = Scan::default();
    // Inline modules open in this file: (name, depth of its `{`).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let (mut i, mut depth, mut test_attr) = (0, 0, false);
    while i < t.len() {
        let scope = || -> Vec<String> {
            let mut s = module.to_vec();
            s.extend(inline.iter().map(|(n, _)| n.clone()));
            s
        };
        // An attribute leaves `test_attr` set for the item it is on; anything else clears it.
        let on_test = !matches!(t[i], Tok::Punct('#')) && std::mem::take(&mut test_attr);
        match &t[i] {
            Tok::Punct('#') => {
                let inner = t.get(i + 1) == Some(&Tok::Punct('!'));
                let open = i + 1 + usize::from(inner);
                if t.get(open) == Some(&Tok::Open('[')) {
                    let end = close_of(t, open);
                    let is_test = t[open + 1..end.saturating_sub(1)] == cfg_test();
                    if is_test && inner && depth == 0 && inline.is_empty() {
                        out.test_only = true;
                        return out;
                    }
                    test_attr |= is_test && !inner;
                    i = end;
                    continue;
                }
            }
            Tok::Ident(w) if on_test && ITEM_START.contains(&w.as_str()) => {
                i = skip_item(t, i, &mut out.test_children);
                continue;
            }
            Tok::Ident(w) if w == "use" && t.get(i + 1) != Some(&Tok::Punct('<')) => {
                let end = (i..t.len())
                    .find(|&k| t[k] == Tok::Punct(';'))
                    .unwrap_or(t.len());
                let mut leaves = Vec::new();
                use_tree(&t[i + 1..end], &mut Vec::new(), &mut leaves);
                for (path, binds) in leaves {
                    out.paths.push(Written {
                        scope: scope(),
                        path,
                        binds,
                        from_use: true,
                    });
                }
                i = end;
                continue;
            }
            Tok::Ident(w) if w == "mod" => {
                if let (Some(Tok::Ident(name)), Some(Tok::Open('{'))) = (t.get(i + 1), t.get(i + 2))
                {
                    depth += 1;
                    inline.push((name.clone(), depth));
                    i += 3;
                    continue;
                }
            }
            Tok::Ident(_) if starts_path(t, i) => {
                let (path, end) = path_at(t, i);
                out.paths.push(Written {
                    scope: scope(),
                    path,
                    binds: None,
                    from_use: false,
                });
                i = end;
                continue;
            }
            Tok::Open(_) => depth += 1,
            Tok::Close(_) => {
                if inline.last().is_some_and(|&(_, d)| d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
            }
            _ => {}
        }
        i += 1;
    }
    out
}

fn cfg_test() -> [Tok; 4] {
    [
        Tok::Ident("cfg".into()),
        Tok::Open('('),
        Tok::Ident("test".into()),
        Tok::Close(')'),
    ]
}

/// A path in code starts at a name followed by `::` that does not itself follow `::`, and is
/// not the `in crate::x` of a `pub(in ...)` visibility.
fn starts_path(t: &[Tok], i: usize) -> bool {
    let before = |k: usize| i.checked_sub(k).map(|j| &t[j]);
    t.get(i + 1) == Some(&Tok::Sep)
        && !matches!(before(1), Some(Tok::Sep | Tok::Punct('.')))
        && !(matches!(before(1), Some(Tok::Ident(w)) if w == "in")
            && before(2) == Some(&Tok::Open('(')))
}

/// The segments `a::b::c` at `i` (a turbofish or anything else ends it), and where it ends.
fn path_at(t: &[Tok], mut i: usize) -> (Vec<String>, usize) {
    let mut path = Vec::new();
    while let Some(Tok::Ident(w)) = t.get(i) {
        path.push(w.clone());
        if t.get(i + 1) != Some(&Tok::Sep) {
            return (path, i + 1);
        }
        i += 2;
    }
    (path, i)
}

/// Past a test-only item starting at `i`: up to its `;`, or its first brace block. A
/// `mod x;` declaration is recorded, since its file is test code too.
fn skip_item(t: &[Tok], i: usize, test_children: &mut Vec<String>) -> usize {
    let mut k = i;
    while k < t.len() {
        match &t[k] {
            Tok::Punct(';') => {
                if let [.., Tok::Ident(m), Tok::Ident(name)] = &t[i..k]
                    && m == "mod"
                {
                    test_children.push(name.clone());
                }
                return k + 1;
            }
            Tok::Open('{') => return close_of(t, k),
            Tok::Open(_) => k = close_of(t, k),
            Tok::Close(_) => return k,
            _ => k += 1,
        }
    }
    k
}
