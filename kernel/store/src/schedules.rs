//! Schedules in the store: cron schedules and webhook triggers, each the turns of one
//! conversation, and their runs. A cron tick is claimed by moving the schedule's `next_at_ms`
//! on from the value the claimer read, in the transaction (on PostgreSQL the statement) that
//! records its run: of several claims of one tick, by one kernel or several on one database,
//! one wins, and a unique index on (schedule, tick) says so a second time.

use super::StoreError;

/// A schedule to store.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NewSchedule {
    pub owner: String,
    pub conversation_id: i64,
    pub name: String,
    pub prompt: String,
    /// A cron schedule's expression (with `timezone`); `None` for a trigger.
    pub cron: Option<String>,
    pub timezone: String,
    /// A trigger's token, hashed, and its secret.
    pub token_hash: Option<String>,
    pub secret: Option<String>,
    /// The highest mode its turns run in.
    pub ceiling: String,
    /// Its first tick.
    pub next_at_ms: Option<i64>,
    /// The conversation whose tool call created it.
    pub created_by: Option<i64>,
    /// How its runs run, what it does with missed ticks, when it pauses.
    pub how: RunSettings,
}

/// How a schedule's runs run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunSettings {
    /// `append` (turns of its conversation), `fork` (each run a fork of it at its latest entry)
    /// or `fresh` (each run a new conversation of its settings, without its history).
    pub mode: String,
    /// Whether a tick missed while no kernel ran still runs (once) when one starts.
    pub catch_up: bool,
    /// Failed runs in a row that pause it.
    pub max_failures: u64,
}

impl Default for RunSettings {
    fn default() -> Self {
        RunSettings { mode: "append".into(), catch_up: true, max_failures: 3 }
    }
}

/// A stored schedule, as listed (a trigger's secret is never read with it).
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    pub id: i64,
    pub owner: String,
    pub conversation_id: i64,
    pub name: String,
    pub prompt: String,
    pub cron: Option<String>,
    pub timezone: String,
    /// A webhook trigger (else a cron schedule).
    pub trigger: bool,
    pub ceiling: String,
    pub next_at_ms: Option<i64>,
    pub created_by: Option<i64>,
    pub created_at_ms: i64,
    /// Its runs, and those that failed (no turn started, or its turn ended in an error or
    /// was interrupted).
    pub runs: u64,
    pub failures: u64,
    pub how: RunSettings,
    /// When it was paused (after `how.max_failures` failed runs in a row), and when it was
    /// last resumed: runs before that do not count towards a pause.
    pub paused_at_ms: Option<i64>,
    pub resumed_at_ms: Option<i64>,
}

/// A run of a schedule: the tick it claimed (none for a trigger's delivery), the turn it
/// submitted and how that turn ended, or why no turn started.
#[derive(Debug, Clone, PartialEq)]
pub struct ScheduleRun {
    pub id: i64,
    pub schedule_id: i64,
    pub due_at_ms: Option<i64>,
    pub started_at_ms: i64,
    pub turn_id: Option<i64>,
    /// Why no turn was started.
    pub error: Option<String>,
    /// The turn's status (`queued`, `running`, `completed`, `error`, ...) and error.
    pub turn_status: Option<String>,
    pub turn_error: Option<String>,
}

pub trait Schedules {
    /// Stores a schedule; its id.
    fn add_schedule(&self, schedule: &NewSchedule) -> Result<i64, StoreError>;

    /// An owner's schedules, oldest first.
    fn schedules(&self, owner: &str) -> Result<Vec<Schedule>, StoreError>;

    /// The schedule with this id.
    fn schedule(&self, id: i64) -> Result<Option<Schedule>, StoreError>;

    /// Removes an owner's schedule and its runs; false when it has none of that id.
    fn remove_schedule(&self, owner: &str, id: i64) -> Result<bool, StoreError>;

    /// Moves a schedule's next tick from `due_at_ms` to `next_at_ms` without a run (a missed
    /// tick of a schedule without catch-up): false when it was moved already.
    fn skip_tick(&self, schedule_id: i64, due_at_ms: i64, next_at_ms: Option<i64>) -> Result<bool, StoreError>;

    /// Pauses a schedule at `now_ms`: false when it was paused already.
    fn pause_schedule(&self, schedule_id: i64, now_ms: i64) -> Result<bool, StoreError>;

    /// Resumes an owner's paused schedule at `now_ms`, its next tick `next_at_ms`: false when
    /// the owner has no paused schedule of that id.
    fn resume_schedule(&self, owner: &str, id: i64, now_ms: i64, next_at_ms: Option<i64>) -> Result<bool, StoreError>;

    /// The run a noted delivery started.
    fn set_delivery_run(&self, schedule_id: i64, key: &str, run_id: i64) -> Result<(), StoreError>;

    /// A noted delivery's run, that run's turn and the turn's conversation, once it has them.
    fn delivery_run(&self, schedule_id: i64, key: &str) -> Result<Option<(i64, i64, i64)>, StoreError>;

    /// Cron schedules whose next tick is at or before `now_ms`, earliest first.
    fn due_schedules(&self, now_ms: i64, limit: usize) -> Result<Vec<Schedule>, StoreError>;

    /// The earliest tick of any schedule.
    fn next_tick(&self) -> Result<Option<i64>, StoreError>;

    /// Claims the tick `due_at_ms` of a schedule, moving its next tick to `next_at_ms`, and
    /// records the run: its id, or `None` when the schedule's next tick is no longer
    /// `due_at_ms` (claimed already, here or by another kernel, or removed).
    fn claim_tick(&self, schedule_id: i64, due_at_ms: i64, next_at_ms: Option<i64>) -> Result<Option<i64>, StoreError>;

    /// The trigger of a token's hash, with its secret.
    fn trigger(&self, token_hash: &str) -> Result<Option<(Schedule, String)>, StoreError>;

    /// Notes a trigger's delivery by its key (the sender's delivery id, or its signature) at
    /// `now_ms`, forgetting those older than [`DELIVERY_MEMORY_MS`]: false when the key was
    /// noted already (a delivery sent again), in one statement whichever kernel asks.
    fn note_delivery(&self, schedule_id: i64, key: &str, now_ms: i64) -> Result<bool, StoreError>;

    /// Records a trigger's delivery as a run; its id.
    fn start_delivery(&self, schedule_id: i64) -> Result<i64, StoreError>;

    /// A run submitted this turn.
    fn set_run_turn(&self, run_id: i64, turn_id: i64) -> Result<(), StoreError>;

    /// A run started no turn, for this reason.
    fn set_run_error(&self, run_id: i64, error: &str) -> Result<(), StoreError>;

    /// A schedule's latest runs, newest first, with their turns' ends.
    fn schedule_runs(&self, schedule_id: i64, limit: usize) -> Result<Vec<ScheduleRun>, StoreError>;

    /// Whether a schedule's run submitted this turn (nobody is present at it).
    fn scheduled_turn(&self, turn_id: i64) -> Result<bool, StoreError>;
}

/// The columns every read of a schedule selects, in this order.
pub(super) const SCHEDULE_COLUMNS: &str = "s.id, s.owner, s.conversation_id, s.name, s.prompt, s.cron, s.timezone, \
     s.token_hash IS NOT NULL, s.ceiling, s.next_at_ms, s.created_by, s.created_at_ms, \
     (SELECT COUNT(*) FROM schedule_runs r WHERE r.schedule_id = s.id), \
     (SELECT COUNT(*) FROM schedule_runs r LEFT JOIN turns t ON t.id = r.turn_id \
      WHERE r.schedule_id = s.id AND (r.error IS NOT NULL OR t.status IN ('error', 'interrupted'))), \
     s.mode, s.catch_up, s.max_failures, s.paused_at_ms, s.resumed_at_ms";

/// The column after `SCHEDULE_COLUMNS` (a trigger's secret, where it is read).
pub(super) const SECRET_COLUMN: usize = 19;

/// The columns of a run, in this order.
pub(super) const RUN_COLUMNS: &str =
    "r.id, r.schedule_id, r.due_at_ms, r.started_at_ms, r.turn_id, r.error, t.status, t.error";

/// A row of either engine, read by column number: one reading of a schedule and a run serves
/// both.
pub(super) trait Columns {
    fn int(&self, i: usize) -> Result<i64, StoreError>;
    fn opt_int(&self, i: usize) -> Result<Option<i64>, StoreError>;
    fn text(&self, i: usize) -> Result<String, StoreError>;
    fn opt_text(&self, i: usize) -> Result<Option<String>, StoreError>;
    fn flag(&self, i: usize) -> Result<bool, StoreError>;
}

/// A schedule from a row of `SCHEDULE_COLUMNS`.
pub(super) fn schedule_of(row: &impl Columns) -> Result<Schedule, StoreError> {
    Ok(Schedule {
        id: row.int(0)?,
        owner: row.text(1)?,
        conversation_id: row.int(2)?,
        name: row.text(3)?,
        prompt: row.text(4)?,
        cron: row.opt_text(5)?,
        timezone: row.text(6)?,
        trigger: row.flag(7)?,
        ceiling: row.text(8)?,
        next_at_ms: row.opt_int(9)?,
        created_by: row.opt_int(10)?,
        created_at_ms: row.int(11)?,
        runs: u64::try_from(row.int(12)?).unwrap_or(0),
        failures: u64::try_from(row.int(13)?).unwrap_or(0),
        how: RunSettings {
            mode: row.text(14)?,
            catch_up: row.flag(15)?,
            max_failures: u64::try_from(row.int(16)?).unwrap_or(0),
        },
        paused_at_ms: row.opt_int(17)?,
        resumed_at_ms: row.opt_int(18)?,
    })
}

/// A run from a row of `RUN_COLUMNS`.
pub(super) fn run_of(row: &impl Columns) -> Result<ScheduleRun, StoreError> {
    Ok(ScheduleRun {
        id: row.int(0)?,
        schedule_id: row.int(1)?,
        due_at_ms: row.opt_int(2)?,
        started_at_ms: row.int(3)?,
        turn_id: row.opt_int(4)?,
        error: row.opt_text(5)?,
        turn_status: row.opt_text(6)?,
        turn_error: row.opt_text(7)?,
    })
}

/// How long a trigger's accepted deliveries are remembered: a day.
pub const DELIVERY_MEMORY_MS: i64 = 24 * 60 * 60 * 1000;

pub(super) fn limit(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
