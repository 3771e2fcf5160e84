//! `results --format csv`: a job's stored records as a CSV table (RFC
//! 4180), one row per record in the order the results finished, read from
//! the store a page at a time.
//!
//! A page's data ends up in spreadsheets, so every text cell that begins
//! with `=`, `+`, `-`, `@`, a tab or a carriage return is prefixed with
//! `'` (OWASP's advice against CSV injection): a spreadsheet shows it as
//! text instead of running it as a formula.

use std::io::Write;

use crawlkeeper_store::{JobInfo, Store, Writer};
use serde_json::Value;

use crate::records::RecordsError;

/// The columns of a record's row without `--fields`: `error_kind` is the
/// kind of the record's error.
pub const CORE: [&str; 8] = [
    "url",
    "final_url",
    "status",
    "content_type",
    "bytes",
    "fetched_at",
    "title",
    "error_kind",
];

/// The columns that lead the row when fields are named.
pub const LEADING: [&str; 2] = ["url", "status"];

/// The columns `writer` adds: who stored the record (empty when unknown).
pub const WRITER: [&str; 3] = ["writer_holder", "writer_shard", "writer_generation"];

/// Why a list of field names cannot be columns.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TableError {
    /// No name was given.
    #[error("--fields: name at least one field")]
    Empty,
    /// A name that no field can have.
    #[error("--fields: '{0}': a field name is letters, digits, '_', '-' and '.'")]
    BadName(String),
    /// The same name twice.
    #[error("--fields: the field '{0}' is named twice")]
    Twice(String),
}

/// One column of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Column {
    /// A member of the record (`error_kind`: its error's kind).
    Core(&'static str),
    /// A field of the record's `fields`.
    Field(String),
}

/// The columns of a table, and how its rows are made of records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    columns: Vec<Column>,
    writer: bool,
}

impl Table {
    /// The columns of [`CORE`], then those of [`WRITER`] with `writer`.
    pub fn core(writer: bool) -> Self {
        Self {
            columns: CORE.into_iter().map(Column::Core).collect(),
            writer,
        }
    }

    /// The columns of [`LEADING`], then one per field of the
    /// comma-separated `names` in their order, then those of [`WRITER`]
    /// with `writer`. A name is letters, digits, `_`, `-` and `.`, given
    /// once.
    pub fn with_fields(names: &str, writer: bool) -> Result<Self, TableError> {
        let mut columns: Vec<Column> = LEADING.into_iter().map(Column::Core).collect();
        let mut fields: Vec<&str> = Vec::new();
        for name in names.split(',').map(str::trim) {
            if name.is_empty() && names.trim().is_empty() {
                return Err(TableError::Empty);
            }
            if !valid_name(name) {
                return Err(TableError::BadName(name.to_owned()));
            }
            if fields.contains(&name) {
                return Err(TableError::Twice(name.to_owned()));
            }
            fields.push(name);
        }
        columns.extend(fields.into_iter().map(|n| Column::Field(n.to_owned())));
        Ok(Self { columns, writer })
    }

    /// The header row's cells: the columns' names.
    pub fn header(&self) -> Vec<String> {
        let mut cells: Vec<String> = self
            .columns
            .iter()
            .map(|c| match c {
                Column::Core(name) => (*name).to_owned(),
                Column::Field(name) => name.clone(),
            })
            .collect();
        if self.writer {
            cells.extend(WRITER.iter().map(|c| (*c).to_owned()));
        }
        cells
    }

    /// The row of `record` (a stored record, JSON), stored by `writer`:
    /// its cells, defused and ready to be quoted.
    pub fn row(&self, record: &Value, writer: Option<&Writer>) -> Vec<String> {
        let mut cells: Vec<String> = self
            .columns
            .iter()
            .map(|c| match c {
                Column::Core("error_kind") => cell(&record["error"]["kind"]),
                Column::Core(name) => cell(&record[*name]),
                Column::Field(name) => cell(&record["fields"][name.as_str()]),
            })
            .collect();
        if self.writer {
            match writer {
                Some(w) => cells.extend([
                    defuse(&w.holder),
                    w.shard.to_string(),
                    w.generation.to_string(),
                ]),
                None => cells.extend([String::new(), String::new(), String::new()]),
            }
        }
        cells
    }
}

/// The name rule of fields (`--extract`): letters, digits, `_`, `-`, `.`.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// A value as a cell: a string as it is (defused), a number or a boolean
/// as JSON writes it, a list or an object as compact JSON, nothing (an
/// absent member, `null`) as an empty cell.
pub fn cell(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(s) => defuse(s),
        Value::Number(_) | Value::Bool(_) => value.to_string(),
        // Begins with `[` or `{`: nothing to defuse.
        Value::Array(_) | Value::Object(_) => value.to_string(),
    }
}

/// `text` with `'` before it when a spreadsheet would take it for a
/// formula: it begins with `=`, `+`, `-`, `@`, a tab or a carriage return.
pub fn defuse(text: &str) -> String {
    if text.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{text}")
    } else {
        text.to_owned()
    }
}

/// Writes `cells` as one CSV line ending in CRLF: a cell holding `,`,
/// `"`, CR or LF is quoted, its quotes doubled (RFC 4180).
pub fn write_row(out: &mut dyn Write, cells: &[String]) -> std::io::Result<()> {
    for (i, c) in cells.iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        if c.contains([',', '"', '\r', '\n']) {
            out.write_all(b"\"")?;
            out.write_all(c.replace('"', "\"\"").as_bytes())?;
            out.write_all(b"\"")?;
        } else {
            out.write_all(c.as_bytes())?;
        }
    }
    out.write_all(b"\r\n")
}

/// Writes the header and a row for every stored record of `job` to `out`,
/// in the order the results finished, a page of results in memory at a
/// time. Returns how many rows were written (the header left out).
pub fn write_csv(
    store: &mut dyn Store,
    job: &JobInfo,
    out: &mut dyn Write,
    table: &Table,
) -> Result<u64, RecordsError> {
    write_row(out, &table.header())?;
    let written = crate::records::each_result(store, job, |json, who| {
        // A stored record this build cannot read is a row of what it has.
        let record: Value = serde_json::from_str(json).unwrap_or(Value::Null);
        Ok(write_row(out, &table.row(&record, who))?)
    })?;
    out.flush()?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn line(cells: &[&str]) -> String {
        let mut out = Vec::new();
        let cells: Vec<String> = cells.iter().map(|c| (*c).to_owned()).collect();
        write_row(&mut out, &cells).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn cells_are_quoted_as_rfc_4180_says() {
        assert_eq!(line(&["a", "b c", ""]), "a,b c,\r\n");
        assert_eq!(
            line(&["a,b", "say \"hi\"", "x\ny", "x\ry"]),
            "\"a,b\",\"say \"\"hi\"\"\",\"x\ny\",\"x\ry\"\r\n"
        );
    }

    #[test]
    fn formulas_are_defused_and_values_are_cells() {
        for bad in ["=1+1", "+1", "-2+3", "@SUM(A1)", "\tx", "\rx"] {
            assert_eq!(cell(&json!(bad)), format!("'{bad}"));
        }
        assert_eq!(cell(&json!("a=1")), "a=1");
        assert_eq!(cell(&json!(-5)), "-5");
        assert_eq!(cell(&json!(true)), "true");
        assert_eq!(cell(&json!(null)), "");
        assert_eq!(cell(&json!(["=a", "b"])), r#"["=a","b"]"#);
        assert_eq!(cell(&json!({"k": 1})), r#"{"k":1}"#);
    }

    #[test]
    fn rows_follow_the_columns() {
        let record = json!({
            "url": "http://a/", "final_url": "http://a/", "status": 200,
            "content_type": "text/html", "bytes": 12, "fetched_at": "t",
            "title": "=HYPERLINK(\"x\")", "error": {"kind": "timeout", "message": "m"},
            "fields": {"name": "N", "images": ["i1", "i2"]}
        });
        let core = Table::core(false);
        assert_eq!(core.header(), CORE);
        assert_eq!(
            core.row(&record, None),
            [
                "http://a/",
                "http://a/",
                "200",
                "text/html",
                "12",
                "t",
                "'=HYPERLINK(\"x\")",
                "timeout"
            ]
        );
        let t = Table::with_fields("name, images,price", true).unwrap();
        assert_eq!(
            t.header(),
            [
                "url",
                "status",
                "name",
                "images",
                "price",
                "writer_holder",
                "writer_shard",
                "writer_generation"
            ]
        );
        let w = Writer {
            holder: "n@h:1".into(),
            shard: 2,
            generation: 3,
        };
        assert_eq!(
            t.row(&record, Some(&w)),
            [
                "http://a/",
                "200",
                "N",
                r#"["i1","i2"]"#,
                "",
                "n@h:1",
                "2",
                "3"
            ]
        );
        assert_eq!(t.row(&json!({}), None)[..2], ["", ""]);
    }

    #[test]
    fn field_names_are_checked() {
        assert_eq!(Table::with_fields("", false), Err(TableError::Empty));
        assert_eq!(
            Table::with_fields("a,,b", false),
            Err(TableError::BadName(String::new()))
        );
        assert_eq!(
            Table::with_fields("a b", false),
            Err(TableError::BadName("a b".into()))
        );
        assert_eq!(
            Table::with_fields("x[]", false),
            Err(TableError::BadName("x[]".into()))
        );
        assert_eq!(
            Table::with_fields("a,b.c,a", false),
            Err(TableError::Twice("a".into()))
        );
        assert!(Table::with_fields("a-1,b_2,c.3", false).is_ok());
    }
}
