//! Spending limits in US dollars: per turn, per conversation and per day (the owner's, UTC),
//! from `settings.json`'s `budget` and a harness's `budget`. Each limit set anywhere applies;
//! where two set one, the lower wins (a workspace file or a harness only tightens).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::ConfigError;

/// The limits; `None` is no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    /// What one turn may spend.
    pub turn_usd: Option<f64>,
    /// What a conversation may spend over all its turns.
    pub conversation_usd: Option<f64>,
    /// What the owner's conversations may spend in a day (UTC).
    pub day_usd: Option<f64>,
}

// Every value is checked finite when read (`check`), so equality is an equivalence.
impl Eq for Budget {}

impl Budget {
    /// Each limit the lower of the two, where either sets it.
    pub fn tightened_by(self, other: Budget) -> Budget {
        let min = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Budget {
            turn_usd: min(self.turn_usd, other.turn_usd),
            conversation_usd: min(self.conversation_usd, other.conversation_usd),
            day_usd: min(self.day_usd, other.day_usd),
        }
    }

    /// Refuses a limit that is negative or not a number; `key` is where the budget was read.
    pub fn check(&self, path: &Path, key: &str) -> Result<(), ConfigError> {
        let limits =
            [("turn_usd", self.turn_usd), ("conversation_usd", self.conversation_usd), ("day_usd", self.day_usd)];
        for (field, value) in limits {
            if let Some(value) = value.filter(|v| !(v.is_finite() && *v >= 0.0)) {
                return Err(ConfigError::invalid(path, format!("{key}.{field}"), format!("{value} is not an amount")));
            }
        }
        Ok(())
    }
}

/// A harness's spending rules: its budget (a cascade of models and cheaper models for
/// compaction and subagents are to join it: issue 37, item 6).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CostRules {
    pub budget: Budget,
}
