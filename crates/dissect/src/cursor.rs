//! Bounds-checked reads over captured bytes and the output line, with
//! tcpdump's way of ending a line at the first missing byte
//! (` [|proto]`, naming the protocol being printed).

/// A read went past the captured bytes.
#[derive(Debug)]
pub(crate) struct Truncated;

pub(crate) type R<T> = Result<T, Truncated>;

/// The output being built and the protocol printing it.
pub(crate) struct Out {
    pub(crate) text: String,
    pub(crate) proto: &'static str,
    /// A read ran off the captured bytes mid-print (tcpdump's longjmp):
    /// the dumps then cover the whole frame, link header included.
    pub(crate) ran_off: bool,
}

impl Out {
    pub(crate) fn new(capacity: usize) -> Out {
        Out {
            text: String::with_capacity(capacity + 120),
            proto: "",
            ran_off: false,
        }
    }

    pub(crate) fn push(&mut self, s: &str) {
        self.text.push_str(s);
    }

    /// Appends tcpdump's truncation mark for the current protocol, where
    /// a printer checks the length itself before reading.
    pub(crate) fn truncated(&mut self) {
        self.text.push_str(" [|");
        self.text.push_str(self.proto);
        self.text.push(']');
    }

    /// Runs a printer; a read past the captured bytes ends the packet's
    /// line with the mark, as tcpdump's bounds-checked reads do.
    pub(crate) fn guard(&mut self, f: impl FnOnce(&mut Out) -> R<()>) {
        if f(self).is_err() {
            self.truncated();
            self.ran_off = true;
        }
    }
}

pub(crate) fn u8_at(b: &[u8], off: usize) -> R<u8> {
    b.get(off).copied().ok_or(Truncated)
}

pub(crate) fn u16_at(b: &[u8], off: usize) -> R<u16> {
    match b.get(off..off + 2) {
        Some(s) => Ok(u16::from_be_bytes([s[0], s[1]])),
        None => Err(Truncated),
    }
}

pub(crate) fn u32_at(b: &[u8], off: usize) -> R<u32> {
    match b.get(off..off + 4) {
        Some(s) => Ok(u32::from_be_bytes([s[0], s[1], s[2], s[3]])),
        None => Err(Truncated),
    }
}

pub(crate) fn bytes_at(b: &[u8], off: usize, len: usize) -> R<&[u8]> {
    b.get(off..off + len).ok_or(Truncated)
}
