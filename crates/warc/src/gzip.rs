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
}
