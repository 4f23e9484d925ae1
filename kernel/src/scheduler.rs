//! Runs schedules: a task that sleeps until the earliest tick (30 s at most, so schedules
//! another kernel on the database added are seen), claims each due tick in the store and
//! submits the schedule's prompt as a turn of its conversation; a webhook trigger's delivery
//! (`trigger.fire`) submits the same way at once. Nobody is present at these turns: the
//! pipeline asks no question in a turn a run submitted (`Schedules::scheduled_turn`), so an
//! askable call is refused.
//!
//! Once per tick: the claim moves the schedule's next tick on in the transaction that records
//! the run, so a tick is run by one kernel once, a kernel that restarts does not run it again,
//! and ticks missed while no kernel ran are run once (the next tick is the first after now, not
//! after the missed one). A run whose kernel dies between its claim and its turn is not run
//! again: at most once, never twice. A schedule without catch-up moves a tick more than 5
//! minutes late on without a run. Before a run, a schedule whose latest `max_failures` runs
//! (since it was last resumed) failed is paused instead, with a notice in its conversation.
//! A run's mode says where its turn goes: the conversation, a fork of it, or a fresh one.
//! The same loop sweeps the scratch workspaces unused for `scratch_ttl_hours`, at its start
//! and every [`SWEEP_EVERY`].

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use superpi_policy::Mode;
use superpi_proto::event::now_ms;
use superpi_proto::message::codes;
use superpi_proto::schedule::{
    DEFAULT_MAX_FAILURES, MAX_TRIGGER_BODY, RunInfo, ScheduleAddParams, ScheduleAddResult, ScheduleInfo,
    ScheduleListResult, TriggerFireParams, TriggerFireResult,
};
use superpi_proto::{ErrorObject, Message};

use crate::conversation::Input;
use crate::features::schedule::{self, CronSpec, Proof, RunMode};
use crate::kernel::Kernel;
use crate::live::{self, Found};
use superpi_store::{NewSchedule, RunSettings, Schedule, ScheduleRun, StoreError};

/// The longest the scheduler sleeps between looks at the store.
const POLL: Duration = Duration::from_secs(30);
/// How often the scratch workspaces are swept.
const SWEEP_EVERY: Duration = Duration::from_secs(600);
/// How long the scheduler waits after the store failed it.
const RETRY: Duration = Duration::from_secs(5);
/// Due schedules claimed per look.
const BATCH: usize = 64;
/// Runs `schedule.list` shows per schedule unless asked.
const LIST_RUNS: u32 = 5;

/// The scheduler's loop, until the kernel stops.
pub(crate) async fn run(kernel: Arc<Kernel>) {
    let mut swept: Option<std::time::Instant> = None;
    loop {
        if swept.is_none_or(|at| at.elapsed() >= SWEEP_EVERY) {
            swept = Some(std::time::Instant::now());
            sweep_scratch(&kernel).await;
        }
        // After a store error the due ticks are still due: look again in a while, not at once.
        let least = match fire_due(&kernel).await {
            Ok(()) => Duration::ZERO,
            Err(err) => {
                tracing::warn!("running due schedules: {err}");
                RETRY
            }
        };
        let wait = match kernel.store.next_tick() {
            Ok(Some(at)) => Duration::from_millis(u64::try_from(at - now_ms()).unwrap_or(0)).clamp(least, POLL),
            Ok(None) => POLL,
            Err(err) => {
                tracing::warn!("reading the next schedule tick: {err}");
                POLL
            }
        };
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = kernel.schedules_changed.notified() => {}
            _ = kernel.shutdown.cancelled() => return,
        }
    }
}

/// Removes the scratch workspaces of conversations not live here that sat unused for the
/// settings' `scratch_ttl_hours` (read now), and those of deleted conversations.
async fn sweep_scratch(kernel: &Arc<Kernel>) {
    let now = superpi_policy::Settings::load(&kernel.catalog.config_dir, None);
    let ttl = now.map_or(kernel.catalog.settings.scratch_ttl, |s| s.scratch_ttl);
    let k = kernel.clone();
    let swept = tokio::task::spawn_blocking(move || {
        let in_use = |id| k.live.get(id).is_some();
        // A store error keeps the directory: only a conversation known gone loses it.
        let exists = |id| !matches!(k.store.conversation(id), Ok(None));
        crate::features::workspaces::sweep(&k.config.workspaces_dir, ttl, in_use, exists)
    });
    if let Ok(removed @ 1..) = swept.await {
        tracing::info!(removed, "swept scratch workspaces unused for {ttl:?}");
    }
}

/// Claims every due tick and submits its run.
async fn fire_due(kernel: &Arc<Kernel>) -> Result<(), StoreError> {
    let now = now_ms();
    for due in kernel.store.due_schedules(now, BATCH)? {
        if kernel.shutdown.is_cancelled() {
            break;
        }
        let Some(tick) = due.next_at_ms else { continue };
        // The first tick after now: ticks missed while no kernel ran are run once, not each.
        let spec = CronSpec::parse(due.cron.as_deref().unwrap_or_default(), &due.timezone);
        let next = spec.as_ref().ok().and_then(|spec| spec.next_after(now.max(tick)));
        if schedule::skips(due.how.catch_up, tick, now) {
            if kernel.store.skip_tick(due.id, tick, next)? {
                tracing::info!(schedule = due.id, tick, "skipped a missed tick: the schedule does not catch up");
            }
            continue;
        }
        if pause_if_failing(kernel, &due)? {
            continue;
        }
        let Some(run) = kernel.store.claim_tick(due.id, tick, next)? else { continue };
        if let Err(why) = spec {
            kernel.store.set_run_error(run, &format!("the schedule cannot be read: {why}"))?;
            continue;
        }
        tracing::info!(schedule = due.id, conversation = due.conversation_id, tick, "running a schedule");
        start(kernel, &due, run, schedule::run_prompt(&due.prompt, None)).await;
    }
    Ok(())
}

/// Pauses a schedule whose latest `max_failures` runs since it was last resumed all failed,
/// with a warning notice in its conversation (0: it never pauses). Whether it is paused.
fn pause_if_failing(kernel: &Arc<Kernel>, s: &Schedule) -> Result<bool, StoreError> {
    if s.paused_at_ms.is_some() {
        return Ok(true);
    }
    let most = s.how.max_failures;
    if most == 0 {
        return Ok(false);
    }
    let since = s.resumed_at_ms.unwrap_or(i64::MIN);
    let runs = kernel.store.schedule_runs(s.id, usize::try_from(most).unwrap_or(usize::MAX))?;
    let streak = runs
        .iter()
        .take_while(|r| r.started_at_ms >= since && schedule::failed(r.error.as_deref(), r.turn_status.as_deref()))
        .count();
    if (streak as u64) < most {
        return Ok(false);
    }
    if kernel.store.pause_schedule(s.id, now_ms())? {
        let message = format!(
            "schedule {} is paused after {most} failed runs in a row; `superpi schedule resume {}` runs it again",
            s.id, s.id
        );
        tracing::warn!(schedule = s.id, "{message}");
        if let Ok(Some(Found::Here(conv))) = live::find(kernel, s.conversation_id) {
            conv.emit(kernel, superpi_proto::Event::notice(conv.id, None, "warning", message));
        }
    }
    Ok(true)
}

/// Submits a run's prompt as a turn (of its schedule's conversation, or of a fork of it or a
/// fresh one, by its mode) and records the turn, or why none started. The turn's
/// conversation and id.
async fn start(kernel: &Arc<Kernel>, schedule: &Schedule, run: i64, prompt: String) -> Option<(i64, i64)> {
    let started = submit(kernel, schedule, run, prompt).await;
    match started {
        Ok(turn) => Some(turn),
        Err(why) => {
            tracing::warn!(schedule = schedule.id, run, "a scheduled run started no turn: {why}");
            if let Err(err) = kernel.store.set_run_error(run, &why) {
                tracing::warn!(schedule = schedule.id, run, "recording a run's failure: {err}");
            }
            None
        }
    }
}

async fn submit(kernel: &Arc<Kernel>, schedule: &Schedule, run: i64, prompt: String) -> Result<(i64, i64), String> {
    let stored = |e: StoreError| e.to_string();
    let found = live::find(kernel, schedule.conversation_id)
        .map_err(stored)?
        .ok_or_else(|| format!("its conversation {} is gone", schedule.conversation_id))?;
    let (owner, harness) = match &found {
        Found::Here(conv) => (conv.owner.clone(), conv.settings().harness),
        Found::Elsewhere { row, .. } => (row.owner.clone(), row.harness.clone()),
    };
    if owner != schedule.owner {
        return Err("its conversation belongs to someone else".into());
    }
    // At most the ceiling it was made with, and the harness's own.
    let harness = kernel.catalog.harness(Some(&harness)).map_err(|e| e.message)?;
    let ceiling = schedule.ceiling.parse::<Mode>().unwrap_or(Mode::Plan).min(kernel.catalog.max_mode(harness, false));
    let message = Message::user_text(prompt);
    let found = match RunMode::parse(&schedule.how.mode)? {
        RunMode::Append => found,
        mode => {
            // Read from the store wherever it runs; the fork (or the fresh one) runs here.
            let row = kernel.store.conversation(schedule.conversation_id).map_err(stored)?.ok_or("it is gone")?;
            let at = (mode == RunMode::Fresh).then_some(0);
            let forked = kernel.store.fork(&row, &schedule.owner, at).map_err(stored)?;
            let conv = live::conversation(kernel, forked.id).map_err(stored)?.ok_or("its fork did not open")?;
            crate::turn::recovery::close_forked(kernel, &conv).map_err(stored)?;
            Found::Here(conv)
        }
    };
    let conv = match found {
        Found::Here(conv) => conv,
        Found::Elsewhere { row, .. } => {
            // Its holder takes the prompt from the store, told through the database.
            let turn_id = kernel.store.queue_submit(row.id, &message, ceiling.as_str(), false).map_err(stored)?;
            kernel.store.set_run_turn(run, turn_id).map_err(stored)?;
            return Ok((row.id, turn_id));
        }
    };
    let turn_id = kernel.store.create_turn(conv.id, &message).map_err(stored)?;
    // Recorded before the turn can run: the pipeline reads it to ask nobody.
    kernel.store.set_run_turn(run, turn_id).map_err(stored)?;
    let submit = Input::Submit { turn_id, message: Box::new(message), ceiling };
    if conv.input.send(submit).await.is_err() {
        let _ = kernel.store.set_turn_status(turn_id, "error", Some("the kernel is stopping"));
        return Err("the kernel is stopping".into());
    }
    Ok((conv.id, turn_id))
}

fn internal(err: StoreError) -> ErrorObject {
    ErrorObject::new(codes::INTERNAL_ERROR, format!("store error: {err}"))
}

fn invalid(why: String) -> ErrorObject {
    ErrorObject::new(codes::INVALID_PARAMS, why)
}

/// A new schedule's row from `schedule.add`'s params (or the schedule tool's), checked: the
/// row, and a trigger's token and secret.
pub(crate) fn new_schedule(
    p: &ScheduleAddParams,
    owner: &str,
    conversation_id: i64,
    ceiling: Mode,
) -> Result<(NewSchedule, Option<(String, String)>), String> {
    let (name, prompt) = schedule::checked_text(p.name.as_deref().unwrap_or_default(), &p.prompt)?;
    let timezone = p.timezone.clone().unwrap_or_else(|| "UTC".into());
    let mut row = NewSchedule {
        owner: owner.to_string(),
        conversation_id,
        name,
        prompt,
        timezone,
        ceiling: ceiling.as_str().to_string(),
        how: RunSettings {
            mode: p.mode.clone().unwrap_or_else(|| "append".into()),
            catch_up: p.catch_up.unwrap_or(true),
            max_failures: u64::from(p.max_failures.unwrap_or(DEFAULT_MAX_FAILURES)),
        },
        ..NewSchedule::default()
    };
    RunMode::parse(&row.how.mode)?;
    match (&p.cron, p.webhook) {
        (Some(cron), false) => {
            let spec = CronSpec::parse(cron, &row.timezone)?;
            row.next_at_ms = Some(spec.next_after(now_ms()).ok_or("the cron expression names no time to come")?);
            row.cron = Some(cron.trim().to_string());
            Ok((row, None))
        }
        (None, true) => {
            let (token, secret) = schedule::new_trigger()?;
            row.token_hash = Some(schedule::token_hash(&token));
            row.secret = Some(secret.clone());
            Ok((row, Some((token, secret))))
        }
        _ => Err("a schedule is either `cron` (with an optional `timezone`) or `webhook: true`".into()),
    }
}

/// `schedule.add` once the conversation is known (the caller's, checked by the handler).
pub(crate) fn add(
    kernel: &Kernel,
    p: &ScheduleAddParams,
    owner: &str,
    conversation_id: i64,
    ceiling: Mode,
) -> Result<Value, ErrorObject> {
    let (row, trigger) = new_schedule(p, owner, conversation_id, ceiling).map_err(invalid)?;
    let id = kernel.store.add_schedule(&row).map_err(internal)?;
    kernel.schedules_changed.notify_one();
    let schedule = kernel
        .store
        .schedule(id)
        .map_err(internal)?
        .ok_or_else(|| internal(StoreError::Corrupt(format!("schedule {id} vanished as it was added"))))?;
    let (token, secret) = trigger.unzip();
    to_value(ScheduleAddResult { schedule: info(&schedule, Vec::new()), token, secret })
}

/// `schedule.list`: the owner's schedules with their latest runs.
pub(crate) fn list(kernel: &Kernel, owner: &str, runs: Option<u32>) -> Result<Value, ErrorObject> {
    let runs = usize::try_from(runs.unwrap_or(LIST_RUNS).min(100)).unwrap_or(0);
    let mut schedules = Vec::new();
    for s in kernel.store.schedules(owner).map_err(internal)? {
        let recent = kernel.store.schedule_runs(s.id, runs).map_err(internal)?;
        schedules.push(info(&s, recent));
    }
    to_value(ScheduleListResult { schedules })
}

/// `schedule.remove`: one of the owner's schedules.
pub(crate) fn remove(kernel: &Kernel, owner: &str, id: i64) -> Result<Value, ErrorObject> {
    match kernel.store.remove_schedule(owner, id).map_err(internal)? {
        true => Ok(serde_json::json!({"removed": true})),
        false => Err(ErrorObject::new(codes::NOT_FOUND, format!("no schedule {id}"))),
    }
}

/// `schedule.resume`: one of the owner's paused schedules, a cron one from its next tick.
pub(crate) fn resume(kernel: &Kernel, owner: &str, id: i64) -> Result<Value, ErrorObject> {
    let missing = || ErrorObject::new(codes::NOT_FOUND, format!("no paused schedule {id}"));
    let s = kernel.store.schedule(id).map_err(internal)?.filter(|s| s.owner == owner).ok_or_else(missing)?;
    let now = now_ms();
    let next = match &s.cron {
        Some(cron) => CronSpec::parse(cron, &s.timezone).map_err(invalid)?.next_after(now),
        None => None,
    };
    match kernel.store.resume_schedule(owner, id, now, next).map_err(internal)? {
        true => {
            kernel.schedules_changed.notify_one();
            Ok(serde_json::json!({"resumed": true}))
        }
        false => Err(missing()),
    }
}

/// `trigger.fire`: a delivery to a webhook trigger, whose proof the kernel checks against the
/// secret it keeps. An unknown token and a wrong proof are the same refusal.
pub(crate) async fn fire(kernel: &Arc<Kernel>, p: TriggerFireParams) -> Result<Value, ErrorObject> {
    if p.body.len() > MAX_TRIGGER_BODY {
        return Err(invalid(format!("a trigger's body is at most {MAX_TRIGGER_BODY} bytes")));
    }
    let found = kernel.store.trigger(&schedule::token_hash(&p.token)).map_err(internal)?;
    let proof = match (&p.signature, &p.bearer) {
        (Some(header), _) => Proof::Signature { header, timestamp: p.timestamp.as_deref() },
        (None, Some(bearer)) => Proof::Bearer(bearer),
        (None, None) => Proof::None,
    };
    let now = superpi_proto::event::now_ms();
    let unauthorized = |why: schedule::Refusal| ErrorObject::new(codes::UNAUTHORIZED, why.to_string());
    let Some((trigger, secret)) = found else { return Err(unauthorized(schedule::Refusal::WrongProof)) };
    schedule::verify(&secret, p.body.as_bytes(), proof, now / 1000).map_err(unauthorized)?;
    // A key seen before is answered with the run it started, whatever else the delivery is.
    let key = p.idempotency_key.as_deref().map(schedule::idempotency_key).transpose().map_err(invalid)?;
    if let Some(key) = &key
        && let Some((run_id, turn_id, conversation_id)) =
            kernel.store.delivery_run(trigger.id, key).map_err(internal)?
    {
        let result = TriggerFireResult { schedule_id: trigger.id, run_id, conversation_id, turn_id, repeated: true };
        return to_value(result);
    }
    if pause_if_failing(kernel, &trigger).map_err(internal)? {
        return Err(ErrorObject::new(
            codes::UNAUTHORIZED,
            format!("this trigger is paused after failed runs: `superpi schedule resume {}` runs it again", trigger.id),
        ));
    }
    let row = kernel.store.conversation(trigger.conversation_id).map_err(internal)?;
    if !row.is_some_and(|row| kernel.catalog.harness(Some(&row.harness)).is_ok_and(|h| h.webhooks)) {
        return Err(ErrorObject::new(
            codes::FORBIDDEN,
            "this trigger's harness does not take webhooks (`webhooks = true` in harnesses.toml)",
        ));
    }
    // A proven delivery still waits its turn: a sender in a loop is held back, then one sent
    // again (same id, or same signature) is refused, whichever kernel it reached first.
    if let Err(wait_secs) = kernel.trigger_limits.take(trigger.id, now) {
        return Err(ErrorObject {
            code: codes::RATE_LIMITED,
            message: format!("too many deliveries to this trigger: try again in {wait_secs} s"),
            data: Some(serde_json::json!({"retry_after_secs": wait_secs})),
        });
    }
    if let Some(key) = &key
        && !kernel.store.note_delivery(trigger.id, key, now).map_err(internal)?
    {
        return Err(ErrorObject {
            code: codes::RATE_LIMITED,
            message: "a delivery with this Idempotency-Key is still starting its run: try again".into(),
            data: Some(serde_json::json!({"retry_after_secs": 1})),
        });
    }
    for key in schedule::delivery_keys(p.delivery.as_deref(), proof) {
        if !kernel.store.note_delivery(trigger.id, &key, now).map_err(internal)? {
            return Err(ErrorObject::new(
                codes::UNAUTHORIZED,
                "this delivery was accepted already (the same delivery id or the same signature): it is not run again",
            ));
        }
    }
    if kernel.shutdown.is_cancelled() {
        return Err(ErrorObject::new(codes::INTERNAL_ERROR, "the kernel is stopping"));
    }
    let run_id = kernel.store.start_delivery(trigger.id).map_err(internal)?;
    if let Some(key) = &key {
        kernel.store.set_delivery_run(trigger.id, key, run_id).map_err(internal)?;
    }
    tracing::info!(schedule = trigger.id, conversation = trigger.conversation_id, run_id, "a trigger was called");
    let prompt = schedule::run_prompt(&trigger.prompt, Some(&p.body));
    let Some((conversation_id, turn_id)) = start(kernel, &trigger, run_id, prompt).await else {
        let why = kernel.store.schedule_runs(trigger.id, 1).ok().and_then(|r| r.into_iter().next()?.error);
        return Err(ErrorObject::new(
            codes::INTERNAL_ERROR,
            format!("the trigger's turn did not start: {}", why.unwrap_or_default()),
        ));
    };
    to_value(TriggerFireResult { schedule_id: trigger.id, run_id, conversation_id, turn_id, repeated: false })
}

fn to_value<T: serde::Serialize>(t: T) -> Result<Value, ErrorObject> {
    serde_json::to_value(t).map_err(|e| ErrorObject::new(codes::INTERNAL_ERROR, e.to_string()))
}

/// A schedule as listed.
pub(crate) fn info(s: &Schedule, runs: Vec<ScheduleRun>) -> ScheduleInfo {
    ScheduleInfo {
        id: s.id,
        name: s.name.clone(),
        kind: if s.trigger { "webhook" } else { "cron" }.into(),
        conversation_id: s.conversation_id,
        prompt: s.prompt.clone(),
        cron: s.cron.clone(),
        timezone: s.timezone.clone(),
        next_at_ms: s.next_at_ms,
        ceiling: s.ceiling.clone(),
        created_at_ms: s.created_at_ms,
        run_count: s.runs,
        failures: s.failures,
        mode: s.how.mode.clone(),
        catch_up: s.how.catch_up,
        max_failures: s.how.max_failures,
        paused_at_ms: s.paused_at_ms,
        runs: runs.into_iter().map(run_info).collect(),
    }
}

fn run_info(r: ScheduleRun) -> RunInfo {
    let (status, error) = match (&r.error, &r.turn_status) {
        (Some(error), _) => ("failed".to_string(), Some(error.clone())),
        (None, Some(status)) => (status.clone(), r.turn_error.clone()),
        (None, None) => ("starting".to_string(), None),
    };
    RunInfo { id: r.id, due_at_ms: r.due_at_ms, started_at_ms: r.started_at_ms, turn_id: r.turn_id, status, error }
}
