//! Gzip members made with one deflate state per thread, reset between
//! members: a new state zeroes hundreds of kilobytes of tables, which
//! costs more than compressing a small record (a `request` or `metadata`
//! record is a few hundred bytes, and a page has three records).

use std::cell::RefCell;

use flate2::{Compress, Compression, Crc, FlushCompress, Status};

/// The gzip header crawlkeeper writes: deflate, no name, no time, unknown OS.
const HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];

thread_local! {
    /// This thread's deflate state, with its level.
    static STATE: RefCell<Option<(u32, Compress)>> = const { RefCell::new(None) };
}

/// Appends to `out` one gzip member holding `parts` one after the other.
pub fn member(parts: &[&[u8]], level: u32, out: &mut Vec<u8>) {
    let level = level.min(9);
    STATE.with(|cell| {
        let mut state = cell.borrow_mut();
        let fresh = !matches!(&*state, Some((l, _)) if *l == level);
        if fresh {
            *state = Some((level, Compress::new(Compression::new(level), false)));
        }
        let (_, deflate) = state.as_mut().expect("set above");
        if !fresh {
            deflate.reset();
        }
        out.extend_from_slice(&HEADER);
        let mut crc = Crc::new();
        for (i, part) in parts.iter().enumerate() {
            crc.update(part);
            let last = i + 1 == parts.len();
            feed(deflate, part, last, out);
        }
        if parts.is_empty() {
            feed(deflate, &[], true, out);
        }
        out.extend_from_slice(&crc.sum().to_le_bytes());
        out.extend_from_slice(&crc.amount().to_le_bytes());
    });
}

/// Compresses `input` into `out`, finishing the stream when `last`.
fn feed(deflate: &mut Compress, mut input: &[u8], last: bool, out: &mut Vec<u8>) {
    let flush = if last {
        FlushCompress::Finish
    } else {
        FlushCompress::None
    };
    loop {
        if out.capacity() - out.len() < 1024 {
            out.reserve(input.len() / 2 + 4096);
        }
        let before = deflate.total_in();
        let status = deflate
            .compress_vec(input, out, flush)
            .expect("deflating into a Vec with room never fails");
        let used = (deflate.total_in() - before) as usize;
        input = &input[used..];
        match status {
            Status::StreamEnd => return,
            _ if !last && input.is_empty() => return,
            _ => {}
        }
    }
}

/// Records encoded for one file (gzip members, or plain when the data
/// does not begin with the gzip magic) as another wants them: `level`
/// `Some` for a member per record, `None` for plain. `None` back when the
/// data does not read as whole records.
pub fn reencode(data: &[u8], level: Option<u32>) -> Option<std::borrow::Cow<'_, [u8]>> {
    use std::borrow::Cow;
    use std::io::Read;
    let gzipped = data.starts_with(&HEADER[..2]);
    match (gzipped, level) {
        (true, Some(_)) | (false, None) => Some(Cow::Borrowed(data)),
        (true, None) => {
            let mut plain = Vec::with_capacity(data.len() * 4);
            flate2::read::MultiGzDecoder::new(data)
                .read_to_end(&mut plain)
                .ok()?;
            Some(Cow::Owned(plain))
        }
        (false, Some(level)) => {
            let mut out = Vec::with_capacity(data.len() / 2);
            let mut at = 0;
            while at < data.len() {
                let (_, used) = crate::scan::parse(&data[at..])?;
                member(&[&data[at..at + used]], level, &mut out);
                at += used;
            }
            Some(Cow::Owned(out))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    fn gunzip(bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(bytes)
            .read_to_end(&mut out)
            .unwrap();
        out
    }

    #[test]
    fn members_decode_to_their_parts_whatever_the_level_and_reuse() {
        let big: Vec<u8> = (0..200_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        let mut all = Vec::new();
        let mut want = Vec::new();
        for (level, parts) in [
            (1, vec![&b"head\r\n"[..], &big[..], b"\r\n\r\n"]),
            (1, vec![&b"small"[..]]),
            (6, vec![&big[..1000]]),
            (0, vec![&b""[..], b"x"]),
            (1, vec![]),
        ] {
            let mut one = Vec::new();
            member(&parts, level, &mut one);
            let whole: Vec<u8> = parts.concat();
            assert_eq!(gunzip(&one), whole, "level {level}");
            all.extend(one);
            want.extend(whole);
        }
        assert_eq!(gunzip(&all), want, "members concatenate");
    }

    #[test]
    fn records_move_between_plain_and_gzip_and_junk_is_refused() {
        let records: Vec<crate::Record> = ["a", "b"]
            .iter()
            .map(|b| {
                crate::Record::new(crate::RecordType::Metadata, chrono::Utc::now())
                    .block(vec![bytes::Bytes::from(b.to_string())])
            })
            .collect();
        let plain = crate::writer::encode(&records, None);
        let gz = crate::writer::encode(&records, Some(1));
        assert_eq!(&*reencode(&plain, None).unwrap(), &plain[..]);
        assert_eq!(&*reencode(&gz, Some(6)).unwrap(), &gz[..]);
        assert_eq!(&*reencode(&gz, None).unwrap(), &plain[..]);
        let members = reencode(&plain, Some(1)).unwrap();
        assert_eq!(gunzip(&members), plain);
        let path = std::env::temp_dir().join(format!("ck-reencode-{}.warc.gz", std::process::id()));
        std::fs::write(&path, &members).unwrap();
        let scanned = crate::scan::scan_file(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(scanned.records.len(), 2, "a member per record");
        assert_eq!(scanned.valid_len, scanned.file_len);
        assert!(reencode(b"not warc", Some(1)).is_none());
        assert!(reencode(&gz[..gz.len() - 3], None).is_none());
    }
}
