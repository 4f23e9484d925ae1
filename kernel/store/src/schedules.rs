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
      WHERE r.schedule_id = s.id AND (r.error IS NOT NULL OR t.status IN ('error', 'interrupted')))";

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
