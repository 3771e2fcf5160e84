//! Content decoding of a body read as it came over the wire (gzip,
//! deflate, br), bounded: the output stops at the body limit, so a small
//! body that inflates without end (a bomb) costs at most the limit in
//! memory and the time to produce it.

use std::io::{self, Write};

use bytes::{Bytes, BytesMut};
use http::header::{CONTENT_ENCODING, HeaderMap};

/// The content coding of a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coding {
    /// None, or one the crawler does not decode (the body is kept as is).
    Identity,
    /// `gzip` (`x-gzip`).
    Gzip,
    /// `deflate`: zlib-wrapped, or raw deflate as some servers send.
    Deflate,
    /// `br`.
    Brotli,
}

impl Coding {
    /// The coding named by `Content-Encoding` (the last one, when several
    /// are listed: only a single coding is decoded).
    pub fn of(headers: &HeaderMap) -> Self {
        let Some(value) = headers
            .get_all(CONTENT_ENCODING)
            .iter()
            .next_back()
            .and_then(|v| v.to_str().ok())
        else {
            return Coding::Identity;
        };
        let last = value.rsplit(',').next().unwrap_or("").trim();
        if last.eq_ignore_ascii_case("gzip") || last.eq_ignore_ascii_case("x-gzip") {
            Coding::Gzip
        } else if last.eq_ignore_ascii_case("deflate") {
            Coding::Deflate
        } else if last.eq_ignore_ascii_case("br") {
            Coding::Brotli
        } else {
            Coding::Identity
        }
    }
}

/// A buffer that takes at most `cap` bytes and then says it is full.
#[derive(Debug)]
struct Capped {
    buf: BytesMut,
    cap: usize,
    full: bool,
    /// Without a content coding: the first chunk as it came, while it is
    /// the only one (`buf` is empty then). A body that arrives in one
    /// chunk is never copied.
    first: Option<Bytes>,
    /// The capacity `buf` takes when it is first written to.
    hint: usize,
}

impl Write for Capped {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let room = self.cap - self.buf.len();
        if room == 0 && !bytes.is_empty() {
            self.full = true;
            return Err(io::Error::new(
                io::ErrorKind::WriteZero,
                "body limit reached",
            ));
        }
        let n = room.min(bytes.len());
        self.buf.extend_from_slice(&bytes[..n]);
        if n < bytes.len() {
            self.full = true;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

enum Inner {
    Identity(Capped),
    Gzip(Box<flate2::write::MultiGzDecoder<Capped>>),
    Zlib(Box<flate2::write::ZlibDecoder<Capped>>),
    Raw(Box<flate2::write::DeflateDecoder<Capped>>),
    Brotli(Box<brotli::DecompressorWriter<Capped>>),
    /// `deflate` before its first bytes told zlib from raw.
    Undecided(Capped),
}

/// A body being decoded as it arrives.
pub struct Decoder {
    inner: Inner,
    /// Some bytes were given.
    fed: bool,
    /// The coded stream ended: what follows is ignored.
    ended: bool,
}

/// The coded body does not decode.
#[derive(Debug, thiserror::Error)]
#[error("cannot decode the {coding} body: {why}")]
pub struct DecodeError {
    coding: &'static str,
    why: String,
}

/// What the decoder produced.
pub struct Decoded {
    /// The decoded body, at most the limit.
    pub body: Bytes,
    /// It reached the limit: the rest was not decoded.
    pub truncated: bool,
}

impl Decoder {
    /// A decoder for `coding` whose output stops at `cap` bytes.
    pub fn new(coding: Coding, cap: usize, hint: usize) -> Self {
        let hint = hint.min(cap);
        let out = Capped {
            // Without a coding, a buffer only if a second chunk comes.
            buf: match coding {
                Coding::Identity => BytesMut::new(),
                _ => BytesMut::with_capacity(hint),
            },
            cap,
            full: false,
            first: None,
            hint,
        };
        let inner = match coding {
            Coding::Identity => Inner::Identity(out),
            Coding::Gzip => Inner::Gzip(Box::new(flate2::write::MultiGzDecoder::new(out))),
            Coding::Deflate => Inner::Undecided(out),
            Coding::Brotli => Inner::Brotli(Box::new(brotli::DecompressorWriter::new(out, 8192))),
        };
        Decoder {
            inner,
            fed: false,
            ended: false,
        }
    }

    fn name(&self) -> &'static str {
        match self.inner {
            Inner::Identity(_) => "identity",
            Inner::Gzip(_) => "gzip",
            Inner::Zlib(_) | Inner::Raw(_) | Inner::Undecided(_) => "deflate",
            Inner::Brotli(_) => "br",
        }
    }

    fn out(&self) -> &Capped {
        match &self.inner {
            Inner::Identity(c) | Inner::Undecided(c) => c,
            Inner::Gzip(d) => d.get_ref(),
            Inner::Zlib(d) => d.get_ref(),
            Inner::Raw(d) => d.get_ref(),
            Inner::Brotli(d) => d.get_ref(),
        }
    }

    /// True once more output was offered than the limit takes (a body of
    /// exactly the limit is whole).
    pub fn is_full(&self) -> bool {
        self.out().full
    }

    /// Decodes `chunk`. Past the limit it stops quietly ([`Decoder::is_full`]).
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), DecodeError> {
        if self.ended || chunk.is_empty() {
            return Ok(());
        }
        self.fed = true;
        if let Inner::Undecided(_) = self.inner
            && !chunk.is_empty()
        {
            let Inner::Undecided(out) = std::mem::replace(
                &mut self.inner,
                Inner::Identity(Capped {
                    buf: BytesMut::new(),
                    cap: 0,
                    full: false,
                    first: None,
                    hint: 0,
                }),
            ) else {
                unreachable!("checked above")
            };
            self.inner = if looks_like_zlib(chunk) {
                Inner::Zlib(Box::new(flate2::write::ZlibDecoder::new(out)))
            } else {
                Inner::Raw(Box::new(flate2::write::DeflateDecoder::new(out)))
            };
        }
        let result = match &mut self.inner {
            Inner::Identity(c) | Inner::Undecided(c) => {
                if c.buf.capacity() == 0 {
                    c.buf.reserve(c.hint.max(chunk.len()).min(c.cap));
                }
                if let Some(first) = c.first.take() {
                    c.buf.extend_from_slice(&first);
                }
                let room = c.cap - c.buf.len();
                if chunk.len() > room {
                    c.full = true;
                }
                c.buf.extend_from_slice(&chunk[..room.min(chunk.len())]);
                Ok(())
            }
            Inner::Gzip(d) => d.write_all(chunk),
            Inner::Zlib(d) => d.write_all(chunk),
            Inner::Raw(d) => d.write_all(chunk),
            Inner::Brotli(d) => d.write_all(chunk),
        };
        match result {
            Err(_) if self.is_full() => Ok(()),
            // The coded stream ended before the body did: browsers ignore
            // what follows, and so does the crawler.
            Err(e) if e.kind() == io::ErrorKind::WriteZero => {
                self.ended = true;
                Ok(())
            }
            Err(e) => Err(DecodeError {
                coding: self.name(),
                why: e.to_string(),
            }),
            Ok(()) => Ok(()),
        }
    }

    /// [`Decoder::push`] of a chunk the caller owns: without a content
    /// coding, a body that arrives in one chunk is kept as it came (the
    /// copy of every body was about 4 % of the crawler's CPU).
    pub fn push_bytes(&mut self, chunk: Bytes) -> Result<(), DecodeError> {
        if let Inner::Identity(c) = &mut self.inner
            && !self.ended
            && !chunk.is_empty()
            && c.buf.is_empty()
            && c.first.is_none()
        {
            self.fed = true;
            if chunk.len() > c.cap {
                c.full = true;
            }
            c.first = Some(chunk.slice(..c.cap.min(chunk.len())));
            return Ok(());
        }
        self.push(&chunk)
    }

    fn out_mut(&mut self) -> &mut Capped {
        match &mut self.inner {
            Inner::Identity(c) | Inner::Undecided(c) => c,
            Inner::Gzip(d) => d.get_mut(),
            Inner::Zlib(d) => d.get_mut(),
            Inner::Raw(d) => d.get_mut(),
            Inner::Brotli(d) => d.get_mut(),
        }
    }

    /// The body decoded so far. The end of the coded stream is checked
    /// only when the whole body was given (`whole`) and the limit was not
    /// reached; an empty body is an empty body whatever its coding.
    pub fn finish(mut self, whole: bool) -> Result<Decoded, DecodeError> {
        if !self.fed || !whole || self.ended {
            let full = self.is_full();
            return Ok(self.take(full || !whole));
        }
        let ended = match &mut self.inner {
            Inner::Identity(_) | Inner::Undecided(_) => Ok(()),
            Inner::Gzip(d) => d.try_finish(),
            Inner::Zlib(d) => d.try_finish(),
            Inner::Raw(d) => d.try_finish(),
            Inner::Brotli(d) => d.close(),
        };
        let full = self.is_full();
        if let Err(e) = ended
            && !full
        {
            return Err(DecodeError {
                coding: self.name(),
                why: e.to_string(),
            });
        }
        Ok(self.take(full))
    }

    /// Takes the output; nothing more is decoded (dropping a decoder may
    /// flush it: into a buffer that takes nothing).
    fn take(&mut self, truncated: bool) -> Decoded {
        let out = self.out_mut();
        let body = match out.first.take() {
            Some(first) => first,
            None => std::mem::take(&mut out.buf).freeze(),
        };
        out.cap = 0;
        out.full = true;
        Decoded { body, truncated }
    }
}

/// A zlib header: deflate method, a window of at most 32 KiB, and a check
/// value making the first two bytes a multiple of 31.
fn looks_like_zlib(bytes: &[u8]) -> bool {
    match bytes {
        [cmf, flg, ..] => {
            cmf & 0x0f == 8 && cmf >> 4 <= 7 && (u16::from(*cmf) << 8 | u16::from(*flg)) % 31 == 0
        }
        // One byte cannot tell; zlib is what HTTP means by deflate.
        [cmf] => cmf & 0x0f == 8,
        [] => true,
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn decode(
        coding: Coding,
        body: &[u8],
        cap: usize,
        chunk: usize,
    ) -> Result<Decoded, DecodeError> {
        let mut d = Decoder::new(coding, cap, 16);
        let mut whole = true;
        for c in body.chunks(chunk.max(1)) {
            // As the fetcher gives them.
            d.push_bytes(Bytes::copy_from_slice(c))?;
            if d.is_full() {
                whole = false;
                break;
            }
        }
        d.finish(whole)
    }

    fn text() -> Vec<u8> {
        (0..20_000u32)
            .flat_map(|i| format!("line {i}\n").into_bytes())
            .collect()
    }

    #[test]
    fn every_coding_decodes_in_any_chunking() {
        let plain = text();
        let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        zlib.write_all(&plain).unwrap();
        let zlib = zlib.finish().unwrap();
        let mut raw =
            flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        raw.write_all(&plain).unwrap();
        let raw = raw.finish().unwrap();
        let mut br = Vec::new();
        {
            let mut e = brotli::CompressorWriter::new(&mut br, 4096, 5, 22);
            e.write_all(&plain).unwrap();
        }
        for (coding, body) in [
            (Coding::Identity, plain.clone()),
            (Coding::Gzip, gzip(&plain)),
            (Coding::Deflate, zlib),
            (Coding::Deflate, raw),
            (Coding::Brotli, br),
        ] {
            for chunk in [1, 7, 4096, usize::MAX] {
                let d = decode(coding, &body, 1 << 20, chunk).unwrap();
                assert_eq!(d.body, plain, "{coding:?} in chunks of {chunk}");
                assert!(!d.truncated);
            }
        }
    }

    #[test]
    fn a_plain_body_in_one_chunk_is_kept_as_it_came() {
        let body = Bytes::from(text());
        let mut d = Decoder::new(Coding::Identity, usize::MAX, 64);
        d.push_bytes(body.clone()).unwrap();
        let out = d.finish(true).unwrap();
        assert_eq!(out.body.as_ptr(), body.as_ptr(), "not copied");
        assert_eq!(out.body, body);
        // A second chunk joins the first; the limit cuts the first too.
        let mut d = Decoder::new(Coding::Identity, 10, 64);
        d.push_bytes(Bytes::from_static(b"0123")).unwrap();
        d.push_bytes(Bytes::from_static(b"456789abc")).unwrap();
        assert!(d.is_full());
        assert_eq!(&d.finish(false).unwrap().body[..], b"0123456789");
        let mut d = Decoder::new(Coding::Identity, 3, 64);
        d.push_bytes(Bytes::from_static(b"0123")).unwrap();
        assert!(d.is_full());
        let out = d.finish(false).unwrap();
        assert_eq!((&out.body[..], out.truncated), (&b"012"[..], true));
    }

    #[test]
    fn output_stops_at_the_limit() {
        let zeros = vec![0u8; 8 << 20];
        let bomb = gzip(&zeros);
        assert!(bomb.len() < 100_000);
        let d = decode(Coding::Gzip, &bomb, 1000, 4096).unwrap();
        assert_eq!(d.body.len(), 1000);
        assert!(d.truncated);
        let d = decode(Coding::Identity, &zeros, 1000, 4096).unwrap();
        assert_eq!((d.body.len(), d.truncated), (1000, true));
    }

    #[test]
    fn a_corrupt_body_is_an_error_and_gzip_several_members_are_read() {
        let mut bad = gzip(&text());
        let middle = bad.len() / 2;
        bad[middle] ^= 0xff;
        bad[middle + 1] ^= 0xff;
        assert!(decode(Coding::Gzip, &bad, 1 << 20, 512).is_err());
        let mut two = gzip(b"one ");
        two.extend(gzip(b"two"));
        assert_eq!(
            decode(Coding::Gzip, &two, 100, 3).unwrap().body,
            &b"one two"[..]
        );
    }

    #[test]
    fn empty_bodies_trailing_bytes_and_a_body_of_exactly_the_limit() {
        for coding in [
            Coding::Gzip,
            Coding::Deflate,
            Coding::Brotli,
            Coding::Identity,
        ] {
            let d = decode(coding, b"", 100, 10).unwrap();
            assert!(d.body.is_empty() && !d.truncated, "{coding:?}");
        }
        let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        zlib.write_all(b"page").unwrap();
        let mut zlib = zlib.finish().unwrap();
        zlib.extend_from_slice(b"junk");
        assert_eq!(
            decode(Coding::Deflate, &zlib, 100, 3).unwrap().body,
            &b"page"[..]
        );
        let exact = decode(Coding::Gzip, &gzip(&[7; 1000]), 1000, 64).unwrap();
        assert_eq!((exact.body.len(), exact.truncated), (1000, false));
        let exact = decode(Coding::Identity, &[7; 1000], 1000, 64).unwrap();
        assert_eq!((exact.body.len(), exact.truncated), (1000, false));
        let over = decode(Coding::Identity, &[7; 1001], 1000, 64).unwrap();
        assert_eq!((over.body.len(), over.truncated), (1000, true));
    }

    #[test]
    fn the_coding_is_read_from_content_encoding() {
        let mut h = HeaderMap::new();
        assert_eq!(Coding::of(&h), Coding::Identity);
        for (value, want) in [
            ("gzip", Coding::Gzip),
            ("X-GZIP", Coding::Gzip),
            ("br", Coding::Brotli),
            ("deflate", Coding::Deflate),
            ("identity, gzip", Coding::Gzip),
            ("compress", Coding::Identity),
            ("zstd", Coding::Identity),
        ] {
            h.insert(CONTENT_ENCODING, value.parse().unwrap());
            assert_eq!(Coding::of(&h), want, "{value}");
        }
    }
}
