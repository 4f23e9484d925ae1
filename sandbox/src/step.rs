//! The steps of confinement a call's child takes between clone and exec (`confine.rs`,
//! `mounts.rs`), in order, and the code each has on the status pipe, so that the parent
//! (`spawn.rs`) names the step that failed.

/// The steps of confinement, in order; their codes travel back through the status pipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Step {
    Session = 1,
    ParentDeath,
    Cgroup,
    MountNamespace,
    ReadOnlyMounts,
    WorkingDir,
    Limits,
    Descriptors,
    Capabilities,
    NoNewPrivs,
    Landlock,
    Seccomp,
    Stdio,
    Exec,
}

/// Every step with what it does, for the parent's error message.
const STEPS: [(Step, &str); 14] = [
    (Step::Session, "start a new session"),
    (Step::ParentDeath, "set the parent-death signal"),
    (Step::Cgroup, "join the call's pids cgroup"),
    (Step::MountNamespace, "enter private mount and IPC namespaces"),
    (Step::ReadOnlyMounts, "make everything outside the workspace read-only"),
    (Step::WorkingDir, "enter the working directory"),
    (Step::Limits, "set resource limits"),
    (Step::Descriptors, "close inherited descriptors"),
    (Step::Capabilities, "drop capabilities"),
    (Step::NoNewPrivs, "set no_new_privs"),
    (Step::Landlock, "apply the landlock ruleset"),
    (Step::Seccomp, "install the seccomp filter"),
    (Step::Stdio, "set up the standard streams"),
    (Step::Exec, "start the program"),
];

impl Step {
    pub(crate) fn from_code(code: u8) -> Option<Step> {
        STEPS.iter().map(|(step, _)| *step).find(|step| *step as u8 == code)
    }

    pub(crate) fn describe(self) -> &'static str {
        STEPS.iter().find(|(step, _)| *step == self).map_or("an unnamed step", |(_, what)| what)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_names_its_step() {
        for (step, what) in STEPS {
            assert_eq!(Step::from_code(step as u8), Some(step));
            assert_eq!(step.describe(), what);
        }
        assert_eq!(Step::from_code(0), None);
        assert_eq!(Step::from_code(STEPS.len() as u8 + 1), None);
    }
}
