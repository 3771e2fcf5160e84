//! Digests as WARC writers spell them: `sha1:` and the SHA-1 in base32
//! (RFC 4648, upper case, no padding: 20 bytes are exactly 32 letters).

use sha1::{Digest as _, Sha1};

/// A running SHA-1 over parts of a block.
#[derive(Clone, Default)]
pub struct Sha1Digest(Sha1);

impl Sha1Digest {
    /// An empty digest.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `bytes`.
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// `sha1:<base32>`.
    pub fn finish(self) -> String {
        let hash: [u8; 20] = self.0.finalize().into();
        format!("sha1:{}", base32(&hash))
    }
}

/// `sha1:<base32>` of `bytes`.
pub fn sha1(bytes: &[u8]) -> String {
    let mut d = Sha1Digest::new();
    d.update(bytes);
    d.finish()
}

/// RFC 4648 base32, upper case, without padding.
pub fn base32(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut out = String::with_capacity(bytes.len().div_ceil(5) * 8);
    let mut buffer: u64 = 0;
    let mut bits = 0u32;
    for &b in bytes {
        buffer = (buffer << 8) | u64::from(b);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(char::from(ALPHABET[((buffer >> bits) & 31) as usize]));
        }
    }
    if bits > 0 {
        out.push(char::from(ALPHABET[((buffer << (5 - bits)) & 31) as usize]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base32_matches_rfc_4648_vectors() {
        // RFC 4648 section 10, without the padding.
        for (input, want) in [
            ("", ""),
            ("f", "MY"),
            ("fo", "MZXQ"),
            ("foo", "MZXW6"),
            ("foob", "MZXW6YQ"),
            ("fooba", "MZXW6YTB"),
            ("foobar", "MZXW6YTBOI"),
        ] {
            assert_eq!(base32(input.as_bytes()), want, "{input:?}");
        }
    }

    #[test]
    fn sha1_of_known_text() {
        // sha1("abc") = a9993e36 4706816a ba3e2571 7850c26c 9cd0d89d
        assert_eq!(sha1(b"abc"), "sha1:VGMT4NSHA2AWVOR6EVYXQUGCNSONBWE5");
        let mut parts = Sha1Digest::new();
        parts.update(b"a");
        parts.update(b"bc");
        assert_eq!(parts.finish(), sha1(b"abc"));
    }
}
