//! Politeness across a cluster's processes: how many requests each
//! process may have in flight at a host or an IP address, so that the
//! bound holds across every process and job sharing the database.
//!
//! Each process ([`PoliteWant`]s in hand) exchanges a few times a second:
//! it renews its `polite_holders` row, removes holders not renewed for
//! [`GONE_AFTER`] (with their holdings), and for every key it wants
//! computes its grant from what the others hold. A key whose grant may
//! grow is locked first (a transaction-level advisory lock per key, tried,
//! never waited for: a key locked by another exchange grows next time), so
//! that two processes never both take the last place.
//!
//! Rules:
//! - A process is granted at most its limit less what others hold (a
//!   holder's `n` counts what it was granted, or what it has in flight if
//!   more: places are given back only once their requests end).
//! - **Turns:** a process that has held a key for [`TURN`] while others
//!   wait for it keeps at most the limit less one place per waiter (with a
//!   limit of 1: none), and waits in its turn. One that holds a key idle
//!   (between two requests to a host) gives it up at once to a waiter.
//! - A process sends only while its grants were confirmed less than 2 s
//!   ago by its own clock (`crawlkeeper_fetch`'s `GRANT_LIFETIME`,
//!   measured from when it asked), and stops at once when an exchange
//!   fails. Its holdings are taken back 3 s after it last renewed them by
//!   the store's clock ([`GONE_AFTER`]: a paused or cut-off process), or
//!   0.5 s after when its session has ended ([`SESSION_GONE_AFTER`]: a
//!   killed process, whose connection the server saw close; alive, it
//!   would have tried to renew within 0.25 s, failed and stopped).

use std::collections::HashMap;

use postgres::Client;

use super::err;
use crate::StoreError;

/// A holder not renewed for this long is gone, and what it held is free.
pub const GONE_AFTER: &str = "3 seconds";

/// A holder whose session ended (its process was killed, or its
/// connection lost) and that has not renewed for this long is gone: by
/// then, alive, it has tried to renew, failed, and stopped using its
/// grants.
pub const SESSION_GONE_AFTER: &str = "500 milliseconds";

/// How long a process keeps a key others wait for before it gives its
/// places up.
pub const TURN: &str = "1 second";

/// What a process wants of a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoliteWant {
    /// `host:NAME` or `ip:ADDRESS`.
    pub key: String,
    /// The most in flight at the key the process's requests allow.
    pub limit: u32,
    /// How many it could use now (within `limit`).
    pub want: u32,
    /// How many it has in flight now.
    pub in_flight: u32,
    /// Nothing of it is in flight or waiting: its places are kept for its
    /// next request, and given up at once when others wait.
    pub idle: bool,
}

/// What the store holds of one key.
#[derive(Debug, Default, Clone, Copy)]
struct Seen {
    /// Held by the others.
    others: u32,
    /// Others waiting (wanting more than they hold).
    waiting: u32,
    /// This holder's grant so far.
    granted: u32,
    /// This holder had its share for a turn or more.
    turn_over: bool,
}

/// What a holder last wrote of each key it holds or waits for (its rows
/// as they are: others never change them, only remove them all with the
/// holder), so that an exchange reads and writes only the keys whose
/// wants changed, that it waits for, or that others wait for.
#[derive(Debug, Default)]
pub struct Written {
    rows: HashMap<String, Row>,
}

/// One key's row (`held` is its `n`), and the want it answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Row {
    granted: u32,
    held: u32,
    want: u32,
    limit: u32,
    idle: bool,
}

impl Row {
    /// Whether the row stands for `w` as it is: the same want, and the
    /// same count held with what is in flight now.
    fn answers(&self, w: &PoliteWant) -> bool {
        (self.want, self.limit, self.idle) == (w.want, w.limit, w.idle)
            && self.granted.max(w.in_flight) == self.held
    }
}

/// Renews `holder`'s holdings, drops gone holders, and grants `wants`:
/// how many of each key `holder` may have in flight. Keys it held and no
/// longer wants are given back. `written` is what this holder wrote
/// before (kept by the caller; emptied when the store forgot the holder).
pub fn exchange(
    client: &mut Client,
    written: &mut Written,
    holder: &str,
    wants: &[PoliteWant],
) -> Result<Vec<(String, u32)>, StoreError> {
    let result = exchange_in(client, written, holder, wants);
    if result.is_err() {
        // Rolled back: what is written is read again next time.
        written.rows.clear();
    }
    result
}

fn exchange_in(
    client: &mut Client,
    written: &mut Written,
    holder: &str,
    wants: &[PoliteWant],
) -> Result<Vec<(String, u32)>, StoreError> {
    let mut tx = client.transaction().map_err(err)?;
    // Holdings are soft state: a renewal lost in a server crash (which
    // ends every session anyway) costs nothing, so no commit waits for
    // its log to reach the disk.
    tx.batch_execute("SET LOCAL synchronous_commit = off")
        .map_err(err)?;
    tx.execute(
        &format!(
            "DELETE FROM polite_holders WHERE holder IN (
                 SELECT holder FROM polite_holders h
                 WHERE renewed < now() - interval '{GONE_AFTER}'
                 OR (renewed < now() - interval '{SESSION_GONE_AFTER}' AND NOT EXISTS (
                     SELECT 1 FROM pg_stat_activity a
                     WHERE a.pid = h.pid AND a.backend_start = h.started))
                 FOR UPDATE SKIP LOCKED)"
        ),
        &[],
    )
    .map_err(err)?;
    let new_holder: bool = tx
        .query_one(
            "INSERT INTO polite_holders (holder, renewed, pid, started)
             SELECT $1, now(), pid, backend_start FROM pg_stat_activity
             WHERE pid = pg_backend_pid()
             ON CONFLICT (holder) DO UPDATE
             SET renewed = now(), pid = excluded.pid, started = excluded.started
             RETURNING (xmax = 0)",
            &[&holder],
        )
        .map_err(err)?
        .get(0);
    if new_holder {
        // Gone with the holder's row, if it had one.
        written.rows.clear();
    }
    // Keys no longer wanted are given back.
    let wanted: std::collections::HashSet<&str> = wants.iter().map(|w| w.key.as_str()).collect();
    let gone: Vec<String> = written
        .rows
        .keys()
        .filter(|k| !wanted.contains(k.as_str()))
        .cloned()
        .collect();
    if !gone.is_empty() {
        tx.execute(
            "DELETE FROM polite_holds WHERE holder = $1 AND key = ANY($2)",
            &[&holder, &gone],
        )
        .map_err(err)?;
    }
    // Others waiting: a probe of the index of waiting rows.
    let waited: std::collections::HashSet<String> = tx
        .query(
            "SELECT DISTINCT key FROM polite_holds WHERE wants > n AND holder <> $1",
            &[&holder],
        )
        .map_err(err)?
        .iter()
        .map(|r| r.get(0))
        .collect();
    // The keys to look at: those whose want changed, that this holder
    // waits for, or that others wait for. The others keep their grant.
    let attention: Vec<&PoliteWant> = wants
        .iter()
        .filter(|w| match written.rows.get(&w.key) {
            Some(row) => !row.answers(w) || row.granted < w.want || waited.contains(&w.key),
            None => true,
        })
        .collect();
    let keys: Vec<&str> = attention.iter().map(|w| w.key.as_str()).collect();
    let mut seen = if keys.is_empty() {
        HashMap::new()
    } else {
        read(&mut tx, holder, &keys)?
    };
    // Keys whose grant may grow: locked, then read again. A key another
    // process is granting now (or a paused one left locked) does not grow
    // this time: no exchange ever waits for another.
    let mut growing: Vec<&str> = attention
        .iter()
        .filter(|w| w.want > seen.get(&w.key).map_or(0, |s| s.granted))
        .map(|w| w.key.as_str())
        .collect();
    growing.sort_unstable();
    let mut locked = std::collections::HashSet::new();
    for key in &growing {
        let got: bool = tx
            .query_one(
                "SELECT pg_try_advisory_xact_lock(hashtextextended($1, 7202612))",
                &[key],
            )
            .map_err(err)?
            .get(0);
        if got {
            locked.insert(*key);
        }
    }
    if !locked.is_empty() {
        seen = read(&mut tx, holder, &keys)?;
    }
    let mut rows = Vec::with_capacity(attention.len());
    let (mut put, mut n, mut granted, mut wants_now, mut dropped) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for w in &attention {
        let s = seen.get(&w.key).copied().unwrap_or_default();
        let mut grant = grant(w, s);
        if !locked.contains(w.key.as_str()) {
            grant = grant.min(s.granted);
        }
        let held = grant.max(w.in_flight);
        let row = Row {
            granted: grant,
            held,
            want: w.want,
            limit: w.limit,
            idle: w.idle,
        };
        let before = written.rows.get(&w.key);
        if held == 0 && w.want == 0 {
            dropped.push(w.key.as_str());
        } else if before.is_some_and(|b| (b.held, b.granted, b.want) == (held, grant, w.want)) {
            // The row is as it was: not written again.
        } else {
            put.push(w.key.as_str());
            n.push(i32::try_from(held).unwrap_or(i32::MAX));
            granted.push(i32::try_from(grant).unwrap_or(i32::MAX));
            wants_now.push(i32::try_from(w.want).unwrap_or(i32::MAX));
        }
        rows.push((w.key.clone(), row, held == 0 && w.want == 0));
    }
    // A row for every key held or waited for; `since` starts when a share
    // is got and is kept while it is held.
    if !put.is_empty() {
        tx.execute(
            "INSERT INTO polite_holds AS h (key, holder, n, granted, wants, since)
             SELECT k, $1, n, g, w, now()
             FROM unnest($2::text[], $3::int4[], $4::int4[], $5::int4[]) AS u(k, n, g, w)
             ON CONFLICT (key, holder) DO UPDATE
             SET n = excluded.n, granted = excluded.granted, wants = excluded.wants,
                 since = CASE WHEN h.n = 0 OR excluded.n = 0 THEN now() ELSE h.since END",
            &[&holder, &put, &n, &granted, &wants_now],
        )
        .map_err(err)?;
    }
    if !dropped.is_empty() {
        tx.execute(
            "DELETE FROM polite_holds WHERE holder = $1 AND key = ANY($2)",
            &[&holder, &dropped],
        )
        .map_err(err)?;
    }
    tx.commit().map_err(err)?;
    for key in &gone {
        written.rows.remove(key);
    }
    for (key, row, dropped) in rows {
        if dropped {
            written.rows.remove(&key);
        } else {
            written.rows.insert(key, row);
        }
    }
    Ok(wants
        .iter()
        .map(|w| {
            let granted = written.rows.get(&w.key).map_or(0, |r| r.granted);
            (w.key.clone(), granted)
        })
        .collect())
}

/// What a want is granted, given what the store holds of its key.
fn grant(w: &PoliteWant, s: Seen) -> u32 {
    if w.idle && s.waiting > 0 {
        return 0;
    }
    let room = w.limit.saturating_sub(s.others);
    let mut grant = w.want.min(room);
    if s.waiting > 0 && s.turn_over {
        // Its turn is over: a place for each waiter, as far as it can.
        grant = grant.min(w.limit.saturating_sub(s.waiting));
    }
    grant
}

/// What the store holds of `keys`, for `holder`.
fn read(
    tx: &mut postgres::Transaction<'_>,
    holder: &str,
    keys: &[&str],
) -> Result<HashMap<String, Seen>, StoreError> {
    let rows = tx
        .query(
            &format!(
                "SELECT key,
                    CAST(coalesce(sum(n) FILTER (WHERE holder <> $1), 0) AS BIGINT),
                    count(*) FILTER (WHERE holder <> $1 AND wants > n),
                    CAST(coalesce(max(granted) FILTER (WHERE holder = $1), 0) AS BIGINT),
                    coalesce(bool_or(holder = $1 AND n > 0
                        AND since < now() - interval '{TURN}'), false)
                 FROM polite_holds WHERE key = ANY($2) GROUP BY key"
            ),
            &[&holder, &keys],
        )
        .map_err(err)?;
    let count = |v: i64| u32::try_from(v.max(0)).unwrap_or(u32::MAX);
    Ok(rows
        .iter()
        .map(|r| {
            (
                r.get::<_, String>(0),
                Seen {
                    others: count(r.get(1)),
                    waiting: count(r.get(2)),
                    granted: count(r.get(3)),
                    turn_over: r.get(4),
                },
            )
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn want(limit: u32, want: u32, in_flight: u32) -> PoliteWant {
        PoliteWant {
            key: "ip:127.0.0.1".into(),
            limit,
            want,
            in_flight,
            idle: false,
        }
    }

    #[test]
    fn a_grant_is_what_the_others_leave_and_gives_way_when_its_turn_is_over() {
        let alone = Seen::default();
        assert_eq!(grant(&want(4, 3, 0), alone), 3);
        let others = Seen { others: 3, ..alone };
        assert_eq!(grant(&want(4, 3, 0), others), 1);
        assert_eq!(grant(&want(1, 1, 0), Seen { others: 1, ..alone }), 0);
        // Held idle, between two requests: given up at once to a waiter.
        let idle = PoliteWant {
            idle: true,
            ..want(1, 1, 0)
        };
        let waiter = Seen {
            waiting: 1,
            granted: 1,
            ..alone
        };
        assert_eq!(grant(&idle, alone), 1);
        assert_eq!(grant(&idle, waiter), 0);
        // Others waiting: nothing given up before the turn is over…
        let waited = Seen {
            waiting: 1,
            granted: 1,
            ..alone
        };
        assert_eq!(grant(&want(1, 1, 1), waited), 1);
        // …then a place for each waiter.
        let over = Seen {
            turn_over: true,
            ..waited
        };
        assert_eq!(grant(&want(1, 1, 1), over), 0);
        assert_eq!(grant(&want(4, 4, 4), Seen { waiting: 2, ..over }), 2);
    }

    fn ip(limit: u32, want: u32, in_flight: u32) -> Vec<PoliteWant> {
        vec![super::tests::want(limit, want, in_flight)]
    }

    #[test]
    fn holders_share_a_key_s_limit_take_turns_and_a_gone_one_s_places_come_back() {
        let (url, space, mut admin) = crate::postgres::test_schema::fresh("polite");
        let mut a = crate::PgStore::connect_in_schema(&url, Some(&space)).unwrap();
        let mut b = crate::PgStore::connect_in_schema(&url, Some(&space)).unwrap();
        let g = |r: Vec<(String, u32)>| r[0].1;
        // A takes the one place; B waits.
        assert_eq!(g(a.polite_exchange("a", &ip(1, 1, 0)).unwrap()), 1);
        assert_eq!(g(b.polite_exchange("b", &ip(1, 1, 0)).unwrap()), 0);
        // A keeps it while its turn lasts, then gives it up: at once when
        // nothing of its is in flight, else once its request ended.
        assert_eq!(g(a.polite_exchange("a", &ip(1, 1, 1)).unwrap()), 1);
        admin
            .batch_execute(
                "UPDATE polite_holds SET since = since - interval '2 s' WHERE holder = 'a'",
            )
            .unwrap();
        assert_eq!(g(a.polite_exchange("a", &ip(1, 1, 1)).unwrap()), 0);
        assert_eq!(
            g(b.polite_exchange("b", &ip(1, 1, 0)).unwrap()),
            0,
            "a's request is in flight"
        );
        assert_eq!(g(a.polite_exchange("a", &ip(1, 1, 0)).unwrap()), 0);
        assert_eq!(
            g(b.polite_exchange("b", &ip(1, 1, 0)).unwrap()),
            1,
            "b's turn"
        );
        assert_eq!(g(a.polite_exchange("a", &ip(1, 1, 0)).unwrap()), 0);
        // B is gone (not renewed for 3 s): its place comes back to A.
        admin
            .batch_execute(
                "UPDATE polite_holders SET renewed = renewed - interval '4 s' WHERE holder = 'b'",
            )
            .unwrap();
        assert_eq!(g(a.polite_exchange("a", &ip(1, 1, 0)).unwrap()), 1);
        // A key no longer wanted is given back.
        assert!(a.polite_exchange("a", &[]).unwrap().is_empty());
        let held: i64 = admin
            .query_one("SELECT count(*) FROM polite_holds", &[])
            .unwrap()
            .get(0);
        assert_eq!(held, 0);
        // C's session ends (its process killed): its place is A's once C
        // has not renewed for half a second, not before.
        let mut c = crate::PgStore::connect_in_schema(&url, Some(&space)).unwrap();
        assert_eq!(g(a.polite_exchange("a", &ip(1, 0, 0)).unwrap()), 0);
        assert_eq!(g(c.polite_exchange("c", &ip(1, 1, 0)).unwrap()), 1);
        drop(c);
        assert_eq!(g(a.polite_exchange("a", &ip(1, 1, 0)).unwrap()), 0);
        admin
            .batch_execute("UPDATE polite_holders SET renewed = renewed - interval '600 ms' WHERE holder = 'c'")
            .unwrap();
        // (The server may take a moment to see the connection close.)
        // Within a second: sooner than 3 s without renewal would free it.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
        while g(a.polite_exchange("a", &ip(1, 1, 0)).unwrap()) == 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "c's place never came back"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(a.polite_exchange("a", &[]).unwrap().is_empty());
        // Larger limits: each holder gets what the others leave.
        assert_eq!(g(a.polite_exchange("a", &ip(4, 3, 0)).unwrap()), 3);
        assert_eq!(g(b.polite_exchange("b", &ip(4, 4, 0)).unwrap()), 1);
    }

    #[test]
    fn an_exchange_never_waits_for_a_process_paused_in_its_own() {
        let (url, space, _admin) = crate::postgres::test_schema::fresh("polite_paused");
        let mut a = crate::PgStore::connect_in_schema(&url, Some(&space)).unwrap();
        let g = |r: Vec<(String, u32)>| r[0].1;
        // A key of its own: advisory locks are the database's, not the
        // schema's, and the other test runs beside this one.
        let ip = |limit: u32, wanted: u32, in_flight: u32| {
            vec![PoliteWant {
                key: "ip:127.0.0.9".into(),
                ..want(limit, wanted, in_flight)
            }]
        };
        // P, gone for 3 s, was stopped mid-exchange: its transaction holds
        // the key's lock and its holder row.
        let mut p = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        p.batch_execute(&format!("SET search_path TO {space}"))
            .unwrap();
        p.batch_execute(
            "INSERT INTO polite_holders SELECT 'p', now() - interval '4 s', pg_backend_pid(),
                 backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid()",
        )
        .unwrap();
        let mut paused = p.transaction().unwrap();
        paused
            .batch_execute(
                "UPDATE polite_holders SET pid = pid WHERE holder = 'p';
                 SELECT pg_advisory_xact_lock(hashtextextended('ip:127.0.0.9', 7202612))",
            )
            .unwrap();
        // A's exchange neither waits (a lock timeout would fail it) nor
        // grows the key locked by P's exchange; the next one does.
        let started = std::time::Instant::now();
        assert_eq!(g(a.polite_exchange("a", &ip(1, 1, 0)).unwrap()), 0);
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        paused.rollback().unwrap();
        assert_eq!(g(a.polite_exchange("a", &ip(1, 1, 0)).unwrap()), 1);
    }
}
