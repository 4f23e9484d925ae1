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

/// A harness's spending rules: its budget, its models (one, or a cascade: the first runs each
/// turn, the next takes over when a step fails or the model calls `escalate`), and cheaper
/// models for its compactions and the subagents it starts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CostRules {
    pub budget: Budget,
    /// Its models, cheapest first (empty: the conversation's model, as opened).
    pub models: Vec<String>,
    /// The model that writes its compactions' summaries (none: the conversation's).
    pub compaction_model: Option<String>,
    /// The model of the subagents it starts (none: the child harness's, else its own).
    pub subagent_model: Option<String>,
}

/// `model` in a harness file: one model, or a cascade.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(crate) enum ModelChoice {
    One(String),
    Cascade(Vec<String>),
}

impl CostRules {
    /// A harness file's cost keys, checked; `key` is the harness's.
    pub(crate) fn read(
        budget: Budget,
        model: Option<ModelChoice>,
        compaction_model: Option<String>,
        subagent_model: Option<String>,
        path: &Path,
        key: &str,
    ) -> Result<CostRules, ConfigError> {
        budget.check(path, &format!("{key}.budget"))?;
        let models = match model {
            None => Vec::new(),
            Some(ModelChoice::One(model)) => vec![model],
            Some(ModelChoice::Cascade(models)) if models.is_empty() => {
                return Err(ConfigError::invalid(path, format!("{key}.model"), "a cascade names at least one model"));
            }
            Some(ModelChoice::Cascade(models)) => models,
        };
        for (i, model) in models.iter().enumerate() {
            if model.trim().is_empty() || models[..i].contains(model) {
                let why = format!("`{model}` is empty or listed twice");
                return Err(ConfigError::invalid(path, format!("{key}.model[{i}]"), why));
            }
        }
        for (field, model) in [("compaction_model", &compaction_model), ("subagent_model", &subagent_model)] {
            if model.as_deref().is_some_and(|m| m.trim().is_empty()) {
                return Err(ConfigError::invalid(path, format!("{key}.{field}"), "a model name cannot be empty"));
            }
        }
        Ok(CostRules { budget, models, compaction_model, subagent_model })
    }

    /// The model after `model` in the cascade, if `model` is in it and not last.
    pub fn escalation(&self, model: &str) -> Option<&str> {
        let at = self.models.iter().position(|m| m == model)?;
        self.models.get(at + 1).map(String::as_str)
    }
}
