//! Small serde helpers for values SmoothCrawler-Cluster writes as strings of integers
//! (`"standby_id": "3"`, `"in_progressing_id": "-1"`,
//! `"heart_rhythm_timeout": "3"`): written as strings, read from a string
//! or a number.

use serde::{Deserialize, Deserializer, Serializer, de::Error as _};

#[derive(Deserialize)]
#[serde(untagged)]
enum IntOrText {
    Int(i64),
    Text(String),
}

fn to_int<E: serde::de::Error>(v: IntOrText, what: &str) -> Result<i64, E> {
    match v {
        IntOrText::Int(i) => Ok(i),
        IntOrText::Text(s) => s
            .trim()
            .parse()
            .map_err(|_| E::custom(format!("{what} must be an integer (e.g. \"3\"), got {s:?}"))),
    }
}

/// An `i64` written as a string.
pub mod int_text {
    use super::*;

    /// Writes the number as a string.
    pub fn serialize<S: Serializer>(v: &i64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&v.to_string())
    }

    /// Reads a string of an integer, or a number.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
        to_int(IntOrText::deserialize(d)?, "value")
    }
}

/// A `u32` written as a string.
pub mod u32_text {
    use super::*;

    /// Writes the number as a string.
    pub fn serialize<S: Serializer>(v: &u32, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&v.to_string())
    }

    /// Reads a string of a non-negative integer, or a number.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
        let v = to_int(IntOrText::deserialize(d)?, "value")?;
        u32::try_from(v).map_err(|_| {
            D::Error::custom(format!("value must be between 0 and {}, got {v}", u32::MAX))
        })
    }
}
