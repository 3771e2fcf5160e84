//! `crawlkeeper status`: the cluster as ZooKeeper and PostgreSQL see it,
//! as text or JSON, once or refreshed in place (`--watch`).

use std::io::Write;

use crawlkeeper_node::status::status;
use crawlkeeper_store::location::scrub;

use crate::args_cluster::StatusArgs;
use crate::cluster::{connect_zk, open_store};
use crate::exit::{CliError, Outcome};
use crate::signals::Shutdown;

/// Runs `crawlkeeper status`.
pub async fn run(args: StatusArgs) -> Result<Outcome, CliError> {
    let zk = connect_zk(&args.cluster).await?;
    let shutdown = Shutdown::install().map_err(|e| CliError::Fatal(e.into()))?;
    loop {
        let store = open_store(&args.cluster).await?;
        let look = status(&zk, args.cluster.group.as_str(), store, args.window);
        let s = tokio::select! {
            // Said once, without the password.
            s = look => s.map_err(|e| CliError::Fatal(anyhow::anyhow!(
                "{}",
                scrub(&e.to_string(), &args.cluster.store)
            )))?,
            () = shutdown.requested() => return Ok(Outcome::Finished),
        };
        let text = if args.json {
            serde_json::to_string_pretty(&s).map_err(|e| CliError::Fatal(e.into()))?
        } else {
            s.to_string()
        };
        let mut out = std::io::stdout().lock();
        if args.watch {
            // Home and clear, then the new view.
            let _ = write!(out, "\x1b[H\x1b[2J");
        }
        let _ = writeln!(out, "{}", text.trim_end());
        let _ = out.flush();
        if !args.watch {
            return Ok(Outcome::Finished);
        }
    }
}
