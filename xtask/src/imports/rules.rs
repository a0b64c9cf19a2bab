//! Rules of the form "module M may be imported only by modules P1, P2, ...", checked on the
//! same graph as the circles: a module inside M (or M itself) may import it, and so may its
//! ancestors (a parent declares and uses its children); any other importer must be one of the
//! Ps or inside one.

use super::graph::Graph;
use super::resolve::Module;

/// One rule, modules written as paths from the crate root (`cli`, `act::kill`).
pub(crate) struct OnlyFrom {
    pub module: &'static str,
    pub importers: &'static [&'static str],
}

fn segments(path: &str) -> Module {
    path.split("::").map(str::to_owned).collect()
}

/// A module as the gate names it: `a::b`, or `crate` for the root.
#[must_use]
pub(super) fn show(m: &[String]) -> String {
    if m.is_empty() {
        "crate".to_owned()
    } else {
        m.join("::")
    }
}

/// One line per import that breaks a rule.
#[must_use]
pub(super) fn broken(krate: &str, graph: &Graph, rules: &[OnlyFrom]) -> Vec<String> {
    let mut out = Vec::new();
    for rule in rules {
        let guarded = segments(rule.module);
        let allowed: Vec<Module> = rule.importers.iter().map(|p| segments(p)).collect();
        for (from, to) in &graph.edges {
            let ok = from.starts_with(&guarded) || allowed.iter().any(|p| from.starts_with(p));
            for t in to.iter().filter(|t| t.starts_with(&guarded)) {
                if !ok {
                    out.push(format!(
                        "import rule in {krate}: {} imports {}, which only {} may import",
                        show(from),
                        show(t),
                        rule.importers.join(", ")
                    ));
                }
            }
        }
    }
    out
}

/// One line per import that goes up the layers: a module in a top-level module of group `i`
/// importing one of group `j >= i` (other than its own top-level module). Modules outside
/// every group (the crate root) are not judged.
#[must_use]
pub(super) fn upward(krate: &str, graph: &Graph, layers: &[&[&str]]) -> Vec<String> {
    let layer = |m: &Module| {
        m.first()
            .and_then(|top| layers.iter().position(|g| g.contains(&top.as_str())))
    };
    let mut out = Vec::new();
    for (from, to) in &graph.edges {
        let Some(lf) = layer(from) else { continue };
        for t in to {
            let Some(lt) = layer(t) else { continue };
            if lt >= lf && from.first() != t.first() {
                out.push(format!(
                    "import layer in {krate}: {} imports {}, a stage at or above its own",
                    show(from),
                    show(t)
                ));
            }
        }
    }
    out
}
