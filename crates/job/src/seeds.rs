//! Seeds from the command line: URLs, files of URLs, or standard input.

use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use url::Url;

/// The longest line of a seed file: twice the longest URL the crawler
/// follows, with room for blanks around it. A longer line is an error, so
/// reading stops (`/dev/zero` is not read forever).
pub const MAX_LINE: usize = 4096;
/// The most characters of a bad input shown in a message.
const SHOWN: usize = 200;

/// A seed that cannot be used; the message is one line.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{0}")]
pub struct SeedError(pub String);

/// Reads every seed argument; `stdin` is used for `-`.
pub fn read_seeds(args: &[String], stdin: impl Read) -> Result<Vec<Url>, SeedError> {
    let mut stdin = Some(stdin);
    let mut seeds = Vec::new();
    for arg in args {
        if arg == "-" {
            let input = stdin
                .take()
                .ok_or_else(|| SeedError("'-' (standard input) given twice".into()))?;
            read_list("standard input", BufReader::new(input), &mut seeds)?;
        } else if is_url(arg) {
            seeds.push(
                parse_seed(arg)
                    .map_err(|why| SeedError(format!("bad seed URL '{}': {why}", shown(arg))))?,
            );
        } else {
            let path = Path::new(arg);
            let file = std::fs::File::open(path).map_err(|e| {
                let arg = shown(arg);
                SeedError(format!(
                    "cannot read seed file '{arg}': {e} (a URL needs a scheme, like https://{arg})"
                ))
            })?;
            read_list(arg, BufReader::new(file), &mut seeds)?;
        }
    }
    if seeds.is_empty() {
        return Err(SeedError("no seed URLs given".into()));
    }
    Ok(seeds)
}

/// The seed arguments that name files (not URLs, not `-`).
pub fn seed_files(args: &[String]) -> impl Iterator<Item = &Path> {
    args.iter()
        .filter(|a| *a != "-" && !is_url(a))
        .map(Path::new)
}

fn is_url(arg: &str) -> bool {
    arg.contains("://")
}

/// At most [`SHOWN`] characters of `s`, control characters escaped, so a
/// message never carries terminal escapes or a megabyte of input.
pub fn shown(s: &str) -> String {
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i == SHOWN {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// Reads one line into `buf` (without its newline), at most [`MAX_LINE`]
/// bytes; false at the end of the input. A longer line is an error.
fn read_line(input: &mut impl BufRead, buf: &mut Vec<u8>) -> io::Result<bool> {
    buf.clear();
    loop {
        let available = input.fill_buf()?;
        if available.is_empty() {
            return Ok(!buf.is_empty());
        }
        let (take, done) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (i, true),
            None => (available.len(), false),
        };
        if buf.len() + take > MAX_LINE {
            let room = MAX_LINE - buf.len();
            buf.extend_from_slice(&available[..room]);
            return Err(io::Error::new(io::ErrorKind::InvalidData, "line too long"));
        }
        buf.extend_from_slice(&available[..take]);
        input.consume(take + usize::from(done));
        if done {
            return Ok(true);
        }
    }
}

/// One URL per line; blank lines and `#` comments are skipped. Every bad
/// line is counted; the first is named. A line longer than [`MAX_LINE`]
/// ends the reading with an error.
fn read_list(name: &str, mut input: impl BufRead, seeds: &mut Vec<Url>) -> Result<(), SeedError> {
    let name = shown(name);
    let mut first_bad: Option<String> = None;
    let mut bad = 0usize;
    let mut buf = Vec::new();
    for i in 0.. {
        match read_line(&mut input, &mut buf) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                return Err(SeedError(format!(
                    "seed file '{name}' line {} is longer than {MAX_LINE} bytes: '{}'",
                    i + 1,
                    shown(&String::from_utf8_lossy(&buf))
                )));
            }
            Err(e) => return Err(SeedError(format!("cannot read seed file '{name}': {e}"))),
        }
        let line = String::from_utf8_lossy(&buf);
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        match parse_seed(line) {
            Ok(url) => seeds.push(url),
            Err(why) => {
                bad += 1;
                first_bad
                    .get_or_insert_with(|| format!("line {}: '{}': {why}", i + 1, shown(line)));
            }
        }
    }
    match first_bad {
        None => Ok(()),
        Some(first) => Err(SeedError(format!(
            "seed file '{name}' has {bad} bad line(s); first at {first}"
        ))),
    }
}

fn parse_seed(s: &str) -> Result<Url, String> {
    let url = Url::parse(s).map_err(|e| e.to_string())?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("scheme '{}' is not http or https", url.scheme()));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err("no host".into());
    }
    Ok(url)
}

/// Standard input, for `-`.
pub fn stdin() -> impl Read {
    io::stdin()
}

/// Takes the users and passwords out of the seed URLs
/// (`http://user:pw@host/`) into `config`: the URLs are stored and shown
/// without them (records, status, a cluster's task nodes), and each is
/// sent as basic authentication to its own host only
/// ([`crawlkeeper_fetch::credentials`]).
pub fn take_credentials(
    seeds: &mut [Url],
    config: &mut crawlkeeper_crawl::CrawlConfig,
) -> Result<(), SeedError> {
    let taken = crawlkeeper_fetch::credentials::take_from_seeds(seeds)
        .map_err(|e| SeedError(e.to_string()))?;
    config.fetch.site_credentials = taken;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn credentials_leave_the_seeds_for_the_config() {
        let mut seeds = read_seeds(&["http://u:S3cret@127.0.0.1:9/a".into()], io::empty()).unwrap();
        let mut config = crawlkeeper_crawl::CrawlConfig::default();
        take_credentials(&mut seeds, &mut config).unwrap();
        assert_eq!(seeds[0].as_str(), "http://127.0.0.1:9/a");
        let c = &config.fetch.site_credentials;
        assert_eq!(
            (c[0].host.as_str(), c[0].password.as_deref()),
            ("127.0.0.1", Some("S3cret"))
        );
        let mut two = read_seeds(
            &["http://u:1@h.test/".into(), "http://u:2@h.test/".into()],
            io::empty(),
        )
        .unwrap();
        let e = take_credentials(&mut two, &mut config).unwrap_err();
        assert!(e.0.contains("h.test") && !e.0.contains('2'), "{e}");
    }

    #[test]
    fn urls_files_and_stdin() {
        let dir = std::env::temp_dir().join(format!("ck-seeds-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("urls.txt");
        let mut f = std::fs::File::create(&file).unwrap();
        writeln!(f, "# comment\n\nhttp://a.test/1\n  https://b.test/2  ").unwrap();
        let args = vec![
            "http://c.test/".to_owned(),
            file.to_string_lossy().into_owned(),
            "-".to_owned(),
        ];
        let seeds = read_seeds(&args, "http://d.test/\n".as_bytes()).unwrap();
        let seeds: Vec<&str> = seeds.iter().map(Url::as_str).collect();
        assert_eq!(
            seeds,
            [
                "http://c.test/",
                "http://a.test/1",
                "https://b.test/2",
                "http://d.test/"
            ]
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn clear_errors() {
        let err = read_seeds(&["example.org".into()], io::empty()).unwrap_err();
        assert!(
            err.0.starts_with("cannot read seed file 'example.org'"),
            "{err}"
        );
        assert!(err.0.contains("https://example.org"), "{err}");
        let err = read_seeds(&["ftp://a.test/".into()], io::empty()).unwrap_err();
        assert_eq!(
            err.0,
            "bad seed URL 'ftp://a.test/': scheme 'ftp' is not http or https"
        );
        let err = read_seeds(&["http://[x/".into()], io::empty()).unwrap_err();
        assert!(err.0.starts_with("bad seed URL"), "{err}");
        let err = read_seeds(
            &["-".into()],
            "http://ok.test/\nnot a url\nalso bad\n".as_bytes(),
        )
        .unwrap_err();
        assert_eq!(
            err.0,
            "seed file 'standard input' has 2 bad line(s); first at line 2: 'not a url': relative URL without a base"
        );
        let err = read_seeds(&["-".into()], "# only comments\n".as_bytes()).unwrap_err();
        assert_eq!(err.0, "no seed URLs given");
    }

    #[test]
    fn long_lines_and_control_characters_are_cut_and_escaped() {
        let mut input = String::from("http://ok.test/\nhttp://a.test/\x1b[31m\x07");
        input.push_str(&"x".repeat(5_000_000));
        let err = read_seeds(&["-".into()], input.as_bytes()).unwrap_err();
        assert!(
            err.0
                .starts_with("seed file 'standard input' line 2 is longer than 4096 bytes"),
            "{err}"
        );
        assert!(err.0.len() < 400, "{} bytes said", err.0.len());
        assert!(!err.0.contains('\x1b') && !err.0.contains('\x07'), "{err}");
        assert!(err.0.contains("\\u{1b}[31m\\u{7}"), "{err}");
        let err = read_seeds(&["-".into()], "bad\x1b]0;title\x07\n".as_bytes()).unwrap_err();
        assert!(!err.0.contains('\x1b'), "{err}");
        let err = read_seeds(&["http://[\x1b".into()], io::empty()).unwrap_err();
        assert!(!err.0.contains('\x1b'), "{err}");
    }

    #[test]
    fn an_endless_line_is_not_read_forever() {
        let err = read_seeds(&["-".into()], io::repeat(0)).unwrap_err();
        assert!(err.0.contains("longer than 4096 bytes"), "{err}");
    }
}
