//! Each host's address for its per-IP bound: the first address its name
//! resolves to that the SSRF guard allows (the one a connection tries
//! first), looked up again once [`ADDRESS_TTL`] has passed, so that a host
//! whose DNS answer changes moves to its new address's bound within it.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::guard::GuardedResolver;

/// How long a host's address is used before it is looked up again.
pub const ADDRESS_TTL: Duration = Duration::from_secs(60);

/// The most hosts remembered: past it, the cache starts again empty (a
/// host then costs one more lookup, never unbounded memory).
const MAX_HOSTS: usize = 100_000;

/// Hosts' addresses, as last looked up.
#[derive(Debug, Default)]
pub(crate) struct AddressCache {
    hosts: Mutex<HashMap<String, (Option<IpAddr>, Instant)>>,
}

impl AddressCache {
    /// `host`'s address (lower case), looked up through `guard` when not
    /// known or too old; `None` when it resolves to no allowed address
    /// here (the request then fails, or a proxy resolves it).
    pub(crate) async fn of(&self, host: &str, guard: &GuardedResolver) -> Option<IpAddr> {
        if let Some((ip, at)) = self.lock().get(host)
            && at.elapsed() < ADDRESS_TTL
        {
            return *ip;
        }
        let ip = guard.first_address(host).await;
        let mut hosts = self.lock();
        if hosts.len() >= MAX_HOSTS {
            hosts.clear();
        }
        hosts.insert(host.to_owned(), (ip, Instant::now()));
        ip
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Option<IpAddr>, Instant)>> {
        self.hosts.lock().unwrap_or_else(|p| p.into_inner())
    }
}
