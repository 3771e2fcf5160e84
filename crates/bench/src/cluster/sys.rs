//! What the kernel and ZooKeeper tell of processes: CPU time, the
//! machine's busy ticks, which process owns a TCP connection, and
//! ZooKeeper's per-connection packet counts (`cons`).

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use anyhow::{Context, Result, bail};

/// CPU time (user + system) `pid` has used so far.
pub(super) fn process_cpu(pid: u32) -> Duration {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return Duration::ZERO;
    };
    let Some((_, rest)) = stat.rsplit_once(") ") else {
        return Duration::ZERO;
    };
    let f: Vec<&str> = rest.split(' ').collect();
    let num = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    Duration::from_secs_f64((num(11) + num(12)) as f64 / ticks_per_second())
}

/// CPU time (user + system) this process has used so far: the site's
/// runtime runs in it.
pub(super) use crate::proc::own_cpu;

/// Clock ticks per second of `/proc`'s times.
fn ticks_per_second() -> f64 {
    // SAFETY: sysconf has no memory effects.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as f64 } else { 100.0 }
}

/// The machine's CPU ticks so far, every core: (busy, total). Busy is
/// all but idle and I/O wait, so it includes what no process is charged
/// with (interrupts, other tenants' steal).
pub(super) fn machine_ticks() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let fields: Vec<u64> = stat
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    let total: u64 = fields.iter().take(8).sum();
    let idle = fields.get(3).copied().unwrap_or(0) + fields.get(4).copied().unwrap_or(0);
    (total.saturating_sub(idle), total)
}

/// Sends a four-letter word to ZooKeeper and returns its answer.
pub(super) fn four_letter(zk: &str, word: &str) -> Result<String> {
    let mut s = TcpStream::connect(zk).with_context(|| format!("connecting to {zk}"))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    s.write_all(word.as_bytes())?;
    let mut out = String::new();
    s.read_to_string(&mut out)?;
    if out.contains("is not executed because it is not in the whitelist") {
        bail!(
            "ZooKeeper refuses `{word}`: add it to 4lw.commands.whitelist (scripts/zookeeper.sh)"
        );
    }
    Ok(out)
}

/// The client port and packets received of each connection in `cons`'s
/// answer (` /127.0.0.1:40312[1](queued=0,recved=52,sent=52,…)`).
pub(super) fn connections(cons: &str) -> Vec<(u16, u64)> {
    cons.lines()
        .filter_map(|line| {
            let line = line.trim().strip_prefix('/')?;
            let (address, rest) = line.split_once('[')?;
            let port = address.rsplit_once(':')?.1.parse().ok()?;
            let recved = rest.split_once("recved=")?.1;
            let digits: String = recved.chars().take_while(char::is_ascii_digit).collect();
            Some((port, digits.parse().ok()?))
        })
        .collect()
}

/// Which of `pids` owns the local end of each TCP connection to port
/// `server_port`: client port → pid (`/proc/net/tcp` for the socket's
/// inode, `/proc/<pid>/fd` for its owner).
pub(super) fn socket_owners(server_port: u16, pids: &[u32]) -> Result<HashMap<u16, u32>> {
    let mut inode_of_port = HashMap::new();
    for line in std::fs::read_to_string("/proc/net/tcp")?.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let port = |field: Option<&&str>| {
            field
                .and_then(|a| a.rsplit_once(':'))
                .and_then(|(_, p)| u16::from_str_radix(p, 16).ok())
        };
        let (Some(local), Some(remote), Some(inode)) = (port(f.get(1)), port(f.get(2)), f.get(9))
        else {
            continue;
        };
        if remote == server_port {
            inode_of_port.insert(format!("socket:[{inode}]"), local);
        }
    }
    let mut owners = HashMap::new();
    for &pid in pids {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            let Ok(link) = std::fs::read_link(fd.path()) else {
                continue;
            };
            if let Some(port) = inode_of_port.get(link.to_string_lossy().as_ref()) {
                owners.insert(*port, pid);
            }
        }
    }
    Ok(owners)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cons_lines_give_ports_and_packets() {
        let cons = " /127.0.0.1:40312[1](queued=0,recved=52,sent=53,sid=0x1000,lop=PING)\n \
                    /127.0.0.1:40400[0](queued=0,recved=1,sent=0)\n\n";
        assert_eq!(connections(cons), vec![(40312, 52), (40400, 1)]);
    }
}
