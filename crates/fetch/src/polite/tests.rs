use std::time::Duration;

use super::*;

fn host(h: &str) -> Key {
    Key::Host(h.to_owned())
}

/// Whether `fut` is ready without waiting.
async fn ready<F: std::future::Future>(fut: F) -> Option<F::Output> {
    tokio::time::timeout(Duration::from_millis(1), fut)
        .await
        .ok()
}

#[tokio::test(start_paused = true)]
async fn two_crawls_on_a_host_take_turns_within_the_smaller_limit() {
    let p = Politeness::new();
    let a1 = p.enter(host("a.test"), 1).await;
    // Another crawl's request, limit 1: waits for the first to end.
    let p2 = p.clone();
    let waiting = tokio::spawn(async move { p2.enter(host("a.test"), 1).await });
    tokio::task::yield_now().await;
    assert!(!waiting.is_finished());
    assert_eq!(p.in_flight(&host("a.test")), 1);
    drop(a1);
    let b1 = waiting.await.unwrap();
    assert_eq!(p.in_flight(&host("a.test")), 1);
    // A crawl allowing 4 does not go while one allowing 1 is in flight.
    assert!(ready(p.enter(host("a.test"), 4)).await.is_none());
    drop(b1);
    let c = p.enter(host("a.test"), 4).await;
    let d = p.enter(host("a.test"), 4).await;
    assert_eq!(p.in_flight(&host("a.test")), 2);
    // …and one allowing 1 waits while anything is in flight.
    assert!(ready(p.enter(host("a.test"), 1)).await.is_none());
    // Other keys are not held up.
    let _e = p.enter(Key::Ip("127.0.0.1".parse().unwrap()), 1).await;
    drop((c, d));
    assert_eq!(p.in_flight(&host("a.test")), 0);
}

#[tokio::test(start_paused = true)]
async fn waiters_go_in_the_order_they_came_and_a_quitter_leaves_no_hole() {
    let p = Politeness::new();
    let first = p.enter(host("a.test"), 1).await;
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut waiting = Vec::new();
    for n in 0..3 {
        let (p, order) = (p.clone(), order.clone());
        waiting.push(tokio::spawn(async move {
            let permit = p.enter(host("a.test"), 1).await;
            order.lock().unwrap().push(n);
            tokio::time::sleep(Duration::from_millis(10)).await;
            drop(permit);
        }));
        tokio::task::yield_now().await;
    }
    // One that gives up waiting.
    let quitter = {
        let p = p.clone();
        tokio::spawn(async move { p.enter(host("a.test"), 1).await })
    };
    tokio::task::yield_now().await;
    quitter.abort();
    drop(first);
    for w in waiting {
        w.await.unwrap();
    }
    assert_eq!(*order.lock().unwrap(), [0, 1, 2]);
    let _again = ready(p.enter(host("a.test"), 1))
        .await
        .expect("the quitter's place was freed");
}

#[tokio::test(start_paused = true)]
async fn shared_gates_let_through_what_the_keeper_granted_while_it_is_fresh() {
    let p = Politeness::new();
    p.share();
    let key = Key::Ip("127.0.0.1".parse().unwrap());
    let p2 = p.clone();
    let k2 = key.clone();
    let first = tokio::spawn(async move { p2.enter(k2, 2).await });
    let wants = p.demand().await;
    assert_eq!(
        wants,
        [Want {
            key: key.clone(),
            limit: 2,
            want: 1,
            in_flight: 0,
            idle: false,
        }]
    );
    assert!(!first.is_finished(), "nothing goes before a grant");
    p.grant(Instant::now(), &[(key.clone(), 1)]);
    let a = first.await.unwrap();
    // Granted one: a second request waits though its limit is 2.
    assert!(ready(p.enter(key.clone(), 2)).await.is_none());
    drop(a);
    // A grant the keeper stopped confirming lets nothing through.
    tokio::time::advance(GRANT_LIFETIME).await;
    assert!(ready(p.enter(key.clone(), 2)).await.is_none());
    p.grant(Instant::now(), &[(key.clone(), 2)]);
    let _b = p.enter(key.clone(), 2).await;
    let _c = p.enter(key.clone(), 2).await;
    assert_eq!(p.in_flight(&key), 2);
}

#[tokio::test(start_paused = true)]
async fn shared_places_linger_after_the_last_request_then_go() {
    let p = Politeness::new();
    p.share();
    let key = host("a.test");
    let k = key.clone();
    let p2 = p.clone();
    let first = tokio::spawn(async move { p2.enter(k, 1).await });
    let _ = p.demand().await;
    p.grant(Instant::now(), &[(key.clone(), 1)]);
    drop(first.await.unwrap());
    // Idle: the place is kept for the next request…
    let wants = p.demand().await;
    assert_eq!((wants[0].want, wants[0].idle), (1, true), "{wants:?}");
    let again = ready(p.enter(key.clone(), 1))
        .await
        .expect("a lingering place is used at once");
    drop(again);
    // …until it has been idle for LINGER: then it is given back.
    tokio::time::advance(LINGER).await;
    p.grant(Instant::now(), &[(key.clone(), 1)]);
    let wants = p.demand().await;
    assert_eq!((wants[0].want, wants[0].idle), (0, false), "{wants:?}");
}
