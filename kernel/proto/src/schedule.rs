//! The params and results of the schedule methods (`schedule.add`, `schedule.list`,
//! `schedule.remove`) and of `trigger.fire`, a webhook trigger's delivery.

use serde::{Deserialize, Serialize};

/// The header that carries a trigger delivery's signature: `sha256=` and the hex HMAC-SHA256,
/// under the trigger's secret, of the timestamp header's value, a `.`, and the body (the
/// form of GitHub's `X-Hub-Signature-256`, over what Stripe's `t=` signatures cover).
pub const SIGNATURE_HEADER: &str = "x-superpi-signature-256";

/// The header that carries the Unix time (seconds) at which a delivery was signed; a signature
/// more than [`SIGNATURE_TOLERANCE_SECS`] away from the kernel's clock is refused.
pub const TIMESTAMP_HEADER: &str = "x-superpi-timestamp";

/// The header that names a delivery (a sender's unique id, as GitHub's `X-GitHub-Delivery`):
/// a delivery id seen in the last day is refused as sent again.
pub const DELIVERY_HEADER: &str = "x-superpi-delivery";

/// The header that makes a delivery idempotent: a key seen on this trigger in the last day
/// starts no second run; the delivery is answered with the run the key started.
pub const IDEMPOTENCY_HEADER: &str = "idempotency-key";

/// The longest `Idempotency-Key` taken.
pub const MAX_IDEMPOTENCY_KEY: usize = 255;

/// Failed runs in a row that pause a schedule, unless it says otherwise.
pub const DEFAULT_MAX_FAILURES: u32 = 3;

/// How far a signed delivery's timestamp may be from the kernel's clock, either way.
pub const SIGNATURE_TOLERANCE_SECS: i64 = 300;

/// The most bytes of a trigger delivery's body.
pub const MAX_TRIGGER_BODY: usize = 32 * 1024;

fn is_false(b: &bool) -> bool {
    !*b
}

/// `schedule.add`: a cron schedule (`cron`, with `timezone`) or a webhook trigger
/// (`webhook: true`) whose runs are turns of a conversation: the one named, else a new one of
/// `harness` (default `superpi-librarian`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleAddParams {
    /// The prompt each run submits (a trigger's runs add the request body, fenced as data).
    pub prompt: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Five fields (minute hour day-of-month month day-of-week) or `@hourly`, `@daily`, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cron: Option<String>,
    /// An IANA time zone for `cron` (default `UTC`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    /// A webhook trigger instead of a cron schedule.
    #[serde(default, skip_serializing_if = "is_false")]
    pub webhook: bool,
    /// The conversation its runs are turns of (the caller's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<i64>,
    /// Without `conversation_id`: the harness of the new conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harness: Option<String>,
    /// Without `conversation_id`, for a harness with a workspace: its root (absolute).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// Where each run happens: `append` (default: a turn of the conversation), `fork` (a fork
    /// of the conversation at its latest entry, so its transcript stays clean) or `fresh` (a
    /// new conversation of its harness, workspace and model, without its history).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Whether a tick missed while no kernel ran still runs, once, when one starts (default
    /// true); false skips it (a 07:00 briefing missed does not run at 15:00).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catch_up: Option<bool>,
    /// Failed runs in a row that pause it (default [`DEFAULT_MAX_FAILURES`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_failures: Option<u32>,
}

/// `schedule.add`'s result: the schedule, and for a trigger its token (the last part of
/// `POST /v1/triggers/TOKEN`) and secret, which are answered this once and never again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScheduleAddResult {
    pub schedule: ScheduleInfo,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

/// `schedule.list`: the caller's schedules, each with its latest `runs` runs (default 5).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleListParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs: Option<u32>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ScheduleListResult {
    pub schedules: Vec<ScheduleInfo>,
}

/// `schedule.remove`: one of the caller's schedules, with its runs' records (the turns they
/// ran stay in their conversation).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleRemoveParams {
    pub id: i64,
}

/// `schedule.resume`: one of the caller's paused schedules runs again (a cron schedule from
/// its next tick after now: ticks while it was paused are not run).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleResumeParams {
    pub id: i64,
}

/// A schedule as listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScheduleInfo {
    pub id: i64,
    pub name: String,
    /// `cron` or `webhook`.
    pub kind: String,
    pub conversation_id: i64,
    pub prompt: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cron: Option<String>,
    pub timezone: String,
    /// The next tick not yet run (a cron schedule's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_at_ms: Option<i64>,
    /// The highest mode its turns run in.
    pub ceiling: String,
    pub created_at_ms: i64,
    /// How many runs it had, and how many failed.
    pub run_count: u64,
    pub failures: u64,
    /// `append`, `fork` or `fresh`.
    #[serde(default)]
    pub mode: String,
    #[serde(default)]
    pub catch_up: bool,
    #[serde(default)]
    pub max_failures: u64,
    /// When it paused after `max_failures` failed runs in a row (`schedule.resume` lifts it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused_at_ms: Option<i64>,
    /// The latest runs, newest first.
    #[serde(default)]
    pub runs: Vec<RunInfo>,
}

/// One run of a schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    pub id: i64,
    /// The tick it ran for (none: a trigger's delivery).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub due_at_ms: Option<i64>,
    pub started_at_ms: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<i64>,
    /// `starting` (claimed, no turn yet), `failed` (no turn started), or the turn's status
    /// (`queued`, `running`, `completed`, `error`, `cancelled`, `interrupted`).
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `trigger.fire`: a webhook trigger's delivery, as the gateway received it. The kernel
/// checks the proof (`signature`: `sha256=HEX`, the HMAC-SHA256 of `body` under the trigger's
/// secret; or `bearer`: the secret itself); a wrong or missing one, or an unknown token, is
/// `-32001` whichever it was.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TriggerFireParams {
    pub token: String,
    pub body: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer: Option<String>,
    /// [`TIMESTAMP_HEADER`]'s value: what a signature covers with the body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// [`DELIVERY_HEADER`]'s value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<String>,
    /// [`IDEMPOTENCY_HEADER`]'s value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

/// `trigger.fire`'s result: the run and the turn it submitted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TriggerFireResult {
    pub schedule_id: i64,
    pub run_id: i64,
    pub conversation_id: i64,
    pub turn_id: i64,
    /// The delivery's `Idempotency-Key` was seen already: this is the run it started, and no
    /// new one was.
    #[serde(default, skip_serializing_if = "is_false")]
    pub repeated: bool,
}
