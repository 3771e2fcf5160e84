//! A real forward proxy for tests: Debian's `tinyproxy`, on a free port
//! of 127.0.0.1, logging every request it forwards; stopped when dropped.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long tinyproxy may take to listen.
const START_DEADLINE: Duration = Duration::from_secs(20);

/// A running tinyproxy.
pub struct Tinyproxy {
    child: Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
    log: PathBuf,
}

impl Tinyproxy {
    /// Starts one; with `auth`, it asks for those Basic credentials.
    pub fn start(dir: &std::path::Path, auth: Option<(&str, &str)>) -> Self {
        let deadline = Instant::now() + START_DEADLINE;
        loop {
            // A free port, given back to the proxy (another process could
            // take it meanwhile: then the proxy fails and we try again).
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let log = dir.join(format!("tinyproxy-{port}.log"));
            let conf = dir.join(format!("tinyproxy-{port}.conf"));
            let mut text = format!(
                "Port {port}\nListen 127.0.0.1\nTimeout 30\nMaxClients 50\n\
                 Allow 127.0.0.0/8\nLogFile \"{}\"\nLogLevel Info\nDisableViaHeader Yes\n",
                log.display()
            );
            if let Some((user, password)) = auth {
                text.push_str(&format!("BasicAuth {user} {password}\n"));
            }
            std::fs::write(&conf, text).unwrap();
            let child = Command::new("tinyproxy")
                .args(["-d", "-c"])
                .arg(&conf)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("tinyproxy runs (scripts/test.sh installs Debian's package)");
            let mut proxy = Self { child, port, log };
            while Instant::now() < deadline {
                if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    return proxy;
                }
                if proxy.child.try_wait().unwrap().is_some() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            assert!(Instant::now() < deadline, "tinyproxy did not start");
            let _ = proxy.child.kill();
        }
    }

    /// `http://[user:password@]127.0.0.1:port`.
    pub fn url(&self, auth: Option<(&str, &str)>) -> String {
        match auth {
            Some((u, p)) => format!("http://{u}:{p}@127.0.0.1:{}", self.port),
            None => format!("http://127.0.0.1:{}", self.port),
        }
    }

    /// The request lines it logged (`GET http://… HTTP/1.1`, `CONNECT …`).
    pub fn requests(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.split_once("): ").map(|(_, r)| r.to_owned()))
            .filter(|r| r.starts_with("GET ") || r.starts_with("CONNECT "))
            .collect()
    }

    /// The addresses of the clients that connected, in order (a node
    /// sending from an address of its own is known by it).
    pub fn clients(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.split_once("Connect (file descriptor "))
            .filter_map(|(_, rest)| rest.split_once("): "))
            .map(|(_, addr)| addr.trim().to_owned())
            .collect()
    }

    /// Stops it at once (a proxy that dies).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Tinyproxy {
    fn drop(&mut self) {
        self.kill();
    }
}
