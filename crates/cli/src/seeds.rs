//! Seeds from the command line: URLs, files of URLs, or standard input.

use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use url::Url;

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
        } else if arg.contains("://") {
            seeds.push(
                parse_seed(arg).map_err(|why| SeedError(format!("bad seed URL '{arg}': {why}")))?,
            );
        } else {
            let path = Path::new(arg);
            let file = std::fs::File::open(path).map_err(|e| {
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

/// One URL per line; blank lines and `#` comments are skipped. Every bad
/// line is counted; the first is named.
fn read_list(name: &str, input: impl BufRead, seeds: &mut Vec<Url>) -> Result<(), SeedError> {
    let mut first_bad: Option<String> = None;
    let mut bad = 0usize;
    for (i, line) in input.lines().enumerate() {
        let line = line.map_err(|e| SeedError(format!("cannot read seed file '{name}': {e}")))?;
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        match parse_seed(line) {
            Ok(url) => seeds.push(url),
            Err(why) => {
                bad += 1;
                first_bad.get_or_insert_with(|| format!("line {}: '{line}': {why}", i + 1));
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

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
}
