//! From paths as written to the modules they import. `crate::`, `self::` and `super::` paths
//! are absolute once the scope is known; a bare `name::...` is followed through the `use`
//! that bound `name` in that scope, else it is a child of the scope or of a glob-imported
//! module (`use super::*`), and otherwise not ours (std, a dependency, a local item).
//! A path imports the longest known module it starts with.

use std::collections::{BTreeMap, BTreeSet};

use super::scan::Written;

pub(super) type Module = Vec<String>;

/// How deep a bare path may follow `use` bindings (`use super::a; use a::b; b::f()`).
const MAX_HOPS: usize = 8;

/// Every module each file module imports (itself left out).
#[must_use]
pub(super) fn imports(
    files: &[(Module, Vec<Written>)],
    modules: &BTreeSet<Module>,
) -> BTreeMap<Module, BTreeSet<Module>> {
    let mut edges: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for (module, written) in files {
        let scopes = Scopes::of(written);
        let targets = edges.entry(module.clone()).or_default();
        for w in written {
            for (path, min) in scopes.resolve(&w.scope, &w.path, MAX_HOPS) {
                if let Some(t) = longest_module(&path, min, modules)
                    && t != *module
                {
                    targets.insert(t);
                }
            }
        }
    }
    edges
}

/// The longest prefix of `path`, at least `min` segments long, that is a module.
fn longest_module(path: &[String], min: usize, modules: &BTreeSet<Module>) -> Option<Module> {
    (min..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|p| modules.contains(p))
}

/// What each scope's `use` items bind: names and globs, as written.
struct Scopes<'a> {
    names: BTreeMap<(&'a [String], &'a str), &'a [String]>,
    globs: BTreeMap<&'a [String], Vec<&'a [String]>>,
}

impl<'a> Scopes<'a> {
    fn of(written: &'a [Written]) -> Self {
        let (mut names, mut globs) = (BTreeMap::new(), BTreeMap::<_, Vec<_>>::new());
        for w in written.iter().filter(|w| w.from_use) {
            match &w.binds {
                Some(name) => {
                    names.insert((w.scope.as_slice(), name.as_str()), w.path.as_slice());
                }
                None => globs
                    .entry(w.scope.as_slice())
                    .or_default()
                    .push(w.path.as_slice()),
            }
        }
        Self { names, globs }
    }

    /// The absolute paths `path` (written in `scope`) may mean, each with the least number of
    /// segments its module must have (a child or glob candidate must be a module itself).
    fn resolve(&self, scope: &[String], path: &[String], hops: usize) -> Vec<(Module, usize)> {
        let Some(first) = path.first() else {
            return Vec::new();
        };
        let rest = &path[1..];
        match first.as_str() {
            "crate" => vec![(rest.to_vec(), 0)],
            "self" => vec![([scope, rest].concat(), 0)],
            "super" => {
                let ups = path.iter().take_while(|s| *s == "super").count();
                match scope.len().checked_sub(ups) {
                    Some(keep) => vec![([&scope[..keep], &path[ups..]].concat(), 0)],
                    None => Vec::new(),
                }
            }
            name => {
                if let Some(bound) = self.names.get(&(scope, name)) {
                    // `use a::b as c; c::d` means `a::b::d`. A name bound to the very path
                    // it came from (`use x;`) says nothing more.
                    if hops == 0 || *bound == path {
                        return Vec::new();
                    }
                    return self
                        .resolve(scope, bound, hops - 1)
                        .into_iter()
                        .map(|(p, min)| ([p.as_slice(), rest].concat(), min))
                        .collect();
                }
                let mut out = vec![([scope, path].concat(), scope.len() + 1)];
                for glob in self.globs.get(scope).into_iter().flatten() {
                    if hops > 0 {
                        for (g, _) in self.resolve(scope, glob, hops - 1) {
                            let min = g.len() + 1;
                            out.push(([g.as_slice(), path].concat(), min));
                        }
                    }
                }
                out
            }
        }
    }
}
