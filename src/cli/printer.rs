//! Where output goes: data on stdout, messages on stderr; `-q` hides progress, never an error
//! (docs/output.md).
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

use std::sync::{Arc, Mutex};

use anstyle::{AnsiColor, Style};

use crate::cli::Color;
use crate::cli::output::{Envelope, WireDiagnostic};
use crate::diagnostics::{Diagnostic, Severity};

/// Prints data and messages.
///
/// With `--format json` it also collects every diagnostic and error printed, and makes sure
/// stdout carries exactly one envelope (`output::Envelope`) however the command ends: the
/// command's own document (`envelope`), or, when it stopped before writing one, a document
/// made of what was collected (`finish`).
#[derive(Debug, Clone)]
pub struct Printer {
    quiet: bool,
    verbosity: u8,
    color: bool,
    /// `Some(kind)` under `--format json`.
    json: Option<&'static str>,
    /// The envelope is kept (see `nested`), not printed.
    capture: bool,
    state: Arc<Mutex<State>>,
}

/// What a JSON run has said so far.
#[derive(Debug, Default)]
struct State {
    diagnostics: Vec<WireDiagnostic>,
    enveloped: bool,
    captured: Option<serde_json::Value>,
}

impl Printer {
    /// From the global flags; `NO_COLOR` switches colour off under `auto`.
    pub fn new(quiet: bool, verbosity: u8, color: Color) -> Printer {
        let color = match color {
            Color::Always => true,
            Color::Never => false,
            Color::Auto => std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stderr().is_terminal(),
        };
        Printer {
            quiet,
            verbosity,
            color,
            json: None,
            capture: false,
            state: Arc::default(),
        }
    }

    /// Under `--format json`: the `kind` of the envelope this run prints.
    #[must_use]
    pub fn json(mut self, kind: Option<&'static str>) -> Printer {
        self.json = kind;
        self
    }

    /// For a command run inside another one (`upgrade --pr` runs `pr`): the same messages, but
    /// under `--format json` its envelope (of `kind`) is kept for `captured` instead of printed.
    pub fn nested(&self, kind: &'static str) -> Printer {
        Printer {
            json: self.json.map(|_| kind),
            capture: true,
            state: Arc::default(),
            ..self.clone()
        }
    }

    /// The envelope a `nested` printer kept.
    pub fn captured(&self) -> Option<serde_json::Value> {
        let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        state.captured.take()
    }

    /// Whether this run prints a JSON envelope (`--format json`): data then goes into it, not
    /// onto stdout line by line.
    pub fn is_json(&self) -> bool {
        self.json.is_some()
    }

    /// Whether `-v` (or more) was given.
    pub fn verbose(&self) -> bool {
        self.verbosity >= 1
    }

    /// Whether `-vv` (or more) was given: timings, cache and network detail.
    pub fn very_verbose(&self) -> bool {
        self.verbosity >= 2
    }

    /// Prints the JSON envelope of this run on stdout: `data` (an object) with `apiVersion`,
    /// `kind`, `ok` and `diagnostics` around it. `data["diagnostics"]`, when present, is taken
    /// into the envelope's, after those printed earlier in the run; its errors are also printed
    /// on stderr, so an error reaches stderr in every format. Does nothing outside
    /// `--format json` or when the envelope was printed already.
    pub fn envelope(&self, ok: bool, data: serde_json::Value) {
        let Some(kind) = self.json else { return };
        let mut data = match data {
            serde_json::Value::Object(map) => map,
            _ => serde_json::Map::new(),
        };
        let extra: Vec<Diagnostic> = data
            .remove("diagnostics")
            .and_then(|d| serde_json::from_value(d).ok())
            .unwrap_or_default();
        for d in extra.iter().filter(|d| d.is_error()) {
            to_stderr(&self.paint(&d.to_string()));
        }
        let text = {
            let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if state.enveloped {
                return;
            }
            state.enveloped = true;
            let mut diagnostics = std::mem::take(&mut state.diagnostics);
            diagnostics.extend(extra.iter().map(WireDiagnostic::from));
            // A failed run names at least one error; every path that fails should have said
            // why, this is the net under the ones that only said so in prose.
            if !ok && !diagnostics.iter().any(|d| d.severity == Severity::Error) {
                diagnostics.push(WireDiagnostic::from(&Diagnostic::error(
                    "the command failed; its messages on stderr say why",
                )));
            }
            let envelope = Envelope::new(kind, ok, diagnostics, data);
            if self.capture {
                state.captured = Some(envelope.to_value());
                return;
            }
            envelope.to_value().to_string()
        };
        self.data(&format!("{text}\n"));
    }

    /// Ends a run: under `--format json`, when the command printed no envelope (it stopped on an
    /// error first), prints one from what was collected, with `ok` from the exit status.
    pub fn finish(&self, ok: bool) {
        if self.json.is_some() {
            self.envelope(ok, serde_json::json!({}));
        }
    }

    /// Records a diagnostic for the JSON envelope.
    fn record(&self, d: WireDiagnostic) {
        if self.json.is_some() {
            let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            state.diagnostics.push(d);
        }
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

    /// Progress and outcome for people on stderr, unless `-q`. Never an error: see `error`.
    pub fn status(&self, text: &str) {
        if !self.quiet {
            to_stderr(text);
        }
    }

    /// An error that is not a diagnostic of an input file (`message` without `error: `), with
    /// what to do about it: on stderr whatever `-q` says, and in the JSON envelope.
    pub fn error(&self, message: &str, hint: Option<&str>) {
        let mut text = format!("error: {message}");
        if let Some(hint) = hint {
            text.push_str(&format!("\n\nhint: {hint}"));
        }
        to_stderr(&self.paint(&text));
        let mut d = Diagnostic::error(message);
        d.hint = hint.map(str::to_string);
        self.record(WireDiagnostic::from(&d));
    }

    /// A warning that is not a diagnostic of an input file: on stderr unless `-q`, and in the
    /// JSON envelope.
    pub fn warning(&self, message: &str, hint: Option<&str>) {
        if !self.quiet {
            let mut text = format!("warning: {message}");
            if let Some(hint) = hint {
                text.push_str(&format!("\n\nhint: {hint}"));
            }
            to_stderr(&self.paint(&text));
        }
        let mut d = Diagnostic::warning(message);
        d.hint = hint.map(str::to_string);
        self.record(WireDiagnostic::from(&d));
    }

    /// The closing line of a failed run (`message` without `error: `), after its diagnostics:
    /// on stderr whatever `-q` says; not a diagnostic of its own in the JSON envelope.
    pub fn failed(&self, message: &str) {
        to_stderr(&self.paint(&format!("error: {message}")));
    }

    /// Diagnostics on stderr, errors always, warnings unless `-q`; and in the JSON envelope.
    pub fn diagnostics(&self, diagnostics: &[Diagnostic]) {
        for d in diagnostics {
            if d.is_error() || !self.quiet {
                to_stderr(&self.paint(&d.to_string()));
            }
            self.record(WireDiagnostic::from(d));
        }
    }

    /// A run's problems (sorted, every one of them) in the output format asked for, closed by
    /// the line saying nothing was written. The caller exits 1.
    pub fn invalid(&self, format: crate::cli::Format, mut diags: Vec<Diagnostic>) {
        crate::diagnostics::sort(&mut diags);
        let errors = diags.iter().filter(|d| d.is_error()).count();
        match format {
            crate::cli::Format::Json => self.envelope(false, serde_json::json!({"diagnostics": diags})),
            crate::cli::Format::Github => {
                for d in &diags {
                    self.data(&format!("{}\n", d.github_annotation()));
                }
            }
            crate::cli::Format::Human => {
                self.diagnostics(&diags);
                self.failed(&format!("{errors} problem(s) found; nothing was written"));
            }
        }
    }

    /// An environment error and its causes: on stderr always, and in the JSON envelope.
    pub fn error_chain(&self, e: &anyhow::Error) {
        self.error_chain_hinted(e, None);
    }

    /// As `error_chain`, with what to do about it when the error itself does not say.
    pub fn error_chain_hinted(&self, e: &anyhow::Error, hint: Option<String>) {
        let mut text = format!("error: {e}");
        for cause in e.chain().skip(1) {
            text.push_str(&format!("\n  Caused by: {cause}"));
        }
        // A git error knows what the user can do about it.
        let hint = e
            .chain()
            .find_map(|c| c.downcast_ref::<crate::git::GitError>())
            .and_then(crate::git::GitError::hint)
            .or(hint);
        if let Some(hint) = &hint {
            text.push_str(&format!("\n\nhint: {hint}"));
        }
        to_stderr(&self.paint(&text));
        let mut d = WireDiagnostic::from(&Diagnostic::error(e.to_string()));
        d.causes = e.chain().skip(1).map(ToString::to_string).collect();
        d.hint = hint;
        self.record(d);
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
