//! Reading a WARC file back: the records it holds and where the last
//! whole one ends. After a `kill -9` a file may end inside a record (or
//! inside a gzip member); [`scan_file`] stops there, and a writer cuts
//! the file at [`Scanned::valid_len`] before appending.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use flate2::bufread::GzDecoder;

use crate::digest::sha1;

/// The most bytes one record may take (a guard against a corrupt length).
const MAX_RECORD: u64 = 8 << 30;
/// The most bytes read for a file's first record (its `warcinfo`).
const FIRST_RECORD_MAX: u64 = 1 << 20;

/// What a scan found.
#[derive(Debug, Clone, Default)]
pub struct Scanned {
    /// The whole records, in file order.
    pub records: Vec<ScannedRecord>,
    /// Bytes from the start of the file to the end of the last whole record.
    pub valid_len: u64,
    /// The file's size.
    pub file_len: u64,
}

/// One whole record of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScannedRecord {
    /// Where it begins in the file (its gzip member, if compressed).
    pub offset: u64,
    /// Its length in the file (compressed, if so).
    pub length: u64,
    /// `WARC-Type`.
    pub kind: String,
    /// `WARC-Record-ID`.
    pub id: String,
    /// `WARC-Target-URI`, if any.
    pub target_uri: Option<String>,
    /// `WARC-Date`.
    pub date: String,
    /// Every field of the header, in order.
    pub fields: Vec<(String, String)>,
    /// Whether `WARC-Block-Digest`, when present, matches the block.
    pub block_digest_ok: Option<bool>,
    /// The block.
    pub block: Vec<u8>,
}

impl ScannedRecord {
    /// The value of a field, by name (any case).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// The file could not be read at all.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScanError {
    /// Opening or reading failed.
    #[error("cannot read WARC file {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: io::Error,
    },
    /// It does not begin with a WARC record: not a file of ours.
    #[error("{0} is not a WARC file")]
    NotWarc(String),
}

/// A reader that counts the bytes consumed.
struct Counting<R> {
    inner: R,
    pos: u64,
}

impl<R: BufRead> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Counting<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }
    fn consume(&mut self, amt: usize) {
        self.pos += amt as u64;
        self.inner.consume(amt);
    }
}

/// Reads the records of the WARC file at `path` (gzip members when its
/// first bytes say so, plain otherwise) up to the first that is cut or
/// does not parse.
pub fn scan_file(path: &Path) -> Result<Scanned, ScanError> {
    scan(path, usize::MAX)
}

/// [`scan_file`] keeping the first `head` bytes of each block (enough for
/// an HTTP head): for indexing a large file.
pub fn scan_heads(path: &Path, head: usize) -> Result<Scanned, ScanError> {
    scan(path, head)
}

/// [`scan_file`] keeping no block (each record's `block` is empty): for
/// finding where whole records end in a large file.
pub fn scan_index(path: &Path) -> Result<Scanned, ScanError> {
    scan(path, 0)
}

/// Scans `path`, keeping at most `keep` bytes of each block.
fn scan(path: &Path, keep: usize) -> Result<Scanned, ScanError> {
    let mut records = Vec::new();
    let mut scanned = scan_each(path, keep, |r| records.push(r))?;
    scanned.records = records;
    Ok(scanned)
}

/// Reads the records of the WARC file at `path` one at a time, as
/// [`scan_file`] does, handing each to `each` with the first `keep` bytes
/// of its block: memory is one record's head and `keep` bytes, whatever
/// the size of the file or of a record. The [`Scanned`] returned has no
/// records (`each` had them).
pub fn scan_each(
    path: &Path,
    keep: usize,
    mut each: impl FnMut(ScannedRecord),
) -> Result<Scanned, ScanError> {
    let io_err = |source| ScanError::Io {
        path: path.display().to_string(),
        source,
    };
    let file = File::open(path).map_err(io_err)?;
    let file_len = file.metadata().map_err(io_err)?.len();
    let mut reader = Counting {
        inner: BufReader::with_capacity(256 * 1024, file),
        pos: 0,
    };
    let gzip = reader
        .fill_buf()
        .map_err(io_err)?
        .starts_with(&[0x1f, 0x8b]);
    let mut scanned = Scanned {
        file_len,
        ..Scanned::default()
    };
    let mut count = 0usize;
    loop {
        let start = reader.pos;
        if reader.fill_buf().map_err(io_err)?.is_empty() {
            break;
        }
        let record = if gzip {
            // One member, decoded as it is read: it must hold one whole
            // record and nothing after it.
            let mut member = BufReader::new(GzDecoder::new(&mut reader).take(MAX_RECORD + 4));
            read_record(&mut member, keep).filter(|_| matches!(member.fill_buf(), Ok([])))
        } else {
            read_record(&mut reader, keep)
        };
        match record {
            Some(mut r) => {
                r.offset = start;
                r.length = reader.pos - start;
                scanned.valid_len = reader.pos;
                count += 1;
                each(r);
            }
            None => break,
        }
    }
    if count == 0 && file_len > 0 {
        return Err(ScanError::NotWarc(path.display().to_string()));
    }
    Ok(scanned)
}

/// Reads one record from `reader`, keeping the first `keep` bytes of its
/// block and checking its digest on the way; `None` when cut or
/// malformed.
fn read_record(reader: &mut impl BufRead, keep: usize) -> Option<ScannedRecord> {
    let mut head = Vec::new();
    loop {
        let before = head.len();
        let n = reader.take(64 * 1024).read_until(b'\n', &mut head).ok()?;
        if n == 0 || head.len() > 1 << 20 {
            return None;
        }
        if &head[before..] == b"\r\n" {
            break;
        }
    }
    let length = content_length(&head)?;
    if length > MAX_RECORD {
        return None;
    }
    let mut block = Vec::with_capacity(length.min(keep as u64).min(1 << 20) as usize);
    let mut digest = crate::digest::Sha1Digest::new();
    let mut left = reader.take(length);
    let mut chunk = [0u8; 64 * 1024];
    let mut read = 0u64;
    loop {
        let n = match left.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return None,
        };
        digest.update(&chunk[..n]);
        let room = keep.saturating_sub(block.len()).min(n);
        block.extend_from_slice(&chunk[..room]);
        read += n as u64;
    }
    if read != length {
        return None;
    }
    let mut end = [0u8; 4];
    reader.read_exact(&mut end).ok()?;
    if &end != b"\r\n\r\n" {
        return None;
    }
    let (mut record, _) = parse_head(&head)?;
    record.block_digest_ok = record
        .get("WARC-Block-Digest")
        .map(|d| d == digest.finish());
    record.block = block;
    Some(record)
}

/// The first record of the WARC file at `path` (`None` when it is cut or
/// the file is no WARC file),
/// read without going through the rest of the file.
pub fn first_record(path: &Path) -> Result<Option<ScannedRecord>, ScanError> {
    let io_err = |source| ScanError::Io {
        path: path.display().to_string(),
        source,
    };
    let file = File::open(path).map_err(io_err)?;
    let mut reader = BufReader::new(file);
    let gzip = reader
        .fill_buf()
        .map_err(io_err)?
        .starts_with(&[0x1f, 0x8b]);
    let record = if gzip {
        let mut member = Vec::new();
        // A warcinfo is small: a big first member is no file of ours.
        GzDecoder::new(&mut reader)
            .take(FIRST_RECORD_MAX)
            .read_to_end(&mut member)
            .ok()
            .and_then(|_| parse(&member).map(|(r, _)| r))
    } else {
        read_record(&mut (&mut reader).take(FIRST_RECORD_MAX), usize::MAX)
    };
    Ok(record)
}

fn content_length(head: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(head).ok()?;
    text.lines().find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("Content-Length")
            .then(|| value.trim().parse().ok())?
    })
}

/// Parses one record at the start of `bytes`: it and the bytes it used.
pub fn parse(bytes: &[u8]) -> Option<(ScannedRecord, usize)> {
    let end = bytes.windows(4).position(|w| w == b"\r\n\r\n")?;
    let (mut record, length) = parse_head(&bytes[..end + 4])?;
    let block_start = end + 4;
    let block_end = block_start.checked_add(usize::try_from(length).ok()?)?;
    if bytes.len() < block_end + 4 || &bytes[block_end..block_end + 4] != b"\r\n\r\n" {
        return None;
    }
    let block = bytes[block_start..block_end].to_vec();
    record.block_digest_ok = record.get("WARC-Block-Digest").map(|d| d == sha1(&block));
    record.block = block;
    Some((record, block_end + 4))
}

/// Parses a record's head (up to and with its blank line): the record,
/// its block empty, and the block's length.
fn parse_head(head: &[u8]) -> Option<(ScannedRecord, u64)> {
    let head = head.strip_suffix(b"\r\n\r\n")?;
    let head = std::str::from_utf8(head).ok()?;
    let mut lines = head.split("\r\n");
    let version = lines.next()?;
    if version != "WARC/1.1" && version != "WARC/1.0" {
        return None;
    }
    let fields: Vec<(String, String)> = lines
        .map(|l| {
            let (n, v) = l.split_once(':')?;
            Some((n.trim().to_owned(), v.trim().to_owned()))
        })
        .collect::<Option<_>>()?;
    let get = |name: &str| {
        fields
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    };
    let length: u64 = get("Content-Length")?.parse().ok()?;
    let record = ScannedRecord {
        offset: 0,
        length: 0,
        kind: get("WARC-Type")?,
        id: get("WARC-Record-ID")?,
        target_uri: get("WARC-Target-URI"),
        date: get("WARC-Date")?,
        fields,
        block_digest_ok: None,
        block: Vec::new(),
    };
    Some((record, length))
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use chrono::Utc;

    use super::*;
    use crate::record::{Record, RecordType};
    use crate::writer::encode;

    fn records(n: usize) -> Vec<Record> {
        (0..n)
            .map(|i| {
                Record::new(RecordType::Metadata, Utc::now())
                    .field("WARC-Target-URI", &format!("http://127.0.0.1/{i}"))
                    .block(vec![bytes::Bytes::from(format!("record {i}"))])
                    .with_block_digest()
            })
            .collect()
    }

    #[test]
    fn a_cut_last_record_is_left_out_compressed_or_not() {
        for level in [Some(6), None] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("x.warc");
            let recs = records(3);
            let whole = encode(&recs, level);
            let first_two = encode(&recs[..2], level).len();
            for cut in [
                whole.len(),
                whole.len() - 1,
                whole.len() - 20,
                first_two + 3,
            ] {
                let mut f = File::create(&path).unwrap();
                f.write_all(&whole[..cut]).unwrap();
                drop(f);
                let s = scan_file(&path).unwrap();
                let want = if cut == whole.len() { 3 } else { 2 };
                assert_eq!(s.records.len(), want, "level {level:?}, cut at {cut}");
                assert!(s.records.iter().all(|r| r.block_digest_ok == Some(true)));
                assert_eq!(
                    s.records[1].target_uri.as_deref(),
                    Some("http://127.0.0.1/1")
                );
                let expected_len = if want == 3 { whole.len() } else { first_two };
                assert_eq!(s.valid_len, expected_len as u64);
            }
        }
    }

    #[test]
    fn a_file_that_is_not_warc_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notes.txt");
        std::fs::write(&path, "my precious notes\r\n\r\n").unwrap();
        assert!(matches!(scan_file(&path), Err(ScanError::NotWarc(_))));
    }
}
