//! nginx's upstreams for one `listen` port of its `stream` module, from its configuration as
//! kubespray writes it (`stream { upstream kube_apiserver { server A:6443; } server { listen
//! 127.0.0.1:6443; proxy_pass kube_apiserver; } }`). `include` globs are followed, relative
//! to the main file's directory as nginx does (`ngx_conf_full_name`, conf prefix).
//!
//! The text is whoever can write the proxy's files', so the parser has bounds of its own
//! besides the files' (`files.rs`): blocks nested at most `MAX_DEPTH` deep (nginx's own
//! configurations nest four: `http`, `server`, `location`, `if`), at most `MAX_DIRECTIVES`
//! directives and `MAX_WORDS` words in one read, `include`s at most `MAX_INCLUDES` deep. The
//! tokens are taken one at a time from the text, never all at once, so 1 MiB of `a;` costs
//! the directives kept, not a token list a hundred times the file.

use std::{
    path::{Path, PathBuf},
    str::Chars,
};

use super::files::{Files, ReadError, Root, split_host_port};

pub(super) const MAX_DEPTH: usize = 32;
pub(super) const MAX_DIRECTIVES: usize = 10_000;
pub(super) const MAX_WORDS: usize = 100_000;
pub(super) const MAX_INCLUDES: usize = 8;

/// One directive: its name, arguments and block (`None` for a `;` one).
#[derive(Debug)]
struct Directive {
    name: String,
    args: Vec<String>,
    block: Option<Vec<Directive>>,
}

#[derive(Debug, PartialEq, Eq)]
enum Token {
    Word(String),
    Open,
    Close,
    Semi,
}

/// Words, and `{`, `}`, `;` on their own; `#` comments and quotes as nginx reads them.
struct Tokens<'a> {
    chars: Chars<'a>,
    /// A `{`, `}` or `;` that ended the word before it.
    held: Option<Token>,
}

impl Iterator for Tokens<'_> {
    type Item = Token;

    fn next(&mut self) -> Option<Token> {
        if let Some(t) = self.held.take() {
            return Some(t);
        }
        let mut word = String::new();
        while let Some(c) = self.chars.next() {
            match c {
                '#' if word.is_empty() => {
                    for c in self.chars.by_ref() {
                        if c == '\n' {
                            break;
                        }
                    }
                }
                '"' | '\'' => {
                    for q in self.chars.by_ref() {
                        if q == c {
                            break;
                        }
                        word.push(q);
                    }
                }
                '{' | '}' | ';' => {
                    let t = match c {
                        '{' => Token::Open,
                        '}' => Token::Close,
                        _ => Token::Semi,
                    };
                    if word.is_empty() {
                        return Some(t);
                    }
                    self.held = Some(t);
                    return Some(Token::Word(word));
                }
                c if c.is_whitespace() => {
                    if !word.is_empty() {
                        return Some(Token::Word(word));
                    }
                }
                c => word.push(c),
            }
        }
        (!word.is_empty()).then_some(Token::Word(word))
    }
}

/// What one read may still spend.
struct Spend<'f, 'r> {
    files: &'f mut Files<'r>,
    directives: usize,
    words: usize,
}

impl Spend<'_, '_> {
    fn directive(&mut self, file: &Path) -> Result<(), ReadError> {
        self.directives += 1;
        if self.directives > MAX_DIRECTIVES {
            return Err(parse_error(
                file,
                format!("more than {MAX_DIRECTIVES} directives: not read further"),
            ));
        }
        Ok(())
    }
}

fn parse_error(file: &Path, why: String) -> ReadError {
    ReadError::Parse {
        path: file.to_owned(),
        why,
    }
}

/// Parses `text` (from `file`), expanding `include`s (`includes` deep so far).
fn parse(
    text: &str,
    file: &Path,
    spend: &mut Spend<'_, '_>,
    includes: usize,
) -> Result<Vec<Directive>, ReadError> {
    let mut toks = Tokens {
        chars: text.chars(),
        held: None,
    };
    block(&mut toks, file, spend, (0, includes))
}

/// The directives up to the `}` that closes this block (or the end of the text); `depth`:
/// blocks open around it, `includes`: files included to reach it.
fn block(
    toks: &mut Tokens<'_>,
    file: &Path,
    spend: &mut Spend<'_, '_>,
    (depth, includes): (usize, usize),
) -> Result<Vec<Directive>, ReadError> {
    let mut out = Vec::new();
    let mut words: Vec<String> = Vec::new();
    while let Some(t) = toks.next() {
        match t {
            Token::Semi => {
                if let Some((name, args)) = words.split_first() {
                    if name == "include" {
                        if includes >= MAX_INCLUDES {
                            return Err(parse_error(
                                file,
                                format!("includes nested more than {MAX_INCLUDES} deep"),
                            ));
                        }
                        let pattern = args.first().map_or("", String::as_str);
                        for (path, text) in spend.files.glob(pattern)? {
                            out.extend(parse(&text, &path, spend, includes + 1)?);
                        }
                    } else {
                        spend.directive(file)?;
                        out.push(Directive {
                            name: name.clone(),
                            args: args.to_vec(),
                            block: None,
                        });
                    }
                }
                words.clear();
            }
            Token::Open => {
                if depth + 1 > MAX_DEPTH {
                    return Err(parse_error(
                        file,
                        format!("blocks nested more than {MAX_DEPTH} deep: not read further"),
                    ));
                }
                spend.directive(file)?;
                let inner = block(toks, file, spend, (depth + 1, includes))?;
                if let Some((name, args)) = words.split_first() {
                    out.push(Directive {
                        name: name.clone(),
                        args: args.to_vec(),
                        block: Some(inner),
                    });
                }
                words.clear();
            }
            Token::Close => return Ok(out),
            Token::Word(w) => {
                spend.words += 1;
                if spend.words > MAX_WORDS {
                    return Err(parse_error(
                        file,
                        format!("more than {MAX_WORDS} words: not read further"),
                    ));
                }
                words.push(w);
            }
        }
    }
    Ok(out)
}

/// Whether a `listen` argument (`127.0.0.1:6443`, `6443`, `[::1]:6443`, `*:6443`) is `port`.
fn listens_on(arg: &str, port: u16) -> bool {
    let p = arg.rsplit_once(':').map_or(arg, |(_, p)| p);
    p.parse() == Ok(port)
}

/// The upstreams (`host`, `port`) and the files read.
pub(super) type Found = (Vec<(String, u16)>, Vec<PathBuf>);

/// The upstreams nginx's `stream` servers listening on `port` pass to, from the main file
/// `main` (a path inside the process's root `root`).
///
/// # Errors
/// When a file cannot be read or a bound is passed.
pub(super) fn upstreams(root: &Root, main: &Path, port: u16) -> Result<Found, ReadError> {
    let mut files = Files::new(root, main.parent().unwrap_or(Path::new("/")));
    let text = files.read(main)?;
    let conf = {
        let mut spend = Spend {
            files: &mut files,
            directives: 0,
            words: 0,
        };
        parse(&text, main, &mut spend, 0)?
    };
    Ok((from_conf(&conf, port), files.read_list()))
}

/// The upstreams of `text` as the main file (includes resolved inside `root`).
///
/// # Errors
/// When an include cannot be read or a bound is passed.
#[cfg(test)]
pub(super) fn of_text(root: &Root, text: &str, port: u16) -> Result<Vec<(String, u16)>, ReadError> {
    let mut files = Files::new(root, Path::new("/etc/nginx"));
    let mut spend = Spend {
        files: &mut files,
        directives: 0,
        words: 0,
    };
    let conf = parse(text, Path::new("/etc/nginx/nginx.conf"), &mut spend, 0)?;
    Ok(from_conf(&conf, port))
}

fn from_conf(conf: &[Directive], port: u16) -> Vec<(String, u16)> {
    let mut out = Vec::new();
    for stream in conf.iter().filter(|d| d.name == "stream") {
        let body = stream.block.as_deref().unwrap_or_default();
        let named = |n: &str| {
            body.iter()
                .find(|d| d.name == "upstream" && d.args.first().is_some_and(|a| a == n))
        };
        for server in body.iter().filter(|d| d.name == "server") {
            let body = server.block.as_deref().unwrap_or_default();
            let listens = body
                .iter()
                .any(|d| d.name == "listen" && d.args.first().is_some_and(|a| listens_on(a, port)));
            let pass = body.iter().find(|d| d.name == "proxy_pass");
            let (true, Some(pass)) = (listens, pass.and_then(|p| p.args.first())) else {
                continue;
            };
            if let Some(up) = named(pass) {
                let servers = up.block.as_deref().unwrap_or_default();
                out.extend(
                    servers
                        .iter()
                        .filter(|d| d.name == "server")
                        .filter_map(|d| split_host_port(d.args.first()?)),
                );
            } else if let Some(hp) = split_host_port(pass) {
                out.push(hp);
            }
        }
    }
    out.dedup();
    out
}

#[cfg(test)]
#[path = "nginx_tests.rs"]
mod tests;
