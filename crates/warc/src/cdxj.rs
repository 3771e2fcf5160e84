//! CDXJ indexes, as pywb reads them and `cdxj-indexer` writes them: one
//! line per `response` and `revisit` record, `<SURT key> <14-digit
//! timestamp> <JSON>` with the URL, MIME type, status, payload digest,
//! the record's length and offset in its file (compressed, when it is)
//! and the file's name; lines sorted, so a reader can search them.

use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;

use crate::scan::{ScanError, ScannedRecord, scan_heads};

/// Bytes of a record's block read for its HTTP head.
const HEAD: usize = 16 * 1024;

/// The SURT form of `url` (Sort-friendly URI Reordering Transform, as the
/// Internet Archive's canonicalizer writes it): lower case, no scheme,
/// host labels reversed and joined by commas (a leading `www.` dropped),
/// a port other than the scheme's default kept, `)` then the path, and
/// the query's parameters sorted.
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
    out.push_str(if path.is_empty() { "/" } else { path });
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

/// Writes the sorted index of the WARC file at `warc` to `index` (through
/// a temporary file renamed over it, so a reader never sees half of one).
/// Returns how many lines it has.
pub fn write_index(warc: &Path, index: &Path) -> Result<usize, ScanError> {
    let io_err = |source| ScanError::Io {
        path: index.display().to_string(),
        source,
    };
    let scanned = scan_heads(warc, HEAD)?;
    let name = warc
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut lines: Vec<String> = scanned
        .records
        .iter()
        .filter_map(|r| line(r, &name))
        .collect();
    lines.sort_unstable();
    let tmp = index.with_extension("cdxj.tmp");
    let mut file = std::io::BufWriter::new(std::fs::File::create(&tmp).map_err(io_err)?);
    for l in &lines {
        writeln!(file, "{l}").map_err(io_err)?;
    }
    file.into_inner()
        .map_err(|e| io_err(e.into_error()))?
        .sync_all()
        .map_err(io_err)?;
    std::fs::rename(&tmp, index).map_err(io_err)?;
    Ok(lines.len())
}

/// Where the index of the WARC file `warc` goes: beside it, its name with
/// `.warc.gz` or `.warc` replaced by `.cdxj`.
pub fn index_path(warc: &Path) -> std::path::PathBuf {
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
}
