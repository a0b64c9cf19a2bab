//! A row of `lifeline check`: what was tried, its typed result, and what was seen.

pub(super) struct Row {
    pub name: &'static str,
    pub result: Level,
    pub detail: String,
}

/// A row's result: `fail`, the daemon cannot work; `warn`, it works with less.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Level {
    Pass,
    Warn,
    Fail,
}

impl Level {
    /// The word the table prints.
    #[must_use]
    pub(super) const fn as_str(self) -> &'static str {
        match self {
            Self::Pass => "pass",
            Self::Warn => "warn",
            Self::Fail => "fail",
        }
    }
}

impl std::fmt::Display for Level {
    /// `pad`, so the table's `{:<6}` column width applies.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

impl Row {
    pub(super) fn pass(name: &'static str, detail: String) -> Self {
        Self {
            name,
            result: Level::Pass,
            detail,
        }
    }
    pub(super) fn warn(name: &'static str, detail: String) -> Self {
        Self {
            name,
            result: Level::Warn,
            detail,
        }
    }
    pub(super) fn fail(name: &'static str, detail: String) -> Self {
        Self {
            name,
            result: Level::Fail,
            detail,
        }
    }
}
