//! What a turn's model calls cost and whether it may spend more. Each call's usage is priced
//! by its model (superpi-providers' `prices`: the built-in table, or the providers file's
//! `price`) or taken as an agent program reports it; the call, the turn and the conversation
//! figures go in `usage_updated`, the day's in the store (`spend.rs`). Before each model
//! call the budgets (settings' `budget`, lowered by the harness's) are checked: one that is
//! spent ends the turn cleanly (`stop_reason` `budget`, with a notice), never mid-call.

use superpi_proto::{Cost, Event, Usage};

use crate::conversation::Conversation;
use crate::kernel::Kernel;
use crate::sync::lock;

/// A turn starts: it has spent nothing.
pub(crate) fn begin(kernel: &Kernel, conv: &Conversation) {
    let mut spend = lock(&conv.spend);
    load(kernel, conv, &mut spend);
    spend.turn = None;
}

/// The conversation's total, read back from the store once (also for a compaction between
/// turns, which costs before any turn begins).
fn load(kernel: &Kernel, conv: &Conversation, spend: &mut crate::spend::ConversationSpend) {
    if !spend.loaded {
        spend.loaded = true;
        spend.total = crate::spend::stored_total(&*kernel.store, conv.id);
    }
}

/// Charges one model call of `model` (or an agent program's turn, which may say its own
/// `reported` cost) and returns the figures for its `usage_updated`.
pub(crate) fn charge(kernel: &Kernel, conv: &Conversation, model: &str, usage: Usage, reported: Option<f64>) -> Cost {
    let priced = superpi_providers::prices::for_model(model, &kernel.catalog.providers).map(|price| price.cost(&usage));
    let mut spend = lock(&conv.spend);
    load(kernel, conv, &mut spend);
    let Some(call) = reported.or(priced) else {
        return Cost { call: None, turn: spend.turn, total: spend.total };
    };
    crate::spend::add_today(&*kernel.store, &conv.owner, call);
    kernel.telemetry.cost(model, call);
    let turn = spend.turn.unwrap_or(0.0) + call;
    let total = spend.total.unwrap_or(0.0) + call;
    (spend.turn, spend.total) = (Some(turn), Some(total));
    Cost { call: Some(call), turn: Some(turn), total: Some(total) }
}

/// Why the turn may not make another model call, when a budget is spent: the notice is
/// published and the reason returned.
pub(crate) fn over_budget(kernel: &Kernel, conv: &Conversation, turn_id: i64) -> Option<String> {
    let settings = conv.settings();
    let budget = lock(&conv.policy).as_ref().map(|policy| policy.settings().budget).unwrap_or_default();
    let harness = kernel.catalog.harness(Some(&settings.harness)).map(|h| h.cost.budget).unwrap_or_default();
    let budget = budget.tightened_by(harness);
    let (turn, total) = {
        let spend = lock(&conv.spend);
        (spend.turn.unwrap_or(0.0), spend.total.unwrap_or(0.0))
    };
    // Read only where a day budget is set: a store query per model call otherwise saved.
    let day = budget.day_usd.map_or(Ok(0.0), |_| crate::spend::spent_today(&*kernel.store, &conv.owner));
    let why = spent_reason([
        ("turn", Ok(turn), budget.turn_usd),
        ("conversation", Ok(total), budget.conversation_usd),
        ("day", day, budget.day_usd),
    ])?;
    conv.emit(kernel, Event::notice(conv.id, Some(turn_id), "warning", why.clone()));
    Some(why)
}

/// Why a budget ends the turn: the first of `checks` (what, spent or why that is unknown,
/// limit) whose limit is reached, or whose spending could not be read (it fails closed).
fn spent_reason(checks: [(&str, Result<f64, String>, Option<f64>); 3]) -> Option<String> {
    checks.into_iter().find_map(|(what, spent, limit)| {
        let limit = limit?;
        match spent {
            Ok(spent) if spent >= limit => {
                Some(format!("the {what}'s budget of ${limit:.4} is spent (${spent:.4}): the turn ends here"))
            }
            Ok(_) => None,
            Err(why) => {
                Some(format!("the {what}'s budget of ${limit:.4} cannot be checked ({why}): the turn ends here"))
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::spent_reason;

    #[test]
    fn an_unreadable_day_spend_ends_the_turn_saying_why_not_an_infinite_amount() {
        let unread = Err("the store could not say what was spent today: disk I/O error".to_string());
        let why =
            spent_reason([("turn", Ok(0.5), None), ("conversation", Ok(1.0), Some(5.0)), ("day", unread, Some(2.0))]);
        assert_eq!(
            why.as_deref(),
            Some(
                "the day's budget of $2.0000 cannot be checked (the store could not say what was spent today: \
                 disk I/O error): the turn ends here"
            )
        );
        // Without a day budget nothing is read, and a spending under every limit goes on.
        assert_eq!(
            spent_reason([("turn", Ok(0.5), Some(1.0)), ("conversation", Ok(1.0), None), ("day", Ok(0.0), None)]),
            None
        );
        let spent =
            spent_reason([("turn", Ok(1.25), Some(1.0)), ("conversation", Ok(1.0), None), ("day", Ok(0.0), None)]);
        assert_eq!(spent.as_deref(), Some("the turn's budget of $1.0000 is spent ($1.2500): the turn ends here"));
    }
}
