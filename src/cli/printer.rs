//! Where output goes: data on stdout, messages on stderr; `-q` keeps only errors.
//!
//! Nothing here panics on a closed or full stream (`print!` would): a reader that went away
//! (`| head`) ends the output quietly, and a stdout that cannot be written (`> /dev/full`) is
//! reported once and makes the run exit 2, after the command has finished what it does.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set when data could not be written to stdout for another reason than a closed pipe.
static STDOUT_FAILED: AtomicBool = AtomicBool::new(false);

/// Whether some data could not be written to stdout (see `Printer::data`).
pub fn stdout_failed() -> bool {
    STDOUT_FAILED.load(Ordering::Relaxed)
}

/// Writes `text` and a newline to stderr; a stderr that cannot be written is ignored, as there
/// is nowhere left to say so.
fn to_stderr(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes()).and_then(|()| err.write_all(b"\n"));
}

use anstyle::{AnsiColor, Style};

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

    /// Data: stdout, always. A closed pipe drops the rest of the data; any other failure is
    /// reported once on stderr and recorded for the exit status.
    pub fn data(&self, text: &str) {
        let mut out = std::io::stdout().lock();
        match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
            Err(e) => {
                if !STDOUT_FAILED.swap(true, Ordering::Relaxed) {
                    to_stderr(&self.paint(&format!("error: cannot write to stdout: {e}")));
                }
            }
        }
    }

    /// A status line on stderr, unless `-q`.
    pub fn status(&self, text: &str) {
        if !self.quiet {
            to_stderr(text);
        }
    }

    /// Diagnostics on stderr, errors always, warnings unless `-q`.
    pub fn diagnostics(&self, diagnostics: &[Diagnostic]) {
        for d in diagnostics {
            if d.is_error() || !self.quiet {
                to_stderr(&self.paint(&d.to_string()));
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
        to_stderr(&self.paint(&text));
    }

    /// The next step after an error, on stderr, even under `-q`.
    pub fn hint(&self, text: &str) {
        to_stderr(&format!("\nhint: {text}"));
    }

    /// A closing remark after an error, on stderr, even under `-q`.
    pub fn note(&self, text: &str) {
        to_stderr(&format!("note: {text}"));
    }

    /// `error:` and `warning:` in the colours people know from cargo and rustc; the first line
    /// of an error in bold, the rest (location, snippet, hints) plain.
    fn paint(&self, text: &str) -> String {
        if !self.color {
            return text.to_string();
        }
        if let Some(rest) = text.strip_prefix("error:") {
            let (first, more) = rest.split_once('\n').map_or((rest, None), |(a, b)| (a, Some(b)));
            let mut painted = format!("{ERROR}error{ERROR:#}{BOLD}:{first}{BOLD:#}");
            if let Some(more) = more {
                painted.push('\n');
                painted.push_str(more);
            }
            painted
        } else if let Some(rest) = text.strip_prefix("warning:") {
            format!("{WARNING}warning{WARNING:#}:{rest}")
        } else {
            text.to_string()
        }
    }
}

/// The word `error`.
const ERROR: Style = AnsiColor::Red.on_default().bold();
/// The word `warning`.
const WARNING: Style = AnsiColor::Yellow.on_default().bold();
/// The first line of an error.
const BOLD: Style = Style::new().bold();
