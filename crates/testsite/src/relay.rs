//! A TCP relay in front of a server, for one client: cutting it is what
//! the client's crash (or a partition) looks like to the server. The
//! ZooKeeper tests put one in front of each session they may kill, so a
//! killed session ends the way a crashed process's does: the server hears
//! nothing more and expires it after its timeout.

use std::io;
use std::net::SocketAddr;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// A relay from a loopback port to `target`.
pub struct Relay {
    address: SocketAddr,
    cut: watch::Sender<bool>,
    accept: JoinHandle<()>,
}

impl Relay {
    /// Listens on a free loopback port and relays each connection to
    /// `target` (`host:port`).
    pub async fn start(target: &str) -> io::Result<Relay> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let address = listener.local_addr()?;
        let (cut, cut_rx) = watch::channel(false);
        let target = target.to_owned();
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                if *cut_rx.borrow() {
                    continue; // cut: refused (dropped at once)
                }
                let target = target.clone();
                let mut cut_rx = cut_rx.clone();
                tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(&target).await else {
                        return;
                    };
                    let (mut client, mut server) = (client, server);
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                        _ = cut_rx.wait_for(|cut| *cut) => {}
                    }
                });
            }
        });
        Ok(Relay {
            address,
            cut,
            accept,
        })
    }

    /// `127.0.0.1:port`.
    pub fn address(&self) -> String {
        self.address.to_string()
    }

    /// Drops every connection and refuses new ones, for good.
    pub fn cut(&self) {
        self.cut.send_replace(true);
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.cut();
        self.accept.abort();
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    #[tokio::test]
    async fn relays_until_cut_then_refuses() {
        let echo = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let target = echo.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = echo.accept().await {
                tokio::spawn(async move {
                    let mut buf = [0u8; 16];
                    while let Ok(n) = s.read(&mut buf).await {
                        if n == 0 || s.write_all(&buf[..n]).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        let relay = Relay::start(&target).await.unwrap();
        let mut c = TcpStream::connect(relay.address()).await.unwrap();
        c.write_all(b"ping").await.unwrap();
        let mut buf = [0u8; 4];
        c.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"ping");
        relay.cut();
        assert_eq!(c.read(&mut buf).await.unwrap_or(0), 0, "cut: closed");
        let mut again = TcpStream::connect(relay.address()).await.unwrap();
        assert_eq!(again.read(&mut buf).await.unwrap_or(0), 0, "refused");
    }
}
