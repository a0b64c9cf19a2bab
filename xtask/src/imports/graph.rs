//! The import graph among modules that are not ancestor and descendant of each other (a
//! module using its parent's items, or declaring and using its children, is how modules
//! nest, not a circle): its strongly connected components, a concrete circle through each
//! of their members, and the longest chain of imports.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use super::resolve::Module;

pub(super) struct Graph {
    pub edges: BTreeMap<Module, BTreeSet<Module>>,
}

/// Whether one of `a`, `b` contains the other (a module contains itself).
#[must_use]
pub(super) fn nested(a: &[String], b: &[String]) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

impl Graph {
    /// Keeps the edges between modules that are not nested.
    #[must_use]
    pub(super) fn new(imports: BTreeMap<Module, BTreeSet<Module>>) -> Self {
        let edges = imports
            .into_iter()
            .map(|(from, to)| {
                let to = to.into_iter().filter(|t| !nested(&from, t)).collect();
                (from, to)
            })
            .collect();
        Self { edges }
    }

    fn next(&self, m: &Module) -> impl Iterator<Item = &Module> {
        self.edges.get(m).into_iter().flatten()
    }

    /// Strongly connected components (Tarjan), each sorted, dependencies before dependents.
    #[must_use]
    pub(super) fn components(&self) -> Vec<Vec<Module>> {
        let mut t = Tarjan::default();
        let nodes: BTreeSet<&Module> = self
            .edges
            .keys()
            .chain(self.edges.values().flatten())
            .collect();
        for n in nodes {
            if !t.index.contains_key(n) {
                t.visit(self, n);
            }
        }
        t.out
    }

    /// Circles that together pass through every member of every component of more than one
    /// module; each starts and ends at the same module.
    #[must_use]
    pub(super) fn circles(&self) -> Vec<Vec<Module>> {
        let mut out = Vec::new();
        for comp in self.components().into_iter().filter(|c| c.len() > 1) {
            let members: BTreeSet<&Module> = comp.iter().collect();
            let mut covered = BTreeSet::new();
            for start in &comp {
                if covered.contains(start) {
                    continue;
                }
                let circle = self.shortest_circle(start, &members);
                covered.extend(circle.iter().cloned());
                out.push(circle);
            }
        }
        out
    }

    /// The shortest way from `start` back to itself within `members` (breadth first).
    fn shortest_circle(&self, start: &Module, members: &BTreeSet<&Module>) -> Vec<Module> {
        let mut came_from: BTreeMap<&Module, &Module> = BTreeMap::new();
        let mut queue = VecDeque::from([start]);
        while let Some(m) = queue.pop_front() {
            for n in self.next(m).filter(|n| members.contains(n)) {
                if n == start {
                    let mut path = vec![start.clone(), m.clone()];
                    let mut at = m;
                    while at != start {
                        at = came_from[at];
                        path.push(at.clone());
                    }
                    path.reverse();
                    return path;
                }
                if !came_from.contains_key(n) {
                    came_from.insert(n, m);
                    queue.push_back(n);
                }
            }
        }
        vec![start.clone()]
    }

    /// The longest chain of imports (a component counts once), first importer first.
    #[must_use]
    pub(super) fn longest_chain(&self) -> Vec<Module> {
        let comps = self.components();
        let of: BTreeMap<&Module, usize> = comps
            .iter()
            .enumerate()
            .flat_map(|(k, c)| c.iter().map(move |m| (m, k)))
            .collect();
        // Components come dependencies first, so each one's chain is known before a dependent's.
        let mut best: Vec<(usize, Option<usize>)> = Vec::with_capacity(comps.len());
        for (k, comp) in comps.iter().enumerate() {
            let below = comp
                .iter()
                .flat_map(|m| self.next(m))
                .map(|n| of[n])
                .filter(|&d| d != k)
                .max_by_key(|&d| (best[d].0, std::cmp::Reverse(d)));
            best.push((below.map_or(1, |d| best[d].0 + 1), below));
        }
        let mut at = (0..comps.len()).max_by_key(|&k| (best[k].0, std::cmp::Reverse(k)));
        let mut chain = Vec::new();
        while let Some(k) = at {
            chain.push(comps[k][0].clone());
            at = best[k].1;
        }
        chain
    }
}

#[derive(Default)]
struct Tarjan<'g> {
    index: BTreeMap<&'g Module, usize>,
    low: BTreeMap<&'g Module, usize>,
    stack: Vec<&'g Module>,
    on_stack: BTreeSet<&'g Module>,
    out: Vec<Vec<Module>>,
}

impl<'g> Tarjan<'g> {
    fn visit(&mut self, g: &'g Graph, v: &'g Module) {
        let n = self.index.len();
        self.index.insert(v, n);
        self.low.insert(v, n);
        self.stack.push(v);
        self.on_stack.insert(v);
        for w in g.next(v) {
            if !self.index.contains_key(w) {
                self.visit(g, w);
                let low = self.low[v].min(self.low[w]);
                self.low.insert(v, low);
            } else if self.on_stack.contains(w) {
                let low = self.low[v].min(self.index[w]);
                self.low.insert(v, low);
            }
        }
        if self.low[v] == self.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = self.stack.pop() {
                self.on_stack.remove(w);
                comp.push(w.clone());
                if w == v {
                    break;
                }
            }
            comp.sort();
            self.out.push(comp);
        }
    }
}
