//! A small SOCKS5 proxy for tests (RFC 1928, `CONNECT` only, no
//! authentication): it relays to loopback addresses only (a name is
//! refused, never looked up) and logs the target of every connection it
//! is asked for.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt, copy_bidirectional};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// A running SOCKS5 proxy.
pub struct SocksServer {
    addr: SocketAddr,
    log: Arc<Mutex<Vec<String>>>,
    task: JoinHandle<()>,
}

impl SocksServer {
    /// Listens on a free port of 127.0.0.1.
    pub async fn start() -> std::io::Result<Self> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let log = Arc::new(Mutex::new(Vec::new()));
        let task_log = log.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let log = task_log.clone();
                tokio::spawn(async move {
                    let _ = relay(stream, &log).await;
                });
            }
        });
        Ok(Self { addr, log, task })
    }

    /// `socks5://127.0.0.1:port`, or `socks5h://` when the proxy is to
    /// resolve names.
    pub fn url(&self, remote_names: bool) -> String {
        let scheme = if remote_names { "socks5h" } else { "socks5" };
        format!("{scheme}://{}", self.addr)
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

/// One client: greeting, request, then bytes both ways.
async fn relay(mut client: TcpStream, log: &Mutex<Vec<String>>) -> std::io::Result<()> {
    let mut head = [0u8; 2];
    client.read_exact(&mut head).await?;
    let mut methods = vec![0u8; usize::from(head[1])];
    client.read_exact(&mut methods).await?;
    if head[0] != 5 || !methods.contains(&0) {
        // No acceptable method.
        return client.write_all(&[5, 0xff]).await;
    }
    client.write_all(&[5, 0]).await?;
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
