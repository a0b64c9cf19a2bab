//! nginx's upstreams for one `listen` port of its `stream` module, from its configuration as
//! kubespray writes it (`stream { upstream kube_apiserver { server A:6443; } server { listen
//! 127.0.0.1:6443; proxy_pass kube_apiserver; } }`). `include` globs are followed, relative
//! to the main file's directory as nginx does (`ngx_conf_full_name`, conf prefix).

use std::path::{Path, PathBuf};

use super::files::{Files, split_host_port};

/// One directive: its name, arguments and block (`None` for a `;` one).
#[derive(Debug)]
struct Directive {
    name: String,
    args: Vec<String>,
    block: Option<Vec<Directive>>,
}

/// Tokens: words, and `{`, `}`, `;` on their own; `#` comments and quotes as nginx reads them.
fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut chars = text.chars().peekable();
    let flush = |w: &mut String, out: &mut Vec<String>| {
        if !w.is_empty() {
            out.push(std::mem::take(w));
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '#' if word.is_empty() => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
            }
            '"' | '\'' => {
                for q in chars.by_ref() {
                    if q == c {
                        break;
                    }
                    word.push(q);
                }
            }
            '{' | '}' | ';' => {
                flush(&mut word, &mut out);
                out.push(c.to_string());
            }
            c if c.is_whitespace() => flush(&mut word, &mut out),
            c => word.push(c),
        }
    }
    flush(&mut word, &mut out);
    out
}

/// Parses `text` (from `file`), expanding `include`s through `files`.
fn parse(text: &str, files: &mut Files, depth: u32) -> Vec<Directive> {
    let toks = tokens(text);
    let mut pos = 0;
    block(&toks, &mut pos, files, depth)
}

fn block(toks: &[String], pos: &mut usize, files: &mut Files, depth: u32) -> Vec<Directive> {
    let mut out = Vec::new();
    let mut words: Vec<String> = Vec::new();
    while *pos < toks.len() {
        let t = &toks[*pos];
        *pos += 1;
        match t.as_str() {
            ";" => {
                if let Some((name, args)) = words.split_first() {
                    if name == "include" && depth < 8 {
                        for (_, text) in files.glob(args.first().map_or("", String::as_str)) {
                            out.extend(parse(&text, files, depth + 1));
                        }
                    } else {
                        out.push(Directive {
                            name: name.clone(),
                            args: args.to_vec(),
                            block: None,
                        });
                    }
                }
                words.clear();
            }
            "{" => {
                let inner = block(toks, pos, files, depth);
                if let Some((name, args)) = words.split_first() {
                    out.push(Directive {
                        name: name.clone(),
                        args: args.to_vec(),
                        block: Some(inner),
                    });
                }
                words.clear();
            }
            "}" => return out,
            w => words.push(w.to_owned()),
        }
    }
    out
}

/// Whether a `listen` argument (`127.0.0.1:6443`, `6443`, `[::1]:6443`, `*:6443`) is `port`.
fn listens_on(arg: &str, port: u16) -> bool {
    let p = arg.rsplit_once(':').map_or(arg, |(_, p)| p);
    p.parse() == Ok(port)
}

/// The upstreams (`host`, `port`) nginx's `stream` servers listening on `port` pass to, from
/// the main file `main` (a path inside the process's root `root`).
#[must_use]
pub fn upstreams(root: &Path, main: &Path, port: u16) -> (Vec<(String, u16)>, Vec<PathBuf>) {
    let mut files = Files::new(root, main.parent().unwrap_or(Path::new("/")));
    let Some(text) = files.read(main) else {
        return (Vec::new(), files.read_list());
    };
    let conf = parse(&text, &mut files, 0);
    (from_conf(&conf, port), files.read_list())
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
