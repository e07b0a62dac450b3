//! The bytes of a capture, read in order through a large buffer: a file,
//! a FIFO, a pipe or standard input (`-`), never mapped, seeked or read
//! whole first (a pipe from `tcpdump -w -` may never end).
//!
//! A stream (anything but a regular file) given a stop flag waits for its
//! bytes in `poll`s of 50 ms, so that setting the flag (a signal handler,
//! on whatever thread it ran) ends a wait on a writer that has nothing to
//! say; any input given a stop flag reads no more once it is set, and the
//! records already in the buffer are still delivered.

use std::fs::File;
use std::io::Read;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// Size of the read buffer: one `read(2)` per 256 KiB of a file (it grows
/// for longer records). Larger buffers read no faster and only add to the
/// process's resident memory, which a replay is measured by against tcpdump.
pub(crate) const BUF_SIZE: usize = 256 << 10;

/// How long a stream's reader waits before it looks at its stop flag again.
const POLL_MS: i32 = 50;

/// The name of standard input on the command line.
pub const STDIN: &str = "-";

/// Whether `path` names standard input (`-`).
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == STDIN
}

/// Whether `path` is read as a stream, once, in order: standard input, a
/// FIFO, a character device or a socket (anything but a regular file, which
/// can be opened again from its start).
pub fn is_stream(path: &Path) -> bool {
    is_stdin(path) || std::fs::metadata(path).is_ok_and(|m| !m.is_file())
}

/// The name errors give `path`.
pub(crate) fn display_name(path: &Path) -> PathBuf {
    if is_stdin(path) {
        PathBuf::from("standard input")
    } else {
        path.to_path_buf()
    }
}

/// An input opened for reading: the file and whether it is a stream.
pub(crate) struct Opened {
    pub(crate) file: File,
    pub(crate) stream: bool,
}

/// Opens `path`, or standard input for `-`. Given a stop flag, a FIFO is
/// opened without waiting for a writer (`O_NONBLOCK`, cleared at once):
/// opening one blocks until a writer comes, and the signal handlers that
/// set the flag restart the call (`SA_RESTART`), so a signal would not end
/// that wait; its reader polls for the writer instead ([`wait_readable`]).
pub(crate) fn open_stream_aware(
    path: &Path,
    stop: Option<&'static AtomicBool>,
) -> std::io::Result<Opened> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let file = if is_stdin(path) {
        File::from(std::io::stdin().as_fd().try_clone_to_owned()?)
    } else if stop.is_some() && std::fs::metadata(path)?.file_type().is_fifo() {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)?;
        set_blocking(&file)?;
        file
    } else {
        File::open(path)?
    };
    let stream = !file.metadata()?.is_file();
    Ok(Opened { file, stream })
}

/// Clears `O_NONBLOCK`: reads wait for the bytes again.
fn set_blocking(file: &File) -> std::io::Result<()> {
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a descriptor `file` owns, with integer arguments.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0
        // SAFETY: as above.
        || unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0
    {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Waits until a stream has bytes (or its end) to read, looking at `stop`
/// every 50 ms; false once it is set. A FIFO no writer has opened yet
/// waits here: Linux reports neither bytes nor an end on it until one has.
pub(crate) fn wait_readable(file: &File, stop: &AtomicBool) -> std::io::Result<bool> {
    loop {
        if stop.load(Ordering::Relaxed) {
            return Ok(false);
        }
        if poll_in(file.as_raw_fd(), POLL_MS)? {
            return Ok(true);
        }
    }
}

/// What [`Input::fill`] stops with once its stop flag is set.
pub(crate) fn stopped_error() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::Interrupted, "stopped")
}

/// A reader (a file, bytes in memory) through a large buffer.
pub(crate) struct Input {
    file: Box<dyn Read + Send>,
    /// A stream's descriptor (the file in `file`), polled while waiting.
    stream: Option<RawFd>,
    stop: Option<&'static AtomicBool>,
    /// Whether reading ended on the stop flag.
    pub(crate) stopped: bool,
    pub(crate) buf: Vec<u8>,
    /// Unread bytes are `buf[pos..end]`.
    pub(crate) pos: usize,
    pub(crate) end: usize,
    /// Offset in the input of `buf[pos]`.
    pub(crate) offset: u64,
}

impl Input {
    pub(crate) fn new(file: Box<dyn Read + Send>) -> Input {
        Input::with_buffer(file, vec![0; BUF_SIZE], 0)
    }

    /// `file` through `buf`, whose first `end` bytes are the input's first.
    fn with_buffer(file: Box<dyn Read + Send>, buf: Vec<u8>, end: usize) -> Input {
        Input {
            file,
            stream: None,
            stop: None,
            stopped: false,
            buf,
            pos: 0,
            end,
            offset: 0,
        }
    }

    /// A file's first bytes, through a buffer of `size` bytes (grown as
    /// the bytes come): a header read apart from the records.
    pub(crate) fn head(
        file: Box<dyn Read + Send>,
        size: usize,
        stop: Option<&'static AtomicBool>,
    ) -> Input {
        let mut input = Input::with_buffer(file, vec![0; size.max(16)], 0);
        input.stop = stop;
        input
    }

    /// The bytes `held` (read already, from `offset` of the input), then
    /// `file` (the input's bytes after them): the held bytes are the
    /// buffer, read without a copy.
    pub(crate) fn after(
        held: Vec<u8>,
        file: Box<dyn Read + Send>,
        offset: u64,
        stop: Option<&'static AtomicBool>,
    ) -> Input {
        if held.is_empty() {
            return Input::at(file, offset, stop);
        }
        let end = held.len();
        let mut input = Input::with_buffer(file, held, end);
        input.offset = offset;
        input.stop = stop;
        input
    }

    /// `file`, whose next byte is at `offset` of its input (a byte range of
    /// a regular file), read no more once `stop` is set.
    pub(crate) fn at(
        file: Box<dyn Read + Send>,
        offset: u64,
        stop: Option<&'static AtomicBool>,
    ) -> Input {
        let mut input = Input::new(file);
        input.offset = offset;
        input.stop = stop;
        input
    }

    /// An opened file; a stream is polled while a stop flag is set.
    pub(crate) fn of(opened: Opened, stop: Option<&'static AtomicBool>) -> Input {
        let fd = opened.file.as_raw_fd();
        let mut input = Input::new(Box::new(opened.file));
        input.stream = opened.stream.then_some(fd);
        input.stop = stop;
        input
    }

    pub(crate) fn is_stream(&self) -> bool {
        self.stream.is_some()
    }

    /// Unread bytes in the buffer.
    #[inline]
    pub(crate) fn have(&self) -> usize {
        self.end - self.pos
    }

    /// Takes `n` buffered bytes as read.
    #[inline]
    pub(crate) fn consume(&mut self, n: usize) {
        self.pos += n;
        self.offset += n as u64;
    }

    /// Whether the next record would wait for a stream's writer: nothing
    /// is buffered and nothing is ready to read.
    #[inline]
    pub(crate) fn would_wait(&self) -> bool {
        match self.stream {
            Some(fd) => self.have() == 0 && !poll_in(fd, 0).unwrap_or(true),
            None => false,
        }
    }

    /// Makes `buf[pos..end]` at least `need` bytes long if the input has
    /// them; false at its end. Once the stop flag is set it reads no more
    /// and fails with [`stopped_error`] (and sets `stopped`).
    #[cold]
    pub(crate) fn fill(&mut self, need: usize) -> std::io::Result<bool> {
        if self.pos + need > self.buf.len() {
            self.buf.copy_within(self.pos..self.end, 0);
            self.end -= self.pos;
            self.pos = 0;
        }
        while self.end - self.pos < need {
            if self.end == self.buf.len() {
                // Grown as the bytes come, not as a (maybe corrupt)
                // length asks.
                let more = (self.buf.len() * 2).min(need.max(BUF_SIZE));
                self.buf.resize(more, 0);
            }
            if !self.wait()? {
                self.stopped = true;
                return Err(stopped_error());
            }
            match self.file.read(&mut self.buf[self.end..]) {
                Ok(0) => return Ok(false),
                Ok(n) => self.end += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    /// Waits until a read would not block, looking at the stop flag every
    /// 50 ms; false once the flag is set.
    fn wait(&self) -> std::io::Result<bool> {
        let Some(stop) = self.stop else {
            return Ok(true);
        };
        loop {
            if stop.load(Ordering::Relaxed) {
                return Ok(false);
            }
            let Some(fd) = self.stream else {
                return Ok(true);
            };
            if poll_in(fd, POLL_MS)? {
                return Ok(true);
            }
        }
    }
}

/// Whether `fd` has bytes (or its end) to read within `ms` milliseconds; a
/// signal is taken as not yet.
fn poll_in(fd: RawFd, ms: i32) -> std::io::Result<bool> {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, for the call's duration.
    let r = unsafe { libc::poll(&mut p, 1, ms) };
    if r < 0 {
        let e = std::io::Error::last_os_error();
        return if e.kind() == std::io::ErrorKind::Interrupted {
            Ok(false)
        } else {
            Err(e)
        };
    }
    Ok(r > 0)
}

/// What a record reader tells of a failed read; `None` when it failed
/// because the stop flag was set (the source ends there, cleanly).
#[cold]
pub(crate) fn read_failed(input: &Input, e: &std::io::Error) -> Option<String> {
    (!input.stopped).then(|| format!("read failed: {}", crate::error::cause(e)))
}
