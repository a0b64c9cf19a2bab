//! The leaves of a `use` item: brace groups expanded (`a::{b, c::{d as e, self}, f::*}` is
//! `a::b`, `a::c::d` bound as `e`, `a::c`, and the glob `a::f`), each with the name it binds.

use super::lexer::{Tok, close_of};

/// The leaves of a use tree (`a::{b, c::{d as e, self}, f::*}`) under `prefix`.
pub(super) fn use_tree(
    t: &[Tok],
    prefix: &mut Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>)>,
) {
    let base = prefix.len();
    let mut i = 0;
    while let Some(tok) = t.get(i) {
        match tok {
            // `self` in a group (`a::{self, b}`) is the group's prefix; `self::x` is a path.
            Tok::Ident(w) if w == "self" && t.get(i + 1) != Some(&Tok::Sep) => {
                out.push((prefix.clone(), alias(t, i + 1).or(prefix.last().cloned())));
                i = t.len();
            }
            Tok::Ident(w) => {
                prefix.push(w.clone());
                if t.get(i + 1) == Some(&Tok::Sep) {
                    i += 2;
                    continue;
                }
                out.push((prefix.clone(), alias(t, i + 1).or(Some(w.clone()))));
                i = t.len();
            }
            // `$crate` in a macro is this crate.
            Tok::Punct('$') => i += 1,
            Tok::Punct('*') => {
                out.push((prefix.clone(), None));
                i = t.len();
            }
            Tok::Open('{') => {
                let end = close_of(t, i);
                for part in split_top(&t[i + 1..end - 1]) {
                    use_tree(part, prefix, out);
                }
                i = t.len();
            }
            // A leading `::` (an extern crate) or anything unexpected: nothing of ours.
            _ => i = t.len(),
        }
    }
    prefix.truncate(base);
}

/// `as name` at `i`, if there.
fn alias(t: &[Tok], i: usize) -> Option<String> {
    match (t.get(i), t.get(i + 1)) {
        (Some(Tok::Ident(a)), Some(Tok::Ident(name))) if a == "as" => Some(name.clone()),
        _ => None,
    }
}

/// The comma-separated parts of a brace group's contents, nested groups kept whole.
fn split_top(t: &[Tok]) -> Vec<&[Tok]> {
    let (mut parts, mut start, mut depth) = (Vec::new(), 0, 0usize);
    for (k, tok) in t.iter().enumerate() {
        match tok {
            Tok::Open(_) => depth += 1,
            Tok::Close(_) => depth = depth.saturating_sub(1),
            Tok::Punct(',') if depth == 0 => {
                parts.push(&t[start..k]);
                start = k + 1;
            }
            _ => {}
        }
    }
    parts.push(&t[start..]);
    parts.into_iter().filter(|p| !p.is_empty()).collect()
}
