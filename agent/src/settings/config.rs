//! The TOML config file: defaults for every flag of `run` and `check`; flags win.
//!
//! There is no second description of the options: a key is a flag's long name with `_` for
//! `-` (`stall_timeout` for `--stall-timeout`), its value goes through that flag's own clap
//! parser, and the accepted values become `--flag=value` arguments parsed after the command
//! line's. So a new flag is configurable the moment it exists, with the same validation,
//! and a flag given on the command line is never overridden (its key is skipped).

use std::{
    ffi::OsString,
    path::{Path, PathBuf},
};

use clap::{
    Arg, ArgAction, ArgMatches, CommandFactory as _, FromArgMatches as _, parser::ValueSource,
};

use crate::cli::{Cli, node_args::DEFAULT_CONFIG};

/// sysexits.h `EX_CONFIG`: the configuration is wrong (documented in the README).
pub(crate) const EX_CONFIG: u8 = 78;

/// Why the command line could not be turned into a `Cli`.
pub(crate) enum CliError {
    /// Usage error, `--help` or `--version`: clap prints it and picks the exit code.
    Clap(clap::Error),
    /// The config file is missing, unreadable or wrong: one line, exit `EX_CONFIG`.
    Config(String),
}

/// Parse the command line, then fill what it left unset from the config file.
///
/// # Errors
/// As `CliError` says.
pub(crate) fn parse_cli(argv: Vec<OsString>) -> Result<Cli, CliError> {
    let matches = Cli::command()
        .try_get_matches_from(&argv)
        .map_err(CliError::Clap)?;
    let Some((name @ ("run" | "check"), sub)) = matches.subcommand() else {
        return Cli::from_arg_matches(&matches).map_err(CliError::Clap);
    };
    let explicit = sub.value_source("config") == Some(ValueSource::CommandLine);
    let path = sub
        .get_one::<PathBuf>("config")
        .cloned()
        .unwrap_or_else(|| PathBuf::from(DEFAULT_CONFIG));
    if !explicit && !path.exists() {
        return Cli::from_arg_matches(&matches).map_err(CliError::Clap);
    }
    let fail = |msg: String| CliError::Config(format!("config {}: {msg}", path.display()));
    let text = std::fs::read_to_string(&path).map_err(|e| fail(format!("cannot read it: {e}")))?;
    let table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| fail(syntax_error(&text, &e)))?;
    let cmd = Cli::command();
    let subcmd = cmd
        .find_subcommand(name)
        .ok_or_else(|| fail("internal: no such subcommand".into()))?;
    let mut full = argv;
    for (key, value) in &table {
        full.extend(flag_args(subcmd, sub, key, value).map_err(fail)?);
    }
    let merged = Cli::command()
        .try_get_matches_from(&full)
        .map_err(|e| fail(one_line(&e.to_string())))?;
    Cli::from_arg_matches(&merged).map_err(|e| fail(one_line(&e.to_string())))
}

/// Every flag a config key may name: the long options except `config`, help and version.
fn configurable(cmd: &clap::Command) -> impl Iterator<Item = (String, &Arg)> {
    cmd.get_arguments()
        .filter(|a| {
            !matches!(
                a.get_action(),
                ArgAction::Help | ArgAction::HelpLong | ArgAction::Version
            )
        })
        .filter_map(|a| Some((a.get_long()?.replace('-', "_"), a)))
        .filter(|(k, _)| k != "config")
}

/// The `--flag=value` arguments for one key, each value checked by the flag's own parser.
fn flag_args(
    cmd: &clap::Command,
    given: &ArgMatches,
    key: &str,
    value: &toml::Value,
) -> Result<Vec<OsString>, String> {
    let Some((_, arg)) = configurable(cmd).find(|(k, _)| k == key) else {
        let allowed: Vec<String> = configurable(cmd).map(|(k, _)| k).collect();
        return Err(format!(
            "unknown key '{key}'; allowed keys: {}",
            allowed.join(", ")
        ));
    };
    if given.value_source(arg.get_id().as_str()) == Some(ValueSource::CommandLine) {
        return Ok(Vec::new()); // the command line wins
    }
    let long = arg.get_long().unwrap_or(key);
    let bad = |what: &str| format!("key '{key}' = {value}: {what}");
    if matches!(arg.get_action(), ArgAction::SetTrue) {
        return match value {
            toml::Value::Boolean(true) => Ok(vec![format!("--{long}").into()]),
            toml::Value::Boolean(false) => Ok(Vec::new()),
            _ => Err(bad("expected true or false")),
        };
    }
    let many = matches!(arg.get_action(), ArgAction::Append);
    let items: Vec<&toml::Value> = match value {
        toml::Value::Array(items) if many => items.iter().collect(),
        toml::Value::Array(_) => return Err(bad("expected a single value, not a list")),
        v => vec![v],
    };
    let mut out = Vec::new();
    for item in items {
        let text = match item {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            _ => return Err(bad("expected a string or an integer")),
        };
        let parts: Vec<&str> = match arg.get_value_delimiter() {
            Some(d) => text.split(d).collect(),
            None => vec![text.as_str()],
        };
        for part in parts {
            check_value(cmd, arg, part).map_err(|e| bad(&e))?;
            out.push(format!("--{long}={part}").into());
        }
    }
    Ok(out)
}

/// Run the flag's own value parser (by parsing `<sub> --flag=value` alone), for an error
/// that names the key rather than the flag.
fn check_value(cmd: &clap::Command, arg: &Arg, value: &str) -> Result<(), String> {
    let long = arg.get_long().unwrap_or_default();
    let argv = [
        "lifeline".to_owned(),
        cmd.get_name().to_owned(),
        format!("--{long}={value}"),
    ];
    Cli::command()
        .try_get_matches_from(argv)
        .map(drop)
        .map_err(|e| {
            // clap's own text: "error: invalid value 'x' for '--flag <V>': <why>" + usage hints.
            let text = one_line(&e.to_string());
            let text = text.strip_prefix("error: ").unwrap_or(&text);
            text.split_once("': ")
                .map_or(text, |(_, why)| why)
                .to_owned()
        })
}

/// "line L, column C: what": the TOML error without its multi-line source snippet.
fn syntax_error(text: &str, e: &toml::de::Error) -> String {
    let at = e.span().map_or(0, |s| s.start).min(text.len());
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    format!(
        "invalid TOML at line {line}, column {column}: {}",
        one_line(e.message())
    )
}

/// Multi-line messages (TOML snippets, clap hints) folded into one line.
/// A clap usage error as one line, without its `error: ` prefix and usage/help trailer.
#[must_use]
pub(crate) fn one_line_clap(e: &clap::Error) -> String {
    let text = e.render().to_string();
    one_line(&text).trim_start_matches("error: ").to_owned()
}

fn one_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|l| {
            !l.is_empty() && !l.starts_with("For more information") && !l.starts_with("Usage:")
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// For `check`: the file the settings came from, if any (`given`: `--config`).
#[must_use]
pub(crate) fn source(given: Option<&Path>) -> Option<&Path> {
    let default = Path::new(DEFAULT_CONFIG);
    given.or_else(|| default.exists().then_some(default))
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
