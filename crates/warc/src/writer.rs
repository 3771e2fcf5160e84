//! WARC files: each record its own gzip member (so a file can be indexed
//! and read from any record), or plain when the name does not end with
//! `.gz`; a `warcinfo` record at the head of each file; rotation to
//! numbered files past a size (`crawl.warc.gz`, then `crawl-00001.warc.gz`,
//! …), only between the groups of records the caller writes together.
//!
//! Encoding ([`encode`]) is separate from writing, so callers may
//! compress on many threads and the writer only appends bytes.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use chrono::Utc;

use crate::record::{Fields, Record, RecordType};

/// How records are written.
#[derive(Debug, Clone)]
pub struct WriterConfig {
    /// The first file (`crawl.warc.gz`); later ones are numbered beside it.
    pub path: PathBuf,
    /// A file is closed and the next begun once it is this large.
    pub max_size: u64,
    /// The gzip level (0–9) of each member.
    pub gzip_level: u32,
    /// Fields of the `warcinfo` record at the head of each file
    /// (`software`, `hostname`, `operator`, …), in order.
    pub info: Vec<(String, String)>,
}

impl WriterConfig {
    /// Whether the files are gzip-compressed (the name ends with `.gz`).
    pub fn gzip(&self) -> bool {
        self.path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.ends_with(".gz"))
    }

    /// The path of file `number` (0 is the path given).
    pub fn path_of(&self, number: u32) -> PathBuf {
        if number == 0 {
            return self.path.clone();
        }
        let name = self
            .path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("crawl.warc");
        let (stem, ext) = split_name(name);
        self.path.with_file_name(format!("{stem}-{number:05}{ext}"))
    }
}

/// `crawl.warc.gz` → (`crawl`, `.warc.gz`); any other name keeps its last
/// extension. A rotation's file is `<stem>-<number, 5 digits or more><ext>`.
pub fn split_name(name: &str) -> (&str, &str) {
    for ext in [".warc.gz", ".warc"] {
        if let Some(stem) = name.strip_suffix(ext)
            && !stem.is_empty()
        {
            return (stem, &name[stem.len()..]);
        }
    }
    match name.rfind('.') {
        Some(dot) if dot > 0 => (&name[..dot], &name[dot..]),
        _ => (name, ""),
    }
}

/// Records encoded for a file: gzip members (one per record) or plain.
pub fn encode(records: &[Record], gzip_level: Option<u32>) -> Vec<u8> {
    let mut out = Vec::new();
    for r in records {
        match gzip_level {
            Some(level) => {
                let header = r.header();
                let mut parts: Vec<&[u8]> = vec![&header];
                parts.extend(r.block_parts().iter().map(|b| &b[..]));
                parts.push(b"\r\n\r\n");
                crate::gzip::member(&parts, level, &mut out);
            }
            None => r.write_to(&mut out).expect("writing to a Vec never fails"),
        }
    }
    out
}

/// Appends encoded records to the files of one crawl.
pub struct WarcWriter {
    config: WriterConfig,
    number: u32,
    file: File,
    size: u64,
}

impl WarcWriter {
    /// Continues file `number` at `size` bytes (what a scan found whole;
    /// anything after is cut), or starts it with its `warcinfo` when it
    /// is new or empty.
    pub fn open(config: WriterConfig, number: u32, size: u64) -> io::Result<Self> {
        let path = config.path_of(number);
        // Never through a link, never a pipe or a device: a regular file.
        let mut file = crate::target::open_regular(
            &path,
            OpenOptions::new().create(true).truncate(false).write(true),
        )?;
        file.set_len(size)?;
        use std::io::Seek;
        file.seek(io::SeekFrom::Start(size))?;
        let mut w = WarcWriter {
            config,
            number,
            file,
            size,
        };
        if size == 0 {
            w.head()?;
        }
        Ok(w)
    }

    fn level(&self) -> Option<u32> {
        self.config.gzip().then_some(self.config.gzip_level)
    }

    /// Writes the `warcinfo` record that begins a file.
    fn head(&mut self) -> io::Result<()> {
        let path = self.config.path_of(self.number);
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        let mut fields = Fields::new();
        for (k, v) in &self.config.info {
            fields.add(k, v);
        }
        let info = Record::new(RecordType::Warcinfo, Utc::now())
            .field("WARC-Filename", &name)
            .content_type("application/warc-fields")
            .block(vec![fields.into_bytes()])
            .with_block_digest();
        let bytes = encode(&[info], self.level());
        self.file.write_all(&bytes)?;
        self.size += bytes.len() as u64;
        Ok(())
    }

    /// Begins a group of records that must stay in one file: a full file
    /// is closed and the next begun now, never inside the group.
    pub fn begin_group(&mut self) -> io::Result<()> {
        if self.size >= self.config.max_size {
            self.rotate()?;
        }
        Ok(())
    }

    /// Appends `encoded` (from [`encode`] with this writer's level: see
    /// [`WarcWriter::gzip_level`]).
    pub fn append(&mut self, encoded: &[u8]) -> io::Result<()> {
        self.file.write_all(encoded)?;
        self.size += encoded.len() as u64;
        Ok(())
    }

    /// Takes back everything written since `mark` (a [`WarcWriter::position`]):
    /// later files are removed and the file of the mark cut there.
    pub fn rewind(&mut self, mark: (u32, u64)) -> io::Result<()> {
        let (number, size) = mark;
        if number != self.number {
            for n in number + 1..=self.number {
                match std::fs::remove_file(self.config.path_of(n)) {
                    Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                    _ => {}
                }
            }
            self.file = crate::target::open_regular(
                &self.config.path_of(number),
                OpenOptions::new().write(true),
            )?;
            self.number = number;
        }
        self.file.set_len(size)?;
        use std::io::Seek;
        self.file.seek(io::SeekFrom::Start(size))?;
        self.size = size;
        Ok(())
    }

    /// The gzip level records for this writer must be encoded with
    /// (`None`: plain).
    pub fn gzip_level(&self) -> Option<u32> {
        self.level()
    }

    fn rotate(&mut self) -> io::Result<()> {
        self.file.sync_data()?;
        self.number += 1;
        let path = self.config.path_of(self.number);
        // Never over an existing file (one a resume did not know of).
        self.file = crate::target::create_new(&path)?;
        self.size = 0;
        self.head()
    }

    /// Hands what was written to the operating system (a `kill -9` keeps
    /// it; a power cut needs [`WarcWriter::sync`]).
    pub fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }

    /// Makes what was written durable.
    pub fn sync(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }

    /// The file being written and its size.
    pub fn position(&self) -> (u32, u64) {
        (self.number, self.size)
    }

    /// The path of the file being written.
    pub fn current_path(&self) -> PathBuf {
        self.config.path_of(self.number)
    }
}

/// The numbers of the files of `config` that exist, ascending (whatever
/// they are: a link, even one to nothing, is there).
pub fn existing_files(config: &WriterConfig) -> Vec<u32> {
    let mut found = Vec::new();
    if std::fs::symlink_metadata(config.path_of(0)).is_ok() {
        found.push(0);
    }
    let dir = match config.path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => Path::new(".").to_path_buf(),
    };
    let name = config
        .path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("crawl.warc");
    let (stem, ext) = split_name(name);
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let n = e.file_name();
            let Some(n) = n.to_str() else { continue };
            let number = n
                .strip_prefix(stem)
                .and_then(|r| r.strip_prefix('-'))
                .and_then(|r| r.strip_suffix(ext))
                .filter(|d| d.len() >= 5 && d.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|d| d.parse::<u32>().ok());
            if let Some(number) = number.filter(|&n| n > 0) {
                found.push(number);
            }
        }
    }
    found.sort_unstable();
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::scan_file;

    fn config(dir: &Path, name: &str, max_size: u64) -> WriterConfig {
        WriterConfig {
            path: dir.join(name),
            max_size,
            gzip_level: 6,
            info: vec![("software".into(), "crawlkeeper/test".into())],
        }
    }

    fn page(i: usize) -> Record {
        Record::new(RecordType::Metadata, Utc::now())
            .field("WARC-Target-URI", &format!("http://127.0.0.1/{i}"))
            .block(vec![bytes::Bytes::from(vec![b'x'; 1000])])
    }

    #[test]
    fn numbered_names_keep_the_extensions() {
        let c = config(Path::new("/tmp/x"), "crawl.warc.gz", 1);
        assert_eq!(c.path_of(0), Path::new("/tmp/x/crawl.warc.gz"));
        assert_eq!(c.path_of(3), Path::new("/tmp/x/crawl-00003.warc.gz"));
        assert!(c.gzip());
        let c = config(Path::new("/tmp/x"), "out.warc", 1);
        assert_eq!(c.path_of(1), Path::new("/tmp/x/out-00001.warc"));
        assert!(!c.gzip());
    }

    #[test]
    fn files_rotate_between_groups_and_each_begins_with_warcinfo() {
        let dir = tempfile::tempdir().unwrap();
        let c = config(dir.path(), "crawl.warc.gz", 600);
        let mut w = WarcWriter::open(c.clone(), 0, 0).unwrap();
        for i in 0..6 {
            w.begin_group().unwrap();
            w.append(&encode(&[page(i)], w.gzip_level())).unwrap();
            w.append(&encode(&[page(i + 100)], w.gzip_level())).unwrap();
        }
        w.flush().unwrap();
        let files = existing_files(&c);
        assert!(files.len() >= 3, "{files:?}");
        let mut pages = 0;
        for n in files {
            let s = scan_file(&c.path_of(n)).unwrap();
            assert_eq!(s.records[0].kind, "warcinfo");
            assert_eq!(s.valid_len, std::fs::metadata(c.path_of(n)).unwrap().len());
            pages += s.records.iter().filter(|r| r.kind == "metadata").count();
            // Groups are never split: each file holds whole pairs.
            assert_eq!(
                s.records.iter().filter(|r| r.kind == "metadata").count() % 2,
                0
            );
        }
        assert_eq!(pages, 12);
    }
}

#[cfg(test)]
mod rewind_tests {
    use super::*;
    use crate::scan::scan_file;

    #[test]
    fn a_rewind_takes_back_a_group_even_across_a_rotation() {
        let dir = tempfile::tempdir().unwrap();
        let c = WriterConfig {
            path: dir.path().join("r.warc"),
            max_size: 1,
            gzip_level: 6,
            info: Vec::new(),
        };
        let rec = |i: usize| {
            Record::new(RecordType::Metadata, Utc::now())
                .field("WARC-Target-URI", &format!("http://127.0.0.1/{i}"))
        };
        let mut w = WarcWriter::open(c.clone(), 0, 0).unwrap();
        let mark = w.position();
        w.begin_group().unwrap();
        w.append(&encode(&[rec(1)], None)).unwrap();
        assert_eq!(w.position().0, 1, "rotated");
        w.rewind(mark).unwrap();
        assert_eq!(w.position(), mark);
        assert!(!c.path_of(1).exists());
        w.append(&encode(&[rec(2)], None)).unwrap();
        w.flush().unwrap();
        let s = scan_file(&c.path_of(0)).unwrap();
        let uris: Vec<_> = s
            .records
            .iter()
            .filter_map(|r| r.target_uri.clone())
            .collect();
        assert_eq!(uris, ["http://127.0.0.1/2"]);
    }
}
