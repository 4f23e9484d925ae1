//! Permission modes and how the mode of a call is chosen.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::harness::Harness;
use crate::settings::Settings;

/// How much a conversation may do without asking. Ordered from the tightest to the loosest:
/// `Plan < AcceptEdits < Auto`, so `min` tightens and a ceiling is a `min`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Read-only: reads (and network reads, unless settings say otherwise) run; everything
    /// else is refused and cannot be asked for.
    Plan,
    /// File edits with the built-in `write`/`edit` tools and allow-listed shell commands run;
    /// other side effects are asked for.
    AcceptEdits,
    /// Everything runs that the deny list, the workspace boundary, protected paths and the
    /// network policy let through.
    Auto,
}

impl Mode {
    pub const ALL: [Mode; 3] = [Mode::Plan, Mode::AcceptEdits, Mode::Auto];

    /// The wire name: `plan`, `accept-edits` or `auto`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Plan => "plan",
            Mode::AcceptEdits => "accept-edits",
            Mode::Auto => "auto",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A mode name that is none of `plan`, `accept-edits`, `auto`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown mode `{0}` (known: plan, accept-edits, auto)")]
pub struct UnknownMode(pub String);

impl FromStr for Mode {
    type Err = UnknownMode;

    /// Accepts the wire names; `accept_edits` and `acceptEdits` (ACP's spelling) too.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "plan" => Ok(Mode::Plan),
            "accept-edits" | "accept_edits" | "acceptEdits" => Ok(Mode::AcceptEdits),
            "auto" => Ok(Mode::Auto),
            other => Err(UnknownMode(other.to_string())),
        }
    }
}

/// Who asks for a mode. The local CLI is trusted with the harness's range; every other
/// frontend (gateway, RPC, MCP, ACP, AG-UI) is remote and gets the remote default and ceiling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Caller {
    Local,
    Remote,
}

/// The mode a conversation runs in.
///
/// - Local: the requested mode, or the harness default, lowered to the harness ceiling.
/// - Remote: the requested mode lowered to the remote ceiling; with no request, the tighter of
///   the harness default and the remote default. Then the harness ceiling applies too.
///
/// With the default settings (remote default and ceiling both `accept-edits`) a remote request
/// can only tighten. No request lifts a harness above its ceiling, so the planner stays in
/// `plan` whatever is asked for.
pub fn effective_mode(requested: Option<Mode>, harness: &Harness, caller: Caller, settings: &Settings) -> Mode {
    let wanted = match caller {
        Caller::Local => requested.unwrap_or(harness.default_mode),
        Caller::Remote => match requested {
            Some(mode) => mode.min(settings.remote.max_mode),
            None => harness.default_mode.min(settings.remote.default_mode),
        },
    };
    wanted.min(harness.max_mode)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::Harnesses;

    #[test]
    fn modes_are_ordered_tightest_first() {
        assert!(Mode::Plan < Mode::AcceptEdits);
        assert!(Mode::AcceptEdits < Mode::Auto);
        assert_eq!(Mode::Auto.min(Mode::Plan), Mode::Plan);
    }

    #[test]
    fn wire_names_round_trip() {
        for mode in Mode::ALL {
            assert_eq!(mode.as_str().parse::<Mode>().unwrap(), mode);
            assert_eq!(serde_json::to_value(mode).unwrap(), serde_json::json!(mode.as_str()));
            assert_eq!(serde_json::from_value::<Mode>(serde_json::json!(mode.as_str())).unwrap(), mode);
            assert_eq!(mode.to_string(), mode.as_str());
        }
        assert_eq!("acceptEdits".parse::<Mode>().unwrap(), Mode::AcceptEdits);
        let err = "yolo".parse::<Mode>().unwrap_err();
        assert_eq!(err.to_string(), "unknown mode `yolo` (known: plan, accept-edits, auto)");
        assert!(serde_json::from_value::<Mode>(serde_json::json!("accept_edits")).is_err());
    }

    fn harness(id: &str) -> Harness {
        Harnesses::builtin(&crate::test_tools::builtin_tools()).get(id).unwrap().clone()
    }

    #[test]
    fn local_caller_gets_request_or_default_under_the_ceiling() {
        let s = Settings::default();
        let code = harness("superpi-code");
        assert_eq!(effective_mode(None, &code, Caller::Local, &s), code.default_mode);
        for mode in Mode::ALL {
            assert_eq!(effective_mode(Some(mode), &code, Caller::Local, &s), mode);
        }
        let planner = harness("superpi-planner");
        for mode in Mode::ALL {
            assert_eq!(effective_mode(Some(mode), &planner, Caller::Local, &s), Mode::Plan);
        }
        assert_eq!(effective_mode(None, &planner, Caller::Local, &s), Mode::Plan);
    }

    #[test]
    fn remote_caller_can_only_tighten_by_default() {
        let s = Settings::default();
        let code = harness("superpi-code");
        assert_eq!(effective_mode(None, &code, Caller::Remote, &s), Mode::AcceptEdits);
        assert_eq!(effective_mode(Some(Mode::Auto), &code, Caller::Remote, &s), Mode::AcceptEdits);
        assert_eq!(effective_mode(Some(Mode::AcceptEdits), &code, Caller::Remote, &s), Mode::AcceptEdits);
        assert_eq!(effective_mode(Some(Mode::Plan), &code, Caller::Remote, &s), Mode::Plan);
        let planner = harness("superpi-planner");
        assert_eq!(effective_mode(None, &planner, Caller::Remote, &s), Mode::Plan);
        assert_eq!(effective_mode(Some(Mode::Auto), &planner, Caller::Remote, &s), Mode::Plan);
    }

    #[test]
    fn configured_remote_ceiling_and_default_apply() {
        let mut s = Settings::default();
        s.remote.max_mode = Mode::Auto;
        s.remote.default_mode = Mode::Plan;
        let code = harness("superpi-code");
        assert_eq!(effective_mode(None, &code, Caller::Remote, &s), Mode::Plan);
        assert_eq!(effective_mode(Some(Mode::Auto), &code, Caller::Remote, &s), Mode::Auto);
        let planner = harness("superpi-planner");
        assert_eq!(effective_mode(Some(Mode::Auto), &planner, Caller::Remote, &s), Mode::Plan);
    }

    #[test]
    fn effective_mode_never_exceeds_any_ceiling() {
        let mut s = Settings::default();
        for remote_max in Mode::ALL {
            for remote_default in Mode::ALL.into_iter().filter(|m| *m <= remote_max) {
                s.remote.max_mode = remote_max;
                s.remote.default_mode = remote_default;
                for h in Harnesses::builtin(&crate::test_tools::builtin_tools()).iter() {
                    for req in [None, Some(Mode::Plan), Some(Mode::AcceptEdits), Some(Mode::Auto)] {
                        let local = effective_mode(req, h, Caller::Local, &s);
                        let remote = effective_mode(req, h, Caller::Remote, &s);
                        assert!(local <= h.max_mode && remote <= h.max_mode);
                        assert!(remote <= remote_max);
                        assert!(remote <= local, "remote is never looser than local");
                        if let Some(r) = req {
                            assert!(local <= r && remote <= r, "a request never loosens");
                        }
                    }
                }
            }
        }
    }
}
