//! What each owner's conversations spent today (UTC), in US dollars, for the per-day budget,
//! kept in the store (`daily_spend`): a restarted kernel, and every kernel on a shared
//! database, adds to and reads the same day. What a conversation spent, read back from its
//! events.

/// Today: days since the epoch, UTC.
fn today() -> i64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    i64::try_from(now.as_secs() / 86_400).unwrap_or(i64::MAX)
}

/// Adds `usd` to what `owner` spent today. A store that does not take it is logged: the call
/// was made and its cost is in its `usage_updated` either way.
pub(crate) fn add_today(store: &dyn superpi_store::Store, owner: &str, usd: f64) {
    if let Err(err) = store.add_daily_spend(owner, today(), usd) {
        tracing::warn!("storing the day's spend of {owner}: {err}");
    }
}

/// What `owner` spent today, or why the store cannot say (the budget check then fails
/// closed, saying so): the check is only made where a day budget is set.
pub(crate) fn spent_today(store: &dyn superpi_store::Store, owner: &str) -> Result<f64, String> {
    store.daily_spend(owner, today()).map_err(|err| {
        tracing::warn!("reading the day's spend of {owner}: {err}");
        format!("the store could not say what was spent today: {err}")
    })
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
    total_in(&latest.first()?.1)
}

/// The conversation total a stored `usage_updated` (its wire JSON) says.
pub(crate) fn total_in(usage_updated: &str) -> Option<f64> {
    let event: serde_json::Value = serde_json::from_str(usage_updated).ok()?;
    event.get("total_cost_usd").and_then(serde_json::Value::as_f64)
}
