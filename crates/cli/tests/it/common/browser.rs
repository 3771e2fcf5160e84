//! Debian's `chromium`, headless, on loopback only: every name but
//! 127.0.0.1 resolves to nothing and every other request goes to a dead
//! proxy on loopback, and Chromium's own background traffic is off, so
//! no packet leaves the machine whatever the page does.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::process::Command;

fn chromium(profile: &Path) -> Command {
    let mut c = Command::new("chromium");
    c.args([
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-default-apps",
        "--disable-domain-reliability",
        "--disable-client-side-phishing-detection",
        "--proxy-server=127.0.0.1:9",
        "--proxy-bypass-list=127.0.0.1",
        "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
        "--virtual-time-budget=3000",
        "--window-size=1280,1000",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .stdin(std::process::Stdio::null());
    c
}

async fn output(mut c: Command) -> std::process::Output {
    tokio::time::timeout(Duration::from_secs(60), c.output())
        .await
        .expect("chromium ends in time")
        .expect("chromium runs (scripts/test.sh installs Debian's chromium)")
}

/// The DOM of `url` once its scripts ran for a while.
pub async fn dom(profile: &Path, url: &str) -> String {
    let mut c = chromium(profile);
    c.args(["--dump-dom", url]);
    let out = output(c).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A screenshot of `url`, kept as a test artefact under
/// `target/test-artifacts/NAME.png`; its path.
pub async fn screenshot(profile: &Path, url: &str, name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("test-artifacts");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.png"));
    let mut c = chromium(profile);
    c.arg(format!("--screenshot={}", path.display())).arg(url);
    let out = output(c).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        std::fs::metadata(&path).is_ok_and(|m| m.len() > 10_000),
        "a screenshot"
    );
    path
}

/// The number in the card titled `title` of a status page's DOM.
pub fn card(dom: &str, title: &str) -> Option<u64> {
    let at = dom.find(&format!("<div class=\"k\">{title}</div>"))?;
    let rest = &dom[at..];
    let v = rest.find("<div class=\"v\">")? + "<div class=\"v\">".len();
    let digits: String = rest[v..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// The text of the role cell in `member`'s row of a node's status page
/// (what a person reads there), if the row is on the page.
pub fn role_of(dom: &str, member: &str) -> Option<String> {
    let row = format!("<td>{member}</td><td class=\"role-");
    let at = dom.find(&row)? + row.len();
    let rest = &dom[at..];
    let text = rest.find('>')? + 1;
    let end = rest[text..].find("</td>")?;
    Some(rest[text..text + end].to_owned())
}
