//! What each owner's conversations spent today (UTC), in US dollars, for the per-day budget.
//! Kept in memory from the kernel's start: a restarted kernel, or another kernel on a shared
//! database, counts the day again from nothing (a durable ledger would need a store table).

use std::collections::HashMap;
use std::sync::Mutex;

use crate::sync::lock;

/// The day (days since the epoch, UTC) and what each owner spent in it.
#[derive(Default)]
pub(crate) struct DailySpend {
    days: Mutex<HashMap<String, (u64, f64)>>,
}

fn today() -> u64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    now.as_secs() / 86_400
}

impl DailySpend {
    /// Adds `usd` to `owner`'s day and returns the day's total.
    pub fn add(&self, owner: &str, usd: f64) -> f64 {
        let day = today();
        let mut days = lock(&self.days);
        let entry = days.entry(owner.to_string()).or_insert((day, 0.0));
        if entry.0 != day {
            *entry = (day, 0.0);
        }
        entry.1 += usd;
        entry.1
    }

    /// What `owner` spent today.
    pub fn today(&self, owner: &str) -> f64 {
        lock(&self.days).get(owner).filter(|(day, _)| *day == today()).map_or(0.0, |(_, usd)| *usd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_owner_has_a_day_of_their_own() {
        let spend = DailySpend::default();
        assert_eq!(spend.add("ann", 0.5), 0.5);
        assert_eq!(spend.add("ann", 0.25), 0.75);
        assert_eq!(spend.add("bob", 1.0), 1.0);
        assert_eq!((spend.today("ann"), spend.today("bob"), spend.today("eve")), (0.75, 1.0, 0.0));
        // Yesterday's figure does not count today.
        lock(&spend.days).insert("ann".into(), (today() - 1, 9.0));
        assert_eq!(spend.today("ann"), 0.0);
        assert_eq!(spend.add("ann", 0.1), 0.1);
    }
}

/// What a conversation has spent: over its life (read back from its last stored
/// `usage_updated` when it goes live) and in its running turn.
#[derive(Debug, Default)]
pub(crate) struct ConversationSpend {
    /// `None`: nothing priced yet.
    pub total: Option<f64>,
    pub turn: Option<f64>,
    /// Whether `total` was read from the store.
    pub loaded: bool,
}

/// The conversation total its last stored `usage_updated` said, if any.
pub(crate) fn stored_total(store: &dyn superpi_store::Store, conversation_id: i64) -> Option<f64> {
    let latest = store.latest_events(conversation_id, "usage_updated", 1).ok()?;
    let (_, wire) = latest.first()?;
    let event: serde_json::Value = serde_json::from_str(wire).ok()?;
    event.get("total_cost_usd").and_then(serde_json::Value::as_f64)
}
