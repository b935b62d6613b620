//! Where output goes: data on stdout, messages on stderr; `-q` keeps only errors.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::IsTerminal;

use crate::cli::Color;
use crate::diagnostics::Diagnostic;

/// Prints data and messages.
#[derive(Debug, Clone, Copy)]
pub struct Printer {
    quiet: bool,
    verbose: bool,
    color: bool,
}

impl Printer {
    /// From the global flags; `NO_COLOR` switches colour off under `auto`.
    pub fn new(quiet: bool, verbose: bool, color: Color) -> Printer {
        let color = match color {
            Color::Always => true,
            Color::Never => false,
            Color::Auto => std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stderr().is_terminal(),
        };
        Printer { quiet, verbose, color }
    }

    /// Whether `-v` was given.
    pub fn verbose(&self) -> bool {
        self.verbose
    }

    /// Data: stdout, always.
    pub fn data(&self, text: &str) {
        print!("{text}");
    }

    /// A status line on stderr, unless `-q`.
    pub fn status(&self, text: &str) {
        if !self.quiet {
            eprintln!("{text}");
        }
    }

    /// Diagnostics on stderr, errors always, warnings unless `-q`.
    pub fn diagnostics(&self, diagnostics: &[Diagnostic]) {
        for d in diagnostics {
            if d.is_error() || !self.quiet {
                eprintln!("{}", self.paint(&d.to_string()));
            }
        }
    }

    /// An environment error and its causes.
    pub fn error_chain(&self, e: &anyhow::Error) {
        let mut text = format!("error: {e}");
        for cause in e.chain().skip(1) {
            text.push_str(&format!("\n  Caused by: {cause}"));
        }
        // A git error knows what the user can do about it.
        if let Some(hint) = e
            .chain()
            .find_map(|c| c.downcast_ref::<crate::git::GitError>())
            .and_then(crate::git::GitError::hint)
        {
            text.push_str(&format!("\n\nhint: {hint}"));
        }
        eprintln!("{}", self.paint(&text));
    }

    /// The next step after an error, on stderr, even under `-q`.
    pub fn hint(&self, text: &str) {
        eprintln!("\nhint: {text}");
    }

    /// A closing remark after an error, on stderr, even under `-q`.
    pub fn note(&self, text: &str) {
        eprintln!("note: {text}");
    }

    fn paint(&self, text: &str) -> String {
        if !self.color {
            return text.to_string();
        }
        if let Some(rest) = text.strip_prefix("error:") {
            format!(
                "\x1b[1;31merror\x1b[0m\x1b[1m:{}\x1b[0m",
                rest.split_once('\n').map_or(rest, |(a, _)| a)
            ) + &rest.split_once('\n').map(|(_, b)| format!("\n{b}")).unwrap_or_default()
        } else if let Some(rest) = text.strip_prefix("warning:") {
            format!("\x1b[1;33mwarning\x1b[0m{}", format_args!(":{rest}"))
        } else {
            text.to_string()
        }
    }
}
