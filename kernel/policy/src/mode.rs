//! Permission modes. How a conversation's mode is chosen is in `mode_choice.rs`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
