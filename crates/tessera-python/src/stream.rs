//! `read_batches`: a table file as a stream of record batches, decoded on the CPU as they are
//! asked for, exported to pyarrow through the Arrow C Stream interface.
//!
//! [`ArrowTableReader::batches`] borrows the [`TableReader`] (the mapped file) and an engine,
//! while a C stream must own everything it reads from. Rather than a self-referential struct,
//! one thread per stream owns the file, the reader and its cursors, and decodes one batch per
//! request: the stream's `next` asks and waits for the answer, so nothing is decoded ahead of
//! the consumer, peak memory is one batch (plus the chunk each column's cursor holds), and a
//! later batch's error is reported when that batch is asked for. Dropping the stream closes
//! the request channel: the thread drops the reader, which unmaps the file, and ends; the drop
//! waits for that, so the file is closed once the stream is gone.

use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use tessera::arrow::{ArrowTableReader, DEFAULT_BATCH_ROWS};
use tessera::{Engine, TableReader};

use crate::{at, panic_message, Failure};

/// A batch, the end of the table (`None`), or what went wrong.
type Reply = Result<Option<RecordBatch>, Failure>;

/// The streamed table: its schema and the channels to the thread that decodes it.
pub(crate) struct BatchStream {
    schema: SchemaRef,
    /// Each `()` asks for one batch; `None` once the stream ended (dropping it stops the
    /// thread).
    requests: Option<SyncSender<()>>,
    replies: Receiver<Reply>,
    worker: Option<JoinHandle<()>>,
}

/// Rows per batch when none is asked for: the file's chunk rows (the first chunk of a column
/// that holds one value a row; every such column is cut at the same rows), so each batch
/// decodes about one chunk of each column.
fn chunk_rows(table: &TableReader, rows: u64) -> usize {
    table
        .columns()
        .iter()
        .filter(|c| c.value_count == rows)
        .find_map(|c| c.chunks.first().map(|ch| ch.value_count as usize))
        .filter(|&n| n > 0)
        .unwrap_or(DEFAULT_BATCH_ROWS)
}

/// Runs `work`, turning a panic into a failure.
fn guarded<T>(work: impl FnOnce() -> Result<T, Failure>) -> Result<T, Failure> {
    panic::catch_unwind(AssertUnwindSafe(work)).unwrap_or_else(|p| {
        Err(format!(
            "internal error in tessera (please report it): {}",
            panic_message(p.as_ref())
        ))
    })
}

/// The decoding thread: opens the table, reports its schema (or why it cannot), then answers
/// each request with the next batch until the table ends, a batch fails or the stream is gone.
fn serve(
    path: &Path,
    columns: Option<Vec<String>>,
    batch_rows: Option<usize>,
    opened: SyncSender<Result<SchemaRef, Failure>>,
    requests: Receiver<()>,
    replies: SyncSender<Reply>,
) {
    let table = match guarded(|| TableReader::open(path).map_err(|e| at(path, e))) {
        Ok(t) => t,
        Err(e) => {
            let _ = opened.send(Err(e));
            return;
        }
    };
    let reader = match guarded(|| {
        ArrowTableReader::new(&table, columns.as_deref()).map_err(|e| at(path, e))
    }) {
        Ok(r) => r,
        Err(e) => {
            let _ = opened.send(Err(e));
            return;
        }
    };
    let rows = batch_rows.unwrap_or_else(|| chunk_rows(&table, reader.rows()));
    // The CPU engine: `batches` decodes each batch's fields in parallel on all cores.
    let mut engine = Engine::cpu();
    let mut batches = match guarded(|| reader.batches(rows, &mut engine).map_err(|e| at(path, e))) {
        Ok(b) => b,
        Err(e) => {
            let _ = opened.send(Err(e));
            return;
        }
    };
    if opened.send(Ok(reader.schema())).is_err() {
        return;
    }
    for () in requests.iter() {
        let reply = guarded(|| batches.next_batch().map_err(|e| at(path, e)));
        let last = !matches!(reply, Ok(Some(_)));
        if replies.send(reply).is_err() || last {
            return;
        }
    }
}

impl BatchStream {
    /// Opens the table at `path` on a thread of its own; fails (as the other reads do) when
    /// the file cannot be opened, is not a table, a column is unknown or a dictionary (read
    /// up front) is damaged.
    pub(crate) fn open(
        path: PathBuf,
        columns: Option<Vec<String>>,
        batch_rows: Option<usize>,
    ) -> Result<BatchStream, Failure> {
        if batch_rows == Some(0) {
            return Err("batch_rows must be at least 1".into());
        }
        let (opened_tx, opened_rx) = sync_channel(1);
        let (req_tx, req_rx) = sync_channel(1);
        let (rep_tx, rep_rx) = sync_channel(1);
        let worker = std::thread::Builder::new()
            .name("tessera-batches".into())
            .spawn(move || serve(&path, columns, batch_rows, opened_tx, req_rx, rep_tx))
            .map_err(|e| format!("cannot start the reading thread: {e}"))?;
        let schema = match opened_rx.recv() {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => {
                let _ = worker.join();
                return Err(e);
            }
            Err(_) => {
                let _ = worker.join();
                return Err("internal error in tessera: the reading thread ended".into());
            }
        };
        Ok(BatchStream {
            schema,
            requests: Some(req_tx),
            replies: rep_rx,
            worker: Some(worker),
        })
    }

    fn finish(&mut self) {
        self.requests = None;
        if let Some(w) = self.worker.take() {
            // The thread ends once it sees the closed channel; it holds no request then, so
            // the wait is for dropping the reader and unmapping the file.
            let _ = w.join();
        }
    }
}

impl Iterator for BatchStream {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        let asked = self.requests.as_ref()?.send(()).is_ok();
        let reply = if asked {
            self.replies.recv().unwrap_or_else(|_| {
                Err("internal error in tessera: the reading thread ended".into())
            })
        } else {
            Err("internal error in tessera: the reading thread ended".into())
        };
        match reply {
            Ok(Some(b)) => Some(Ok(b)),
            Ok(None) => {
                self.finish();
                None
            }
            Err(e) => {
                self.finish();
                Some(Err(ArrowError::ExternalError(e.into())))
            }
        }
    }
}

impl RecordBatchReader for BatchStream {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

impl Drop for BatchStream {
    fn drop(&mut self) {
        self.finish();
    }
}
