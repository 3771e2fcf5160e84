//! Where records go. A [`Sink`] is owned by the engine task and called for
//! every record, in the order results arrive.

use std::io::{self, BufWriter, Write};

use crawlkeeper_model::{CrawlRecord, FinishedUrl};

/// Receives every record of a crawl.
pub trait Sink: Send {
    /// Writes one record.
    fn write(&mut self, record: &CrawlRecord) -> Result<(), SinkError>;
    /// Writes one record already serialised as `json`; sinks that write
    /// JSON use the text as it is.
    fn write_json(&mut self, record: &CrawlRecord, json: &str) -> Result<(), SinkError> {
        let _ = json;
        self.write(record)
    }
    /// Makes everything written so far durable (or at least handed to the OS).
    fn flush(&mut self) -> Result<(), SinkError>;
    /// Called with a transaction's finished URLs, and with other records to
    /// archive (robots.txt exchanges), before the store commits them; with
    /// `retry` when an earlier attempt of the same transaction failed, and
    /// what it wrote must be taken back first. A sink that must hold every
    /// stored result (a WARC archive) writes here: a failure stops the
    /// crawl before the transaction commits. The default does nothing.
    fn before_commit(
        &mut self,
        finished: &[FinishedUrl],
        extra: &[Vec<u8>],
        retry: bool,
    ) -> Result<(), SinkError> {
        let _ = (finished, extra, retry);
        Ok(())
    }
}

/// Several sinks, each given every call in turn.
pub struct FanOut(pub Vec<Box<dyn Sink>>);

impl Sink for FanOut {
    fn write(&mut self, record: &CrawlRecord) -> Result<(), SinkError> {
        self.0.iter_mut().try_for_each(|s| s.write(record))
    }

    fn write_json(&mut self, record: &CrawlRecord, json: &str) -> Result<(), SinkError> {
        self.0
            .iter_mut()
            .try_for_each(|s| s.write_json(record, json))
    }

    fn flush(&mut self) -> Result<(), SinkError> {
        self.0.iter_mut().try_for_each(|s| s.flush())
    }

    fn before_commit(
        &mut self,
        finished: &[FinishedUrl],
        extra: &[Vec<u8>],
        retry: bool,
    ) -> Result<(), SinkError> {
        self.0
            .iter_mut()
            .try_for_each(|s| s.before_commit(finished, extra, retry))
    }
}

/// A sink failed; the crawl cannot go on without losing records.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SinkError {
    /// The underlying writer failed.
    #[error("cannot write records: {0}")]
    Io(#[from] io::Error),
    /// A record could not be serialised.
    #[error("cannot serialise a record: {0}")]
    Encode(#[from] serde_json::Error),
}

/// JSON Lines: one record per line.
pub struct JsonlSink<W: Write + Send> {
    out: BufWriter<W>,
}

impl<W: Write + Send> JsonlSink<W> {
    /// A sink writing to `out`, buffered.
    pub fn new(out: W) -> Self {
        Self {
            out: BufWriter::with_capacity(64 * 1024, out),
        }
    }
}

impl<W: Write + Send> Sink for JsonlSink<W> {
    fn write(&mut self, record: &CrawlRecord) -> Result<(), SinkError> {
        serde_json::to_writer(&mut self.out, record)?;
        self.out.write_all(b"\n")?;
        Ok(())
    }

    fn write_json(&mut self, _record: &CrawlRecord, json: &str) -> Result<(), SinkError> {
        self.out.write_all(json.as_bytes())?;
        self.out.write_all(b"\n")?;
        Ok(())
    }

    fn flush(&mut self) -> Result<(), SinkError> {
        self.out.flush()?;
        Ok(())
    }
}

/// Keeps records in memory: for tests and library users who want them.
#[derive(Debug, Default)]
pub struct MemorySink {
    records: std::sync::Arc<std::sync::Mutex<Vec<CrawlRecord>>>,
}

impl MemorySink {
    /// A new empty sink.
    pub fn new() -> Self {
        Self::default()
    }

    /// A handle that sees the records written so far.
    pub fn records(&self) -> std::sync::Arc<std::sync::Mutex<Vec<CrawlRecord>>> {
        self.records.clone()
    }
}

impl Sink for MemorySink {
    fn write(&mut self, record: &CrawlRecord) -> Result<(), SinkError> {
        // A poisoned lock only means a reader panicked; the data is intact.
        self.records
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(record.clone());
        Ok(())
    }

    fn flush(&mut self) -> Result<(), SinkError> {
        Ok(())
    }
}
