//! An IPFIX file (RFC 5655): messages back to back, templates once. Only
//! whole messages stay in it: the messages are written in batches, and a
//! write that fails (a full disk) cuts the file back to the end of the last
//! message the file system took whole; what was written and what was lost
//! is counted, and nothing more is written after the failure.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::encode::{Encoder, MAX_MESSAGE, Refresh};
use crate::error::Error;
use crate::export::Sent;
use crate::flow::Flow;

/// Bytes of messages gathered before they are written.
const BATCH: usize = 1 << 20;

/// What an IPFIX file holds once finished: whole messages only.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Written {
    pub messages: u64,
    /// Flow records in those messages.
    pub records: u64,
    pub bytes: u64,
}

/// The first failed operation and its error.
#[derive(Debug)]
struct Failure {
    op: &'static str,
    error: io::Error,
}

/// Writes an IPFIX file (RFC 5655): messages back to back, templates once.
#[derive(Debug)]
pub struct FileExporter {
    file: File,
    path: PathBuf,
    encoder: Encoder,
    /// Whole messages not yet written.
    pending: Vec<u8>,
    /// Where each pending message ends in `pending`, and its records.
    ends: Vec<(usize, u64)>,
    /// What the file holds.
    written: Written,
    /// Records handed to [`export`](Self::export) that the file will not
    /// hold (after a failure).
    lost: u64,
    failure: Option<Failure>,
}

impl FileExporter {
    /// Creates (or truncates) `path`.
    pub fn create(path: &Path, domain: u32) -> Result<FileExporter, Error> {
        let file = File::create(path).map_err(|source| Error::File {
            path: path.to_path_buf(),
            op: "create",
            source,
        })?;
        Ok(FileExporter {
            file,
            path: path.to_path_buf(),
            encoder: Encoder::new(domain, MAX_MESSAGE, Refresh::Once)?,
            pending: Vec::new(),
            ends: Vec::new(),
            written: Written::default(),
            lost: 0,
            failure: None,
        })
    }

    /// Appends `flows` stamped `now` (written with the next batch). After
    /// a failed write nothing more is written: the records are counted as
    /// lost and the failure is returned again.
    pub fn export_at(&mut self, flows: &[Flow], now: SystemTime) -> Result<Sent, Error> {
        if let Some(f) = &self.failure {
            self.lost += flows.len() as u64;
            return Err(f.again(&self.path));
        }
        let before = self.encoder.sequence();
        let messages = self.encoder.encode(flows, now)?;
        let mut sent = Sent {
            records: flows.len(),
            ..Sent::default()
        };
        for (i, m) in messages.iter().enumerate() {
            // The sequence number counts the records before a message.
            let next = messages
                .get(i + 1)
                .map_or(self.encoder.sequence(), |n| sequence_of(n));
            let records = u64::from(next.wrapping_sub(sequence_of(m)));
            self.pending.extend_from_slice(m);
            self.ends.push((self.pending.len(), records));
            sent.messages += 1;
            sent.bytes += m.len();
        }
        debug_assert_eq!(
            self.encoder.sequence().wrapping_sub(before) as usize,
            flows.len()
        );
        if self.pending.len() >= BATCH {
            self.write_pending()?;
        }
        Ok(sent)
    }

    /// Appends `flows` stamped with the current time.
    pub fn export(&mut self, flows: &[Flow]) -> Result<Sent, Error> {
        self.export_at(flows, SystemTime::now())
    }

    /// Writes what is pending and syncs the file. On a failure (now or
    /// earlier) the file holds only whole messages, and
    /// [`Error::FileCut`] says how many records it holds and how many were
    /// lost.
    pub fn finish(mut self) -> Result<Written, Error> {
        if self.failure.is_none() {
            let _ = self.write_pending();
        }
        if self.failure.is_none()
            && let Err(error) = self.file.sync_all()
        {
            // Nothing says which bytes reached the disk.
            self.failure = Some(Failure { op: "sync", error });
        }
        match self.failure.take() {
            None => Ok(self.written),
            Some(f) => Err(Error::FileCut {
                path: self.path,
                op: f.op,
                source: f.error,
                written: self.written.records,
                lost: self.lost,
            }),
        }
    }

    /// Writes the pending messages; on a failure, cuts the file back to
    /// the last whole message it took.
    fn write_pending(&mut self) -> Result<(), Error> {
        let mut done = 0;
        while done < self.pending.len() {
            match self.file.write(&self.pending[done..]) {
                Ok(0) => return self.fail(done, "write", io::ErrorKind::WriteZero.into()),
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return self.fail(done, "write", e),
            }
        }
        self.keep(self.pending.len());
        Ok(())
    }

    /// Counts the pending messages that end within `done` bytes as
    /// written and the others as lost; empties the batch.
    fn keep(&mut self, done: usize) -> u64 {
        let mut kept = 0;
        for &(end, records) in &self.ends {
            if end <= done {
                kept = end;
                self.written.messages += 1;
                self.written.records += records;
            } else {
                self.lost += records;
            }
        }
        self.written.bytes += kept as u64;
        self.pending.clear();
        self.ends.clear();
        kept as u64
    }

    fn fail(&mut self, done: usize, op: &'static str, error: io::Error) -> Result<(), Error> {
        self.keep(done);
        // Cut back to the last whole message (a pipe cannot be cut: what
        // it took stays taken).
        let error = match self.file.set_len(self.written.bytes) {
            Ok(()) => error,
            Err(cut) if self.file.metadata().is_ok_and(|m| !m.is_file()) => {
                let _ = cut;
                error
            }
            Err(cut) => io::Error::new(
                error.kind(),
                format!("{error}; cutting it back to its last whole message failed: {cut}"),
            ),
        };
        let f = Failure { op, error };
        let again = f.again(&self.path);
        self.failure = Some(f);
        Err(again)
    }
}

impl Failure {
    /// The failure as an [`Error`] of `path` (the same cause, again).
    fn again(&self, path: &Path) -> Error {
        Error::File {
            path: path.to_path_buf(),
            op: self.op,
            source: match self.error.raw_os_error() {
                Some(code) => io::Error::from_raw_os_error(code),
                None => io::Error::new(self.error.kind(), self.error.to_string()),
            },
        }
    }
}

/// The sequence number in a message's header (bytes 8..12).
fn sequence_of(message: &[u8]) -> u32 {
    u32::from_be_bytes([message[8], message[9], message[10], message[11]])
}
