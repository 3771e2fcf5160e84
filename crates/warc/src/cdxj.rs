//! CDXJ indexes, as pywb reads them and `cdxj-indexer` writes them: one
//! line per `response` and `revisit` record, `<SURT key> <14-digit
//! timestamp> <JSON>` with the URL, MIME type, status, payload digest,
//! the record's length and offset in its file (compressed, when it is)
//! and the file's name; lines sorted, so a reader can search them.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use crate::scan::{ScanError, ScannedRecord, scan_each};
use crate::target::{Target, create_new, not_regular, open_regular, what_is};

/// Bytes of a record's block read for its HTTP head.
const HEAD: usize = 16 * 1024;

/// The SURT form of `url` (Sort-friendly URI Reordering Transform, as the
/// Internet Archive's canonicalizer writes it): lower case, no scheme,
/// host labels reversed and joined by commas (a leading `www.` dropped),
/// a port other than the scheme's default kept, `)` then the path (a
/// trailing slash dropped unless the path is `/`), and the query's
/// parameters sorted.
pub fn surt(url: &str) -> String {
    let lower = url.to_ascii_lowercase();
    let (scheme, rest) = lower.split_once("://").unwrap_or(("http", lower.as_str()));
    let rest = rest.split('#').next().unwrap_or("");
    let cut = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(cut);
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.is_empty() && p.chars().all(|c| c.is_ascii_digit()) => (h, Some(p)),
        _ => (authority, None),
    };
    let host = host.trim_end_matches('.');
    let host = strip_www(host);
    let mut out: String = host.split('.').rev().collect::<Vec<_>>().join(",");
    let default = match scheme {
        "https" => "443",
        _ => "80",
    };
    if let Some(p) = port.filter(|p| *p != default) {
        let _ = write!(out, ":{p}");
    }
    out.push(')');
    let (path, query) = match tail.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (tail, None),
    };
    // A trailing slash goes, as surt's `stripTrailingSlashUnlessEmpty`
    // drops it: pywb looks `/dir/` up as `)/dir`.
    let path = match path.strip_suffix('/') {
        Some("") | None if path.len() <= 1 => "/",
        Some(p) => p,
        None => path,
    };
    out.push_str(path);
    if let Some(q) = query.filter(|q| !q.is_empty()) {
        let mut params: Vec<&str> = q.split('&').collect();
        params.sort_unstable();
        out.push('?');
        out.push_str(&params.join("&"));
    }
    out
}

fn strip_www(host: &str) -> &str {
    let Some(rest) = host.strip_prefix("www") else {
        return host;
    };
    let digits = rest.trim_start_matches(|c: char| c.is_ascii_digit());
    match digits.strip_prefix('.') {
        Some(h) if !h.is_empty() => h,
        _ => host,
    }
}

/// The index line of a record, or `None` for a record no replay looks up.
pub fn line(r: &ScannedRecord, filename: &str) -> Option<String> {
    if r.kind != "response" && r.kind != "revisit" {
        return None;
    }
    let url = r.target_uri.as_deref()?;
    let stamp: String = r
        .date
        .chars()
        .filter(char::is_ascii_digit)
        .take(14)
        .collect();
    if stamp.len() != 14 {
        return None;
    }
    let head = http_head(&r.block);
    let status = head
        .lines()
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .filter(|s| s.len() == 3 && s.chars().all(|c| c.is_ascii_digit()));
    let mime = if r.kind == "revisit" {
        Some("warc/revisit".to_owned())
    } else {
        head.lines().skip(1).find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.trim().eq_ignore_ascii_case("content-type").then(|| {
                value
                    .split(';')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_ascii_lowercase()
            })
        })
    };
    let mut fields: Vec<(&str, String)> = vec![("url", url.to_owned())];
    if let Some(m) = mime.filter(|m| !m.is_empty()) {
        fields.push(("mime", m));
    }
    if let Some(s) = status {
        fields.push(("status", s.to_owned()));
    }
    if let Some(d) = r.get("WARC-Payload-Digest") {
        fields.push(("digest", d.to_owned()));
    }
    fields.push(("length", r.length.to_string()));
    fields.push(("offset", r.offset.to_string()));
    fields.push(("filename", filename.to_owned()));
    let json = fields
        .iter()
        .map(|(k, v)| format!("\"{k}\": {}", json_string(v)))
        .collect::<Vec<_>>()
        .join(", ");
    Some(format!("{} {stamp} {{{json}}}", surt(url)))
}

/// A JSON string with non-ASCII escaped, as Python's `json.dumps` writes it.
fn json_string(v: &str) -> String {
    let mut out = String::with_capacity(v.len() + 2);
    out.push('"');
    for c in v.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_ascii() && !c.is_ascii_control() => out.push(c),
            c => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{u:04x}");
                }
            }
        }
    }
    out.push('"');
    out
}

/// The HTTP head at the start of a block, as text.
fn http_head(block: &[u8]) -> String {
    let end = block
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or(block.len());
    String::from_utf8_lossy(&block[..end]).into_owned()
}

/// Bytes of index lines sorted in memory at a time; past that, sorted
/// runs go to files beside the index and are merged.
const RUN_BYTES: usize = 64 << 20;

/// Writes the sorted index of the WARC file at `warc` to `index` (through
/// a new temporary file renamed over it, so a reader never sees half of
/// one). The file is read one record at a time, and at most 64 MiB of
/// lines are held: more are sorted in runs on disk and merged. `index`
/// must be missing or a regular file: a link, a pipe or a device is
/// refused, not replaced. Returns how many lines it has.
pub fn write_index(warc: &Path, index: &Path) -> Result<usize, ScanError> {
    write_index_with(warc, index, RUN_BYTES)
}

/// [`write_index`] sorting at most `run_bytes` of lines in memory.
fn write_index_with(warc: &Path, index: &Path, run_bytes: usize) -> Result<usize, ScanError> {
    let io_err = |source| ScanError::Io {
        path: index.display().to_string(),
        source,
    };
    let what = what_is(index).map_err(io_err)?;
    if !matches!(what, Target::Missing | Target::Regular) {
        return Err(io_err(not_regular(index, what)));
    }
    let name = warc
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut runs = Runs::new(index);
    let mut lines: Vec<String> = Vec::new();
    let mut held = 0usize;
    let mut failed = None;
    let mut count = 0usize;
    scan_each(warc, HEAD, |r| {
        if failed.is_some() {
            return;
        }
        let Some(l) = line(&r, &name) else { return };
        count += 1;
        held += l.len() + std::mem::size_of::<String>();
        lines.push(l);
        if held >= run_bytes {
            if let Err(e) = runs.spill(&mut lines) {
                failed = Some(e);
            }
            held = 0;
        }
    })?;
    if let Some(e) = failed {
        return Err(io_err(e));
    }
    lines.sort_unstable();
    let (tmp, file) = temporary(index, "tmp").map_err(io_err)?;
    let result = (|| {
        let mut out = std::io::BufWriter::new(file);
        runs.merge(lines, &mut out)?;
        let file = out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        // Checked again just before: a link or pipe put there meanwhile
        // is not replaced.
        let what = what_is(index)?;
        if !matches!(what, Target::Missing | Target::Regular) {
            return Err(not_regular(index, what));
        }
        std::fs::rename(&tmp, index)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(io_err)?;
    Ok(count)
}

/// A new file beside `path`, named after it with `kind` and a number no
/// file has (never opened over anything, a link included).
fn temporary(path: &Path, kind: &str) -> std::io::Result<(PathBuf, File)> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut n = 0u32;
    loop {
        let p = path.with_file_name(format!(".{name}.{}.{n}.{kind}", std::process::id()));
        match create_new(&p) {
            Ok(f) => return Ok((p, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 1000 => n += 1,
            Err(e) => return Err(e),
        }
    }
}

/// Sorted runs of index lines written to files beside the index, removed
/// when dropped.
struct Runs<'a> {
    index: &'a Path,
    files: Vec<PathBuf>,
}

impl<'a> Runs<'a> {
    fn new(index: &'a Path) -> Self {
        Self {
            index,
            files: Vec::new(),
        }
    }

    /// Sorts `lines` into a run of its own on disk, and empties it.
    fn spill(&mut self, lines: &mut Vec<String>) -> std::io::Result<()> {
        lines.sort_unstable();
        let (path, file) = temporary(self.index, "run")?;
        self.files.push(path);
        let mut out = std::io::BufWriter::new(file);
        for l in lines.drain(..) {
            writeln!(out, "{l}")?;
        }
        out.flush()?;
        lines.shrink_to(0);
        Ok(())
    }

    /// Writes every run's lines and `last` (sorted) to `out`, in order.
    fn merge(&mut self, last: Vec<String>, out: &mut impl Write) -> std::io::Result<()> {
        let mut readers: Vec<Box<dyn Iterator<Item = std::io::Result<String>>>> = Vec::new();
        for p in &self.files {
            let file = File::open(p)?;
            readers.push(Box::new(BufReader::with_capacity(64 * 1024, file).lines()));
        }
        readers.push(Box::new(last.into_iter().map(Ok)));
        let mut heap = BinaryHeap::new();
        for (i, r) in readers.iter_mut().enumerate() {
            if let Some(l) = r.next() {
                heap.push(Reverse((l?, i)));
            }
        }
        while let Some(Reverse((l, i))) = heap.pop() {
            writeln!(out, "{l}")?;
            if let Some(next) = readers[i].next() {
                heap.push(Reverse((next?, i)));
            }
        }
        Ok(())
    }
}

impl Drop for Runs<'_> {
    fn drop(&mut self) {
        for p in &self.files {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// True when the file at `index` is empty or its first line is a CDXJ
/// line of the WARC file named `warc_name`: an index this program (or
/// `cdxj-indexer`) wrote of that file, which may be replaced.
pub fn indexes(index: &Path, warc_name: &str) -> std::io::Result<bool> {
    let file = open_regular(index, std::fs::OpenOptions::new().read(true))?;
    let mut first = Vec::new();
    BufReader::new(file.take(1 << 20)).read_until(b'\n', &mut first)?;
    if first.is_empty() {
        return Ok(true);
    }
    let first = String::from_utf8_lossy(&first);
    let tail = format!("\"filename\": {}}}", json_string(warc_name));
    Ok(first.trim_end().ends_with(&tail))
}

/// Where the index of the WARC file `warc` goes: beside it, its name with
/// `.warc.gz` or `.warc` replaced by `.cdxj`.
pub fn index_path(warc: &Path) -> PathBuf {
    let name = warc
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name
        .strip_suffix(".warc.gz")
        .or_else(|| name.strip_suffix(".warc"))
        .unwrap_or(&name);
    warc.with_file_name(format!("{stem}.cdxj"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn surt_keys_as_the_archive_writes_them() {
        assert_eq!(surt("http://127.0.0.1:8080/p/1"), "1,0,0,127:8080)/p/1");
        assert_eq!(
            surt("https://www.Example.com/A?b=2&a=1"),
            "com,example)/a?a=1&b=2"
        );
        assert_eq!(surt("http://example.com:80/"), "com,example)/");
        assert_eq!(surt("https://example.com:443"), "com,example)/");
        assert_eq!(surt("http://www2.example.org/x#frag"), "org,example)/x");
        assert_eq!(surt("http://wwwx.example.org/"), "org,example,wwwx)/");
        assert_eq!(surt("http://user@host.test:81/"), "test,host:81)/");
        assert_eq!(surt("http://a.test/req/"), "test,a)/req");
        assert_eq!(surt("http://a.test/req/x.png"), "test,a)/req/x.png");
        assert_eq!(surt("http://a.test/req/?b=1"), "test,a)/req?b=1");
    }

    #[test]
    fn json_like_python() {
        assert_eq!(json_string("a\"b\\c"), "\"a\\\"b\\\\c\"");
        assert_eq!(json_string("é😀"), "\"\\u00e9\\ud83d\\ude00\"");
    }

    #[test]
    fn index_files_sit_beside_their_warc() {
        assert_eq!(
            index_path(Path::new("/x/crawl-00001.warc.gz")),
            Path::new("/x/crawl-00001.cdxj")
        );
        assert_eq!(index_path(Path::new("c.warc")), Path::new("c.cdxj"));
    }

    fn warc_of_pages(dir: &Path, n: usize) -> PathBuf {
        use crate::record::{Record, RecordType};
        use crate::writer::encode;
        let records: Vec<Record> = (0..n)
            .map(|i| {
                // Out of order, so the sort has work to do.
                let page = (i * 37) % n;
                let http = format!("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\npage {page}");
                Record::new(RecordType::Response, chrono::Utc::now())
                    .field(
                        "WARC-Target-URI",
                        &format!("http://127.0.0.1:8080/p/{page}"),
                    )
                    .content_type("application/http; msgtype=response")
                    .block(vec![bytes::Bytes::from(http)])
                    .with_block_digest()
            })
            .collect();
        let path = dir.join("pages.warc.gz");
        std::fs::write(&path, encode(&records, Some(6))).unwrap();
        path
    }

    #[test]
    fn sorting_in_runs_on_disk_gives_the_same_index_and_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let warc = warc_of_pages(dir.path(), 200);
        let whole = dir.path().join("whole.cdxj");
        let runs = dir.path().join("runs.cdxj");
        assert_eq!(write_index_with(&warc, &whole, usize::MAX).unwrap(), 200);
        // A run every few lines: dozens of runs merged.
        assert_eq!(write_index_with(&warc, &runs, 1000).unwrap(), 200);
        let (a, b) = (
            std::fs::read(&whole).unwrap(),
            std::fs::read(&runs).unwrap(),
        );
        assert_eq!(a, b);
        let text = String::from_utf8(a).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 200);
        assert!(lines.windows(2).all(|w| w[0] <= w[1]), "sorted");
        let mut names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["pages.warc.gz", "runs.cdxj", "whole.cdxj"]);
        assert!(indexes(&runs, "pages.warc.gz").unwrap());
        assert!(!indexes(&runs, "other.warc.gz").unwrap());
    }

    #[test]
    fn an_index_path_that_is_a_link_or_a_pipe_is_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let warc = warc_of_pages(dir.path(), 3);
        let precious = dir.path().join("precious");
        std::fs::write(&precious, "keep").unwrap();
        let link = dir.path().join("link.cdxj");
        std::os::unix::fs::symlink(&precious, &link).unwrap();
        assert!(write_index(&warc, &link).is_err());
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
        assert_eq!(std::fs::read(&precious).unwrap(), b"keep");
        // A link where the temporary file would go is not written through.
        let index = dir.path().join("i.cdxj");
        let tmp = dir
            .path()
            .join(format!(".i.cdxj.{}.0.tmp", std::process::id()));
        std::os::unix::fs::symlink(&precious, &tmp).unwrap();
        assert_eq!(write_index(&warc, &index).unwrap(), 3);
        assert_eq!(std::fs::read(&precious).unwrap(), b"keep");
    }
}
