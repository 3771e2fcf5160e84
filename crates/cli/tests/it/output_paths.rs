//! What an output path may be: the program removes, renames over or cuts
//! only regular files of its own. A pipe or a device is written as a
//! stream where the format allows it (JSON Lines), and refused where it
//! cannot be (WARC is cut on resume, a CDXJ index is renamed into place);
//! a symbolic link is never replaced nor written through, except to a
//! stream (`/dev/stdout`). Every path an output writes, the `--cdx`
//! indexes included, spares the state file, the seeds and `--out`. Each
//! test failed before its fix.

use crate::common;

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crawlkeeper_testsite::{SiteConfig, TestSite};

use common::*;

fn dir(name: &str) -> PathBuf {
    fresh_dir("paths", name)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Runs the binary in `dir`, killed if it has not ended in a minute (an
/// open on a pipe no one reads must not hang the test).
async fn bounded(dir: &Path, args: &[&str]) -> Run {
    let child = command_in(dir, args)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("{args:?} did not end in a minute"))
        .unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

fn symlink(target: &Path, link: &Path) {
    std::os::unix::fs::symlink(target, link).unwrap();
}

/// The read end of the pipe at `path`, opened without waiting for a
/// writer: a writer's open then never blocks, and what it wrote stays in
/// the pipe until read.
fn reader(path: &Path) -> std::fs::File {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .unwrap()
}

/// What is left in the pipe of `r` (its writers gone).
fn drain(mut r: std::fs::File) -> String {
    use std::io::Read;
    let mut out = String::new();
    r.read_to_string(&mut out).unwrap();
    out
}

fn assert_refused(r: &Run, mentions: &str) {
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_eq!(r.stderr.trim().lines().count(), 1, "one line: {}", r.stderr);
    assert!(r.stderr.contains(mentions), "{mentions:?} in {}", r.stderr);
}

fn is_fifo(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_fifo())
}

fn is_link(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink())
}

/// `p`'s entries other than those in `but`.
fn others(d: &Path, but: &[&str]) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !but.contains(&n.as_str()))
        .collect();
    names.sort();
    names
}

/// The targets a WARC file or an index may not be: a pipe, links to a
/// pipe, to an empty file, to standard output and to nothing. Returns
/// their names (made in `d`) and checks them with [`untouched`].
fn hostile_targets(d: &Path, stem: &str, ext: &str) -> Vec<String> {
    let names: Vec<String> = ["fifo", "to-fifo", "to-empty", "to-stdout", "dangling"]
        .iter()
        .map(|k| format!("{stem}-{k}{ext}"))
        .collect();
    mkfifo(&d.join("the-fifo"));
    std::fs::write(d.join("empty"), "").unwrap();
    mkfifo(&d.join(&names[0]));
    symlink(&d.join("the-fifo"), &d.join(&names[1]));
    symlink(&d.join("empty"), &d.join(&names[2]));
    symlink(Path::new("/proc/self/fd/1"), &d.join(&names[3]));
    symlink(&d.join("nowhere"), &d.join(&names[4]));
    names
}

fn untouched(d: &Path, names: &[String]) {
    assert!(is_fifo(&d.join(&names[0])), "{} still a pipe", names[0]);
    for n in &names[1..] {
        assert!(is_link(&d.join(n)), "{n} still a link");
    }
    assert!(is_fifo(&d.join("the-fifo")));
    assert_eq!(std::fs::read(d.join("empty")).unwrap(), b"");
    assert!(!d.join("nowhere").exists(), "nothing made through a link");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warc_file_or_index_is_never_a_pipe_or_a_link() {
    let site = TestSite::start(SiteConfig::uniform(1, 3)).await.unwrap();
    let seed = site.url(0, "/");
    let d = dir("warc-targets");
    let names = hostile_targets(&d, "w", ".warc.gz");
    for name in &names {
        for state in [&["--no-state"][..], &["--state", "s.db"]] {
            let mut args = vec!["crawl", "--quiet", "--out", "o.jsonl", "--warc", name];
            args.extend(state);
            args.push(&seed);
            let r = bounded(&d, &args).await;
            assert_refused(&r, "not a regular file");
            untouched(&d, &names);
            assert!(!d.join("o.jsonl").exists(), "{args:?}: nothing written");
            assert!(!d.join("s.db").exists(), "{args:?}: no state file");
        }
    }
    // A rotation that is a link is refused too.
    symlink(&d.join("empty"), &d.join("r-00001.warc.gz"));
    let r = bounded(&d, &["crawl", "--no-state", "--warc", "r.warc.gz", &seed]).await;
    assert_refused(&r, "r-00001.warc.gz");
    assert!(!d.join("r.warc.gz").exists());
    // The same for the index of --cdx, before the crawl writes anything.
    let d = dir("cdx-targets");
    let names = hostile_targets(&d, "c", ".cdxj");
    for name in &names {
        let warc = name.replace(".cdxj", ".warc.gz");
        let args = [
            "crawl",
            "--quiet",
            "--no-state",
            "--warc",
            &warc,
            "--cdx",
            &seed,
        ];
        let r = bounded(&d, &args).await;
        assert_refused(&r, "not a regular file");
        untouched(&d, &names);
        assert!(!d.join(&warc).exists(), "{args:?}: nothing written");
    }
    // A later rotation's index, before its file exists.
    mkfifo(&d.join("f-00003.cdxj"));
    let args = ["crawl", "--no-state", "--warc", "f.warc.gz", "--cdx", &seed];
    let r = bounded(&d, &args).await;
    assert_refused(&r, "f-00003.cdxj");
    assert!(is_fifo(&d.join("f-00003.cdxj")) && !d.join("f.warc.gz").exists());
    // An index of something else is kept unless --overwrite.
    std::fs::write(d.join("n.cdxj"), "my notes\n").unwrap();
    let args = ["crawl", "--no-state", "--warc", "n.warc.gz", "--cdx", &seed];
    let r = bounded(&d, &args).await;
    assert_refused(&r, "--overwrite");
    assert_eq!(std::fs::read(d.join("n.cdxj")).unwrap(), b"my notes\n");
    let r = bounded(&d, &[&args[..], &["--overwrite"]].concat()).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let index = std::fs::read_to_string(d.join("n.cdxj")).unwrap();
    assert!(index.contains("\"filename\": \"n.warc.gz\""), "{index}");
    // Run again: the job's own index is replaced without --overwrite.
    let r = bounded(&d, &args).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_export_never_replaces_a_pipe_or_a_link_even_with_overwrite() {
    let site = TestSite::start(SiteConfig::uniform(1, 3)).await.unwrap();
    let seed = site.url(0, "/");
    let d = dir("export-targets");
    let r = bounded(
        &d,
        &[
            "crawl",
            "--quiet",
            "--store-bodies",
            "--out",
            "o.jsonl",
            &seed,
        ],
    )
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let names = hostile_targets(&d, "e", ".warc.gz");
    for name in &names {
        for extra in [&[][..], &["--cdx"]] {
            let mut args = vec!["results", "--format", "warc", "--out", name, "--overwrite"];
            args.extend(extra);
            let r = bounded(&d, &args).await;
            assert_refused(&r, "not a regular file");
            untouched(&d, &names);
        }
    }
    let d2 = dir("export-index");
    let names = hostile_targets(&d2, "i", ".cdxj");
    let state = d.join("crawlkeeper.db");
    for name in &names {
        let warc = d2.join(name.replace(".cdxj", ".warc.gz"));
        let args = [
            "results",
            "--state",
            s(&state),
            "--format",
            "warc",
            "--out",
            s(&warc),
            "--cdx",
        ];
        let r = bounded(&d2, &args).await;
        assert_refused(&r, "not a regular file");
        untouched(&d2, &names);
        assert!(!warc.exists(), "{args:?}: nothing written");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_lines_go_to_a_pipe_as_a_stream_and_never_through_a_link_to_a_file() {
    let site = TestSite::start(SiteConfig::uniform(1, 3)).await.unwrap();
    let seed = site.url(0, "/");
    let d = dir("jsonl-targets");
    mkfifo(&d.join("fifo"));
    symlink(&d.join("fifo"), &d.join("to-fifo"));
    for (out, state) in [
        ("fifo", &["--no-state"][..]),
        ("to-fifo", &["--no-state"]),
        ("fifo", &["--state", "s.db"]),
        ("to-fifo", &["--state", "s.db", "--fresh"]),
    ] {
        let pipe = reader(&d.join("fifo"));
        let mut args = vec!["crawl", "--quiet", "--out", out];
        args.extend(state);
        args.push(&seed);
        let r = bounded(&d, &args).await;
        assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
        assert_eq!(records(&drain(pipe)).len(), 1, "{args:?}");
        assert!(is_fifo(&d.join("fifo")) && is_link(&d.join("to-fifo")));
    }
    // results: the same stream.
    let pipe = reader(&d.join("fifo"));
    let r = bounded(&d, &["results", "--state", "s.db", "--out", "to-fifo"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(records(&drain(pipe)).len(), 1);
    // A link to a file is not written through (it would be cut), with
    // --overwrite or not, nor a link to nothing.
    std::fs::write(d.join("precious"), "keep\n").unwrap();
    symlink(&d.join("precious"), &d.join("to-file"));
    symlink(&d.join("nowhere"), &d.join("dangling"));
    for out in ["to-file", "dangling"] {
        for extra in [&[][..], &["--overwrite"]] {
            for cmd in [
                vec!["crawl", "--quiet", "--state", "s.db", "--out", out, &seed],
                vec!["crawl", "--quiet", "--no-state", "--out", out, &seed],
                vec!["results", "--state", "s.db", "--out", out],
                vec!["demo", "--out", out],
            ] {
                let args = [&cmd[..], extra].concat();
                let r = bounded(&d, &args).await;
                assert_refused(&r, "symbolic link");
                assert_eq!(std::fs::read(d.join("precious")).unwrap(), b"keep\n");
                assert!(is_link(&d.join(out)));
                assert!(!d.join("nowhere").exists(), "{args:?}");
            }
        }
    }
    let left: Vec<String> = others(&d, &["fifo", "to-fifo", "to-file", "dangling", "precious"])
        .into_iter()
        .filter(|n| !n.starts_with("s.db"))
        .collect();
    assert!(left.is_empty(), "nothing else written: {left:?}");
    // `--out /dev/stdout >> file`: the process's own descriptor, whatever it
    // leads to, is written as a stream after what the file holds (never
    // reopened at its start, cut or refused as a link to a file).
    let appended = d.join("appended.jsonl");
    std::fs::write(&appended, "before\n").unwrap();
    let stdout = std::fs::OpenOptions::new()
        .append(true)
        .open(&appended)
        .unwrap();
    let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_crawlkeeper"))
        .current_dir(&d)
        .args([
            "crawl",
            "--quiet",
            "--no-state",
            "--out",
            "/dev/stdout",
            &seed,
        ])
        .stdin(std::process::Stdio::null())
        .stdout(stdout)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary runs")
        .wait_with_output();
    let out = tokio::time::timeout(std::time::Duration::from_secs(120), run)
        .await
        .expect("the crawl ends in time")
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&appended).unwrap();
    let rest = text
        .strip_prefix("before\n")
        .unwrap_or_else(|| panic!("{text}"));
    assert_eq!(records(rest).len(), 1, "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_index_that_is_the_state_out_or_a_seed_file_is_refused_untouched() {
    let site = TestSite::start(SiteConfig::uniform(1, 3)).await.unwrap();
    let seed = site.url(0, "/");
    let d = dir("index-protected");
    // A job in a state file named like an index, with its --out.
    let r = bounded(
        &d,
        &[
            "crawl",
            "--quiet",
            "--state",
            "st.cdxj",
            "--store-bodies",
            "--out",
            "o.cdxj",
            &seed,
        ],
    )
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    std::fs::write(d.join("seeds.cdxj"), format!("{seed}\n")).unwrap();
    std::fs::copy(d.join("st.cdxj"), d.join("st-00002.cdxj")).unwrap();
    let before: Vec<(String, Vec<u8>)> = others(&d, &[])
        .into_iter()
        .map(|n| {
            let bytes = std::fs::read(d.join(&n)).unwrap();
            (n, bytes)
        })
        .collect();
    let cases: [(&[&str], &str); 6] = [
        // The state file is the first file's index.
        (
            &[
                "crawl",
                "--state",
                "st.cdxj",
                "--out",
                "o.cdxj",
                "--warc",
                "st.warc.gz",
                "--cdx",
            ],
            "the state file",
        ),
        // A later rotation's index (by name, before it exists).
        (
            &[
                "crawl",
                "--state",
                "st-00002.cdxj",
                "--warc",
                "st.warc.gz",
                "--cdx",
            ],
            "the state file",
        ),
        // The --out file.
        (
            &[
                "crawl",
                "--state",
                "st.cdxj",
                "--out",
                "o.cdxj",
                "--warc",
                "o.warc.gz",
                "--cdx",
            ],
            "the --out file",
        ),
        (
            &[
                "crawl",
                "--no-state",
                "--out",
                "o.cdxj",
                "--warc",
                "./o.warc.gz",
                "--cdx",
            ],
            "the --out file",
        ),
        // A seed file.
        (
            &[
                "crawl",
                "--state",
                "new.db",
                "--warc",
                "seeds.warc.gz",
                "--cdx",
                "seeds.cdxj",
            ],
            "a seed file",
        ),
        // An export's index.
        (
            &[
                "results",
                "--state",
                "st.cdxj",
                "--format",
                "warc",
                "--out",
                "st.warc.gz",
                "--cdx",
            ],
            "the state file",
        ),
    ];
    for (args, what) in cases {
        let mut args = args.to_vec();
        if args[0] == "crawl" && args.last() == Some(&"--cdx") {
            args.push(&seed);
        }
        let r = bounded(&d, &args).await;
        assert_refused(&r, what);
        let now: Vec<(String, Vec<u8>)> = others(&d, &[])
            .into_iter()
            .map(|n| {
                let bytes = std::fs::read(d.join(&n)).unwrap();
                (n, bytes)
            })
            .collect();
        assert_eq!(now, before, "{args:?} changed a file");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_file_that_is_a_link_is_refused_and_its_target_kept() {
    let site = TestSite::start(SiteConfig::uniform(1, 3)).await.unwrap();
    let seed = site.url(0, "/");
    let d = dir("lock-link");
    let r = bounded(&d, &["crawl", "--quiet", "--out", "a.jsonl", &seed]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let jobs = bounded(&d, &["jobs"]).await;
    let job = jobs
        .stdout
        .lines()
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .to_owned();
    std::fs::write(d.join("precious"), "keep").unwrap();
    let lock = d.join(format!("crawlkeeper.db.{job}.lock"));
    symlink(&d.join("precious"), &lock);
    let r = bounded(
        &d,
        &["crawl", "--quiet", "--fresh", "--out", "a.jsonl", &seed],
    )
    .await;
    assert_refused(&r, "lock file");
    assert_eq!(std::fs::read(d.join("precious")).unwrap(), b"keep");
    assert!(is_link(&lock));
}
