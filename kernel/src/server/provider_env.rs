//! Keys that take effect: a frontend whose provider variables the kernel lacks (or has with
//! another value) gets a kernel with its environment, or an error that says why not.
//!
//! The kernel read its variables once, at start; a key exported afterwards would otherwise be
//! ignored in silence, and the provider's "not configured: set X" would tell the user to set
//! a variable they have set. A variable only the kernel has is no difference: it serves that
//! frontend as it is (two frontends, one with a key, one without, share one kernel).

use std::collections::BTreeMap;

use superpi_proto::ErrorObject;
use superpi_proto::message::{ClientHello, PROVIDER_VARIABLES, codes};

use crate::kernel::Kernel;

/// What a `hello` gets.
#[derive(Debug, PartialEq)]
pub(crate) enum Verdict {
    /// Served: the kernel has every provider variable the frontend has.
    Same,
    /// This autostarted kernel stops; the frontend starts one with its environment.
    Replace(ErrorObject),
    /// Refused with the reason and what to do.
    Refuse(ErrorObject),
}

/// How the frontend's variable differs from the kernel's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Difference {
    /// The frontend has it; the kernel started without it.
    Missing,
    /// Both have it, with different values.
    Changed,
}

pub(crate) fn judge(kernel: &Kernel, hello: &ClientHello) -> Verdict {
    let (Some(theirs), Some(ours)) = (&hello.provider_env, &kernel.config.provider_env) else {
        return Verdict::Same;
    };
    // The variables this kernel reads: the providers', and the custom models' `api_key_env`.
    let entry_keys = kernel.catalog.providers.models.iter().filter_map(|m| m.api_key_env.as_deref());
    let read: Vec<&str> = PROVIDER_VARIABLES.iter().copied().chain(entry_keys).collect();
    let differences = differences(&read, ours, &theirs.digests);
    if differences.is_empty() {
        return Verdict::Same;
    }
    let state = KernelState {
        pid: std::process::id(),
        autostarted: kernel.config.autostarted,
        running_turns: kernel.activity.running_turns(),
    };
    verdict(&differences, &hello.frontend, theirs.autostart, state)
}

/// What decides between replacing and refusing.
#[derive(Debug, Clone, Copy)]
struct KernelState {
    pid: u32,
    autostarted: bool,
    running_turns: u64,
}

/// The variables of `read` that the frontend has and the kernel lacks or has with another
/// value, in the order of `read` (other names the frontend sends are ignored).
fn differences<'a>(
    read: &[&'a str],
    ours: &BTreeMap<String, String>,
    theirs: &BTreeMap<String, String>,
) -> Vec<(&'a str, Difference)> {
    let mut seen = std::collections::HashSet::new();
    read.iter()
        .filter(|name| seen.insert(**name))
        .filter_map(|name| match (ours.get(*name), theirs.get(*name)) {
            (None, Some(_)) => Some((*name, Difference::Missing)),
            (Some(a), Some(b)) if a != b => Some((*name, Difference::Changed)),
            _ => None,
        })
        .collect()
}

fn verdict(
    differences: &[(&str, Difference)],
    frontend: &str,
    frontend_autostarts: bool,
    state: KernelState,
) -> Verdict {
    let what = describe(differences, frontend);
    let pid = state.pid;
    if state.autostarted && state.running_turns == 0 && frontend_autostarts {
        return Verdict::Replace(ErrorObject::new(
            codes::KERNEL_REPLACED,
            format!("the running kernel (pid {pid}) {what}: it stops, and a kernel with this environment starts"),
        ));
    }
    let why = if !state.autostarted {
        "it was started by hand, so superpi does not replace it: `superpi kernel stop`, then run again".to_string()
    } else if state.running_turns > 0 {
        let turns =
            if state.running_turns == 1 { "a turn".to_string() } else { format!("{} turns", state.running_turns) };
        format!(
            "it is running {turns}, so superpi does not replace it now: wait until it ends, or \
             `superpi kernel stop` (which interrupts it), then run again"
        )
    } else {
        // The frontend cannot start a kernel, or already replaced one in this connect.
        "`superpi kernel stop`, then run again".to_string()
    };
    Verdict::Refuse(ErrorObject::new(codes::PROVIDER_ENV, format!("the running kernel (pid {pid}) {what}; {why}")))
}

/// "was started without A and B; your shell has them; and has another C than your shell".
fn describe(differences: &[(&str, Difference)], frontend: &str) -> String {
    let whose = if frontend == "cli" { "your shell".to_string() } else { format!("`superpi {frontend}`") };
    let names = |kind: Difference| -> Vec<&str> {
        differences.iter().filter(|(_, d)| *d == kind).map(|(name, _)| *name).collect()
    };
    let mut parts = Vec::new();
    let missing = names(Difference::Missing);
    if !missing.is_empty() {
        let pronoun = if missing.len() == 1 { "it" } else { "them" };
        parts.push(format!("was started without {}; {whose} has {pronoun}", join(&missing)));
    }
    let changed = names(Difference::Changed);
    if !changed.is_empty() {
        parts.push(format!("has another {} than {whose}", join(&changed)));
    }
    parts.join("; and it ")
}

fn join(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => one.to_string(),
        [head @ .., last] => format!("{} and {last}", head.join(", ")),
    }
}

#[cfg(test)]
#[path = "provider_env_tests.rs"]
mod tests;
