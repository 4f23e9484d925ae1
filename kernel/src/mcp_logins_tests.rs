use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

use tokio::sync::oneshot;

use super::Logins;

#[tokio::test]
async fn a_turn_meeting_a_login_under_way_waits_for_it_and_shares_its_outcome() {
    let logins = Logins::default();
    let runs = AtomicUsize::new(0);
    let login = |outcome: Result<(), String>| {
        runs.fetch_add(1, SeqCst);
        async move { outcome }
    };
    let (started, under_way) = oneshot::channel();
    let (answer, answered) = oneshot::channel();
    let first = logins.once("github", async {
        runs.fetch_add(1, SeqCst);
        let _ = started.send(());
        answered.await.unwrap_or_else(|_| Err("no answer".into()))
    });
    let second = async {
        under_way.await.unwrap();
        logins.once("github", login(Ok(()))).await
    };
    // In this order: the first starts, the second joins it, then the person declines.
    let (first, second, ()) = tokio::join!(biased; first, second, async {
        let _ = answer.send(Err("the person answered decline".to_string()));
    });
    let declined = Err("the person answered decline".to_string());
    assert_eq!((&first, &second), (&declined, &declined));
    // One login ran: the second's was dropped unrun (its closure built it, hence the count).
    assert_eq!(runs.load(SeqCst), 2);
    // Over: the next turn logs in itself, and another server's login is its own.
    assert_eq!(logins.once("github", async { Ok(()) }).await, Ok(()));
    assert_eq!(logins.once("linear", async { Err("refused".to_string()) }).await, Err("refused".into()));
}

#[tokio::test]
async fn a_login_dropped_without_an_outcome_leaves_its_waiter_to_log_in_itself() {
    let logins = Logins::default();
    let (started, under_way) = oneshot::channel();
    let mut first = Box::pin(logins.once("github", async {
        let _ = started.send(());
        std::future::pending::<Result<(), String>>().await
    }));
    tokio::select! {
        biased;
        _ = &mut first => unreachable!("a login that never ends"),
        _ = under_way => {}
    }
    let ran = AtomicUsize::new(0);
    let second = logins.once("github", async {
        ran.fetch_add(1, SeqCst);
        Ok(())
    });
    // The second waits for the first, whose turn is then cancelled (its future dropped).
    let (second, ()) = tokio::join!(biased; second, async move { drop(first) });
    assert_eq!((second, ran.load(SeqCst)), (Ok(()), 1));
}
