//! Shell completions and the manual page, generated from the clap definitions above, so they
//! never drift from `--help`.

use clap::CommandFactory;

use crate::cli::Cli;

/// The completion script for `shell`.
pub fn completions(shell: clap_complete::Shell) -> Vec<u8> {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "kaas-gitops", &mut out);
    out
}

/// The manual page `kaas-gitops(1)` in roff: the main page, then one section per subcommand
/// (its about, usage and options), as `--help` shows them.
pub fn man_page() -> std::io::Result<Vec<u8>> {
    let cmd = Cli::command();
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd.clone()).render(&mut out)?;
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        section(&mut out, &cmd, sub, "")?;
    }
    Ok(out)
}

/// One subcommand's section (and its own subcommands').
fn section(out: &mut Vec<u8>, root: &clap::Command, sub: &clap::Command, parent: &str) -> std::io::Result<()> {
    let name = format!("{parent}{}", sub.get_name());
    let title = format!("{} {name}", root.get_name()).to_uppercase();
    let sub = sub.clone().bin_name(format!("{} {name}", root.get_name()));
    out.extend_from_slice(format!(".SH \"{}\"\n", title.replace('"', "")).as_bytes());
    let man = clap_mangen::Man::new(sub.clone());
    man.render_description_section(out)?;
    man.render_synopsis_section(out)?;
    if sub.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(out)?;
    }
    for s in sub.get_subcommands().filter(|s| s.get_name() != "help") {
        section(out, root, s, &format!("{name} "))?;
    }
    Ok(())
}
