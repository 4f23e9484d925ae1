//! Thinking effort: how much a model may reason before it answers, one setting per
//! conversation. Each provider maps a level onto its own knob (OpenAI `reasoning_effort`,
//! Anthropic's thinking budget, Gemini's `thinkingConfig`); a model lists the levels it takes.

use serde::{Deserialize, Serialize};

/// A conversation's thinking effort.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Effort {
    /// No thinking where the model can go without (else its least).
    Off,
    Low,
    Medium,
    High,
}

impl Effort {
    /// Every level, from the least.
    pub const ALL: [Effort; 4] = [Effort::Off, Effort::Low, Effort::Medium, Effort::High];

    pub fn as_str(self) -> &'static str {
        match self {
            Effort::Off => "off",
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
        }
    }

    /// A level by its name (`off`, `low`, `medium`, `high`).
    pub fn parse(name: &str) -> Option<Effort> {
        Effort::ALL.into_iter().find(|e| e.as_str() == name)
    }

    /// The level of `levels` nearest to this one (ties go to the lower): what a model that
    /// lacks this level is sent. `None` when `levels` is empty.
    pub fn nearest_in(self, levels: &[Effort]) -> Option<Effort> {
        levels.iter().copied().min_by_key(|l| ((*l as i8 - self as i8).abs(), *l as i8))
    }
}

impl std::fmt::Display for Effort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::Effort::{self, *};

    #[test]
    fn the_nearest_level_a_model_takes() {
        assert_eq!(Off.nearest_in(&[Low, Medium, High]), Some(Low));
        assert_eq!(Medium.nearest_in(&[Low, High]), Some(Low));
        assert_eq!(High.nearest_in(&[Off, Low]), Some(Low));
        assert_eq!(High.nearest_in(&Effort::ALL), Some(High));
        assert_eq!(Low.nearest_in(&[]), None);
    }

    #[test]
    fn names_round_trip_and_serialize_alike() {
        for effort in Effort::ALL {
            assert_eq!(Effort::parse(effort.as_str()), Some(effort));
            assert_eq!(serde_json::to_value(effort).unwrap(), serde_json::json!(effort.as_str()));
        }
        assert_eq!(Effort::parse("max"), None);
        assert!(serde_json::from_value::<Effort>(serde_json::json!("max")).is_err());
    }
}
