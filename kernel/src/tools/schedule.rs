//! The schedule block's tools: `schedule_create`, `schedule_list` and `schedule_cancel`.
//! Registered by the kernel like the memory tools (`turn_only`, capability `schedule`, their
//! runner in the kernel's process, reaching the store through the `KernelSlot`). A schedule a
//! model creates runs its prompt as a turn of the calling conversation, at most in the mode
//! the calling turn runs in. Webhook triggers are made only through `schedule.add` (a
//! frontend), so a trigger's secret never passes through a model. A scheduled run cannot
//! create schedules: it would multiply them with nobody present to stop it.

use serde::Deserialize;
use serde_json::json;
use superpi_proto::schedule::ScheduleAddParams;
use superpi_proto::tool::{Capability, Effect, ToolCallResult, ToolDef, ToolKind, ToolUi};
use superpi_sandbox::{RunFuture, ToolCall, ToolRunner};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::features::schedule::CronSpec;
use crate::kernel::{Kernel, KernelSlot};
use crate::sync::lock;
use crate::tools::common::{ok, parse};

/// The most schedules of one conversation.
const MAX_PER_CONVERSATION: usize = 10;
/// The shortest time between two runs a model may ask for.
const MIN_INTERVAL_MS: i64 = 5 * 60 * 1000;

/// Which of the three tools a runner is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Create,
    List,
    Cancel,
}

impl Op {
    pub const ALL: [Op; 3] = [Op::Create, Op::List, Op::Cancel];
}

pub(crate) struct ScheduleTool {
    pub kernel: KernelSlot,
    pub op: Op,
}

/// The facts of a tool.
pub(crate) fn def(op: Op) -> ToolDef {
    let tool = |name, description, schema, effects, ui| {
        crate::tools::common::block_tool(Capability::Schedule, name, description, schema, effects, ui)
    };
    match op {
        Op::Create => tool(
            "schedule_create",
            "Schedule a prompt to run later and repeatedly as a turn of this conversation, with nobody present \
             (a question such a run would ask is refused). `cron` is five fields (minute hour day-of-month month \
             day-of-week) or @hourly, @daily, @weekly; runs are at least 5 minutes apart; `timezone` is an IANA \
             name (default UTC). A run missed while the service was down runs once when it is back, unless \
             `catch_up` is false. `mode`: `append` (default, turns of this conversation), `fork` (each run in a \
             fork of it) or `fresh` (each run in a new conversation without this one's history).",
            json!({
                "type": "object",
                "properties": {
                    "prompt": {"type": "string", "description": "What each run is asked to do"},
                    "cron": {"type": "string", "description": "When: e.g. `0 7 * * 1-5` (07:00 on weekdays)"},
                    "timezone": {"type": "string", "description": "An IANA time zone, e.g. Europe/London"},
                    "name": {"type": "string", "description": "A short name"},
                    "mode": {"type": "string", "enum": ["append", "fork", "fresh"]},
                    "catch_up": {"type": "boolean", "description": "Run a missed tick once, late (default true)"}
                },
                "required": ["prompt", "cron"],
                "additionalProperties": false
            }),
            vec![Effect::StateWrite],
            ToolUi { kind: ToolKind::Edit, title: Some("Schedule: {cron}".into()), ..ToolUi::default() },
        ),
        Op::List => tool(
            "schedule_list",
            "List this conversation's schedules: when each runs next, its latest runs and how many failed.",
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
            vec![Effect::Read],
            ToolUi { kind: ToolKind::Read, title: Some("List schedules".into()), ..ToolUi::default() },
        ),
        Op::Cancel => tool(
            "schedule_cancel",
            "Cancel one of this conversation's schedules by its id.",
            json!({
                "type": "object",
                "properties": {"id": {"type": "integer", "minimum": 1}},
                "required": ["id"],
                "additionalProperties": false
            }),
            vec![Effect::StateWrite],
            ToolUi { kind: ToolKind::Edit, title: Some("Cancel schedule {id}".into()), ..ToolUi::default() },
        ),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateArgs {
    prompt: String,
    cron: String,
    #[serde(default)]
    timezone: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    mode: Option<String>,
    #[serde(default)]
    catch_up: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CancelArgs {
    id: i64,
}

impl ToolRunner for ScheduleTool {
    fn run<'a>(&'a self, call: &'a ToolCall, _: CancellationToken, _: Option<mpsc::Sender<String>>) -> RunFuture<'a> {
        Box::pin(async move {
            let Some(kernel) = self.kernel.get() else { return ToolCallResult::error("the kernel is stopping") };
            let done = match self.op {
                Op::Create => create(&kernel, call),
                Op::List => list(&kernel, call.conversation_id),
                Op::Cancel => cancel(&kernel, call),
            };
            done.unwrap_or_else(ToolCallResult::error)
        })
    }
}

fn stored<T>(result: Result<T, superpi_store::StoreError>) -> Result<T, String> {
    result.map_err(|e| format!("the schedules could not be reached: {e}"))
}

/// This conversation's schedules.
fn of_conversation(kernel: &Kernel, conversation_id: i64) -> Result<Vec<superpi_store::Schedule>, String> {
    let Some(row) = stored(kernel.store.conversation(conversation_id))? else {
        return Err("the schedule tools are called by a model during a turn".into());
    };
    let all = stored(kernel.store.schedules(&row.owner))?;
    Ok(all.into_iter().filter(|s| s.conversation_id == conversation_id).collect())
}

fn create(kernel: &Kernel, call: &ToolCall) -> Result<ToolCallResult, String> {
    let args: CreateArgs = parse(&call.arguments)?;
    let conv = kernel.live.get(call.conversation_id).ok_or("`schedule_create` is called by a model during a turn")?;
    let running = *lock(&conv.running);
    if let Some(turn) = running
        && stored(kernel.store.scheduled_turn(turn))?
    {
        return Err("a scheduled run cannot create schedules".into());
    }
    if of_conversation(kernel, conv.id)?.len() >= MAX_PER_CONVERSATION {
        return Err(format!("a conversation has at most {MAX_PER_CONVERSATION} schedules: cancel one first"));
    }
    let zone = args.timezone.clone().unwrap_or_else(|| "UTC".into());
    let spec = CronSpec::parse(&args.cron, &zone)?;
    let now = superpi_proto::event::now_ms();
    let first = spec.next_after(now).ok_or("the cron expression names no time to come")?;
    if spec.next_after(first).is_some_and(|second| second - first < MIN_INTERVAL_MS) {
        return Err("runs must be at least 5 minutes apart".into());
    }
    // At most the mode the calling turn runs in.
    let stored_mode = conv.settings().mode.parse::<superpi_policy::Mode>().map_err(|e| e.to_string())?;
    let ceiling = lock(&conv.turn_ceiling).unwrap_or(stored_mode).min(stored_mode);
    let params = ScheduleAddParams {
        prompt: args.prompt,
        name: args.name,
        cron: Some(args.cron),
        timezone: Some(zone),
        mode: args.mode,
        catch_up: args.catch_up,
        ..ScheduleAddParams::default()
    };
    let (mut row, _) = crate::scheduler::new_schedule(&params, &conv.owner, conv.id, ceiling)?;
    row.created_by = Some(conv.id);
    let id = stored(kernel.store.add_schedule(&row))?;
    kernel.schedules_changed.notify_one();
    let next = row.next_at_ms.unwrap_or(first);
    Ok(ok(
        format!(
            "Scheduled #{id} ({} in {}); it runs next at {} UTC.",
            row.cron.unwrap_or_default(),
            row.timezone,
            utc(next)
        ),
        json!({"id": id, "next_at_ms": next}),
    ))
}

fn list(kernel: &Kernel, conversation_id: i64) -> Result<ToolCallResult, String> {
    let schedules = of_conversation(kernel, conversation_id)?;
    if schedules.is_empty() {
        return Ok(ok("This conversation has no schedules.".into(), json!({"schedules": []})));
    }
    let mut output = String::new();
    let mut listed = Vec::new();
    for s in &schedules {
        let runs = stored(kernel.store.schedule_runs(s.id, 3))?;
        let info = crate::scheduler::info(s, runs);
        let when = match (&s.cron, s.next_at_ms) {
            (Some(cron), Some(next)) => format!("{cron} ({}), next {} UTC", s.timezone, utc(next)),
            (Some(cron), None) => format!("{cron} ({}), no time to come", s.timezone),
            (None, _) => "a webhook trigger".into(),
        };
        output.push_str(&format!(
            "#{} {}: {when}; {} runs, {} failed.\n",
            s.id,
            if s.name.is_empty() { "(unnamed)" } else { &s.name },
            s.runs,
            s.failures
        ));
        listed.push(serde_json::to_value(info).map_err(|e| e.to_string())?);
    }
    Ok(ok(output.trim_end().to_string(), json!({"schedules": listed})))
}

fn cancel(kernel: &Kernel, call: &ToolCall) -> Result<ToolCallResult, String> {
    let args: CancelArgs = parse(&call.arguments)?;
    let Some(schedule) = of_conversation(kernel, call.conversation_id)?.into_iter().find(|s| s.id == args.id) else {
        return Err(format!("this conversation has no schedule #{}", args.id));
    };
    stored(kernel.store.remove_schedule(&schedule.owner, schedule.id))?;
    Ok(ok(format!("Cancelled schedule #{}.", schedule.id), json!({"cancelled": schedule.id})))
}

/// A time as the model reads it: `2026-03-01 07:30`.
fn utc(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).map(|t| t.format("%Y-%m-%d %H:%M").to_string()).unwrap_or_default()
}
