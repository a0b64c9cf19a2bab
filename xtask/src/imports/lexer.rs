//! Rust source as the few tokens an import scan needs. Comments (doc comments too: an
//! intra-doc link is not an import), string, char and number literals and lifetimes are
//! dropped, so a `crate::x` inside any of them is never read as a path. Also the one bracket
//! matcher the scan and the use-tree reader share.

/// One token; everything that is not a name, `::` or a bracket is a single `Punct`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Tok {
    Ident(String),
    /// `::`
    Sep,
    Open(char),
    Close(char),
    Punct(char),
}

/// The tokens of `src`. Malformed input (an unclosed string or comment) ends the scan there:
/// the compiler, not this gate, reports such files.
#[must_use]
pub(super) fn tokens(src: &str) -> Vec<Tok> {
    let c: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        let next = c.get(i + 1).copied();
        if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && next == Some('*') {
            i = block_comment_end(&c, i);
        } else if ch == '"' {
            i = string_end(&c, i + 1);
        } else if ch == '\'' {
            i = quote_end(&c, i);
        } else if ch.is_ascii_digit() {
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
        } else if ch.is_alphabetic() || ch == '_' {
            i = word(&c, i, &mut out);
        } else if ch == ':' && next == Some(':') {
            out.push(Tok::Sep);
            i += 2;
        } else {
            out.push(match ch {
                '(' | '[' | '{' => Tok::Open(ch),
                ')' | ']' | '}' => Tok::Close(ch),
                _ => Tok::Punct(ch),
            });
            i += 1;
        }
    }
    out
}

/// A name, a raw name (`r#type`), or the prefix of a literal (`b"..."`, `r#"..."#`, `b'x'`).
fn word(c: &[char], start: usize, out: &mut Vec<Tok>) -> usize {
    let mut i = start;
    while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
        i += 1;
    }
    let name: String = c[start..i].iter().collect();
    let prefix = matches!(name.as_str(), "b" | "c" | "r" | "br" | "cr");
    match c.get(i) {
        Some('"') if prefix && !name.ends_with('r') => string_end(c, i + 1),
        Some('\'') if name == "b" => quote_end(c, i),
        Some('"' | '#') if prefix && name.ends_with('r') => {
            let mut hashes = 0;
            while c.get(i + hashes) == Some(&'#') {
                hashes += 1;
            }
            if c.get(i + hashes) == Some(&'"') {
                raw_string_end(c, i + hashes + 1, hashes)
            } else {
                // `r#name`: a raw identifier.
                let mut j = i + 1;
                while j < c.len() && (c[j].is_alphanumeric() || c[j] == '_') {
                    j += 1;
                }
                out.push(Tok::Ident(c[i + 1..j].iter().collect()));
                j
            }
        }
        _ => {
            out.push(Tok::Ident(name));
            i
        }
    }
}

/// Past the `*/` that closes the comment opening at `start` (they nest).
fn block_comment_end(c: &[char], start: usize) -> usize {
    let (mut i, mut depth) = (start + 2, 1);
    while i < c.len() && depth > 0 {
        if c[i] == '/' && c.get(i + 1) == Some(&'*') {
            depth += 1;
            i += 2;
        } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
            depth -= 1;
            i += 2;
        } else {
            i += 1;
        }
    }
    i
}

/// Past the `"` that closes a string whose body starts at `i`.
fn string_end(c: &[char], mut i: usize) -> usize {
    while i < c.len() {
        match c[i] {
            '\\' => i += 2,
            '"' => return i + 1,
            _ => i += 1,
        }
    }
    i
}

/// Past the `"` followed by `hashes` `#` that closes a raw string whose body starts at `i`.
fn raw_string_end(c: &[char], mut i: usize, hashes: usize) -> usize {
    while i < c.len() {
        if c[i] == '"' && (1..=hashes).all(|k| c.get(i + k) == Some(&'#')) {
            return i + 1 + hashes;
        }
        i += 1;
    }
    i
}

/// Past a char literal (`'x'`, `'\n'`, `'\u{..}'`) or a lifetime or label (`'a`) at `i`.
fn quote_end(c: &[char], i: usize) -> usize {
    if c.get(i + 1) == Some(&'\\') {
        let mut j = i + 3;
        while j < c.len() && c[j] != '\'' {
            j += 1;
        }
        return j + 1;
    }
    if c.get(i + 2) == Some(&'\'') {
        return i + 3;
    }
    let mut j = i + 1;
    while j < c.len() && (c[j].is_alphanumeric() || c[j] == '_') {
        j += 1;
    }
    j
}

/// Past the bracket that closes the one opening at `open`.
pub(super) fn close_of(t: &[Tok], open: usize) -> usize {
    let mut depth = 0usize;
    for (k, tok) in t.iter().enumerate().skip(open) {
        match tok {
            Tok::Open(_) => depth += 1,
            Tok::Close(_) => {
                depth -= 1;
                if depth == 0 {
                    return k + 1;
                }
            }
            _ => {}
        }
    }
    t.len()
}
