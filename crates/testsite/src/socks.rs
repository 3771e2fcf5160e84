//! A small SOCKS5 proxy for tests (RFC 1928, `CONNECT` only; without
//! authentication, or asking a user name and password, RFC 1929): it
//! relays to loopback addresses only (a name is refused, never looked
//! up) and logs the target of every connection it is asked for.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt, copy_bidirectional};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// A running SOCKS5 proxy.
pub struct SocksServer {
    addr: SocketAddr,
    log: Arc<Mutex<Vec<String>>>,
    /// Clients refused for their credentials (or for offering none).
    refused: Arc<Mutex<usize>>,
    credentials: Option<(String, String)>,
    task: JoinHandle<()>,
}

/// What one client must say, and where to note it.
struct Rules {
    log: Arc<Mutex<Vec<String>>>,
    refused: Arc<Mutex<usize>>,
    credentials: Option<(String, String)>,
}

impl SocksServer {
    /// Listens on a free port of 127.0.0.1, asking no credentials.
    pub async fn start() -> std::io::Result<Self> {
        Self::start_with(None).await
    }

    /// Listens on a free port of 127.0.0.1; with `credentials` (user,
    /// password), a client must give them (RFC 1929) or is refused.
    pub async fn start_with(credentials: Option<(&str, &str)>) -> std::io::Result<Self> {
        let credentials = credentials.map(|(u, p)| (u.to_owned(), p.to_owned()));
        let refused = Arc::new(Mutex::new(0));
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let log = Arc::new(Mutex::new(Vec::new()));
        let rules = Arc::new(Rules {
            log: log.clone(),
            refused: refused.clone(),
            credentials: credentials.clone(),
        });
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let rules = rules.clone();
                tokio::spawn(async move {
                    let _ = relay(stream, &rules).await;
                });
            }
        });
        Ok(Self {
            addr,
            log,
            refused,
            credentials,
            task,
        })
    }

    /// `socks5://127.0.0.1:port`, or `socks5h://` when the proxy is to
    /// resolve names; with the server's credentials in it when it asks
    /// for some.
    pub fn url(&self, remote_names: bool) -> String {
        let scheme = if remote_names { "socks5h" } else { "socks5" };
        match &self.credentials {
            Some((user, password)) => format!("{scheme}://{user}:{password}@{}", self.addr),
            None => format!("{scheme}://{}", self.addr),
        }
    }

    /// `socks5://user:password@127.0.0.1:port` with the given credentials.
    pub fn url_as(&self, user: &str, password: &str) -> String {
        format!("socks5://{user}:{password}@{}", self.addr)
    }

    /// Clients refused for wrong or missing credentials.
    pub fn refused(&self) -> usize {
        *self.refused.lock().expect("refused lock")
    }

    /// The target of every connection made, as asked (`host:port`).
    pub fn connections(&self) -> Vec<String> {
        self.log.lock().expect("log lock").clone()
    }
}

impl Drop for SocksServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One client: greeting (and credentials), request, then bytes both ways.
async fn relay(mut client: TcpStream, rules: &Rules) -> std::io::Result<()> {
    let mut head = [0u8; 2];
    client.read_exact(&mut head).await?;
    let mut methods = vec![0u8; usize::from(head[1])];
    client.read_exact(&mut methods).await?;
    // 0: no authentication; 2: user name and password.
    let method = if rules.credentials.is_some() { 2 } else { 0 };
    if head[0] != 5 || !methods.contains(&method) {
        if rules.credentials.is_some() {
            *rules.refused.lock().expect("refused lock") += 1;
        }
        // No acceptable method.
        return client.write_all(&[5, 0xff]).await;
    }
    client.write_all(&[5, method]).await?;
    if let Some((user, password)) = &rules.credentials {
        let mut version = [0u8; 1];
        client.read_exact(&mut version).await?;
        let given = (
            read_field(&mut client).await?,
            read_field(&mut client).await?,
        );
        if version[0] != 1 || given.0 != user.as_bytes() || given.1 != password.as_bytes() {
            *rules.refused.lock().expect("refused lock") += 1;
            return client.write_all(&[1, 1]).await;
        }
        client.write_all(&[1, 0]).await?;
    }
    let log = &rules.log;
    let mut request = [0u8; 4];
    client.read_exact(&mut request).await?;
    let host = match request[3] {
        1 => {
            let mut ip = [0u8; 4];
            client.read_exact(&mut ip).await?;
            Ipv4Addr::from(ip).to_string()
        }
        4 => {
            let mut ip = [0u8; 16];
            client.read_exact(&mut ip).await?;
            Ipv6Addr::from(ip).to_string()
        }
        3 => {
            let mut len = [0u8; 1];
            client.read_exact(&mut len).await?;
            let mut name = vec![0u8; usize::from(len[0])];
            client.read_exact(&mut name).await?;
            String::from_utf8_lossy(&name).into_owned()
        }
        _ => return client.write_all(&[5, 8, 0, 1, 0, 0, 0, 0, 0, 0]).await,
    };
    let mut port = [0u8; 2];
    client.read_exact(&mut port).await?;
    let port = u16::from_be_bytes(port);
    if request[1] != 1 {
        // Only CONNECT.
        return client.write_all(&[5, 7, 0, 1, 0, 0, 0, 0, 0, 0]).await;
    }
    let target = format!("{host}:{port}");
    log.lock().expect("log lock").push(target.clone());
    // Addresses only, and loopback ones: a name is never looked up (no
    // test may reach a resolver), and tests stay on loopback.
    let to = match host.parse::<std::net::IpAddr>() {
        Ok(ip) if ip.is_loopback() => SocketAddr::new(ip, port),
        _ => return client.write_all(&[5, 2, 0, 1, 0, 0, 0, 0, 0, 0]).await,
    };
    let mut upstream = match TcpStream::connect(to).await {
        Ok(s) => s,
        Err(_) => return client.write_all(&[5, 5, 0, 1, 0, 0, 0, 0, 0, 0]).await,
    };
    client.write_all(&[5, 0, 0, 1, 0, 0, 0, 0, 0, 0]).await?;
    copy_bidirectional(&mut client, &mut upstream).await?;
    Ok(())
}

/// One field of RFC 1929's sub-negotiation: a length byte, then that
/// many bytes.
async fn read_field(client: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut len = [0u8; 1];
    client.read_exact(&mut len).await?;
    let mut field = vec![0u8; usize::from(len[0])];
    client.read_exact(&mut field).await?;
    Ok(field)
}
