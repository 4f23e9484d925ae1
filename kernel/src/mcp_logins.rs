//! The MCP logins under way, one per server name (the kernel's `mcp_logins`): a turn meeting a
//! server that another turn is logging in to waits for that login and goes on with its
//! outcome, rather than opening a second tab and redirect listener whose tokens would replace
//! the first's. In memory only; the login itself is `turn/mcp_login.rs`.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::watch;

use crate::sync::lock;

/// A login's outcome, once it has one.
type Outcome = Option<Result<(), String>>;

/// The logins under way, by server name (the kernel's `mcp_logins`).
#[derive(Default)]
pub(crate) struct Logins {
    under_way: Mutex<HashMap<String, watch::Receiver<Outcome>>>,
}

/// The login a caller of [`Logins::once`] runs, or the one it waits for.
enum Turn {
    Lead(watch::Sender<Outcome>),
    Join(watch::Receiver<Outcome>),
}

impl Logins {
    /// Runs `login` for the server `name`, unless a login to it is under way: then waits for
    /// that one and returns its outcome (`login` is dropped unrun). When the login waited for
    /// is dropped without an outcome (its turn was cancelled), the waiter runs its own.
    pub(crate) async fn once(&self, name: &str, login: impl Future<Output = Result<(), String>>) -> Result<(), String> {
        let mut login = Some(login);
        loop {
            match self.lead_or_join(name) {
                Turn::Lead(outcome) => {
                    let _leaving = Leaving { logins: self, name };
                    let Some(login) = login.take() else { return Err("no login to run".into()) };
                    let done = login.await;
                    outcome.send_replace(Some(done.clone()));
                    return done;
                }
                Turn::Join(mut outcome) => {
                    if let Ok(done) = outcome.wait_for(Option::is_some).await
                        && let Some(done) = done.clone()
                    {
                        return done;
                    }
                }
            }
        }
    }

    fn lead_or_join(&self, name: &str) -> Turn {
        let mut under_way = lock(&self.under_way);
        if let Some(outcome) = under_way.get(name) {
            return Turn::Join(outcome.clone());
        }
        let (lead, outcome) = watch::channel(None);
        under_way.insert(name.to_string(), outcome);
        Turn::Lead(lead)
    }
}

/// The leader's login is over (done or dropped): the next turn to need one runs its own.
struct Leaving<'a> {
    logins: &'a Logins,
    name: &'a str,
}

impl Drop for Leaving<'_> {
    fn drop(&mut self) {
        lock(&self.logins.under_way).remove(self.name);
    }
}

#[cfg(test)]
#[path = "mcp_logins_tests.rs"]
mod tests;
