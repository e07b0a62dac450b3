//! Big-endian reading with bounds checks, and writing into a `Vec<u8>`.
//!
//! A [`Reader`] walks a window of the whole frame so that the offsets in
//! error messages are those of the frame, where a reader of a hex dump
//! looks for them.

use crate::decode_error::DecodeError;

#[derive(Clone)]
pub(crate) struct Reader<'a> {
    frame: &'a [u8],
    pos: usize,
    end: usize,
    /// The error (type, code) of reading past `end`.
    short: (u16, u16),
}

impl<'a> Reader<'a> {
    /// A reader of the whole `frame` whose truncation error is `short`.
    pub fn new(frame: &'a [u8], short: (u16, u16)) -> Self {
        Reader {
            frame,
            pos: 0,
            end: frame.len(),
            short,
        }
    }

    /// Offset in the frame of the next byte.
    pub fn pos(&self) -> usize {
        self.pos
    }

    pub fn remaining(&self) -> usize {
        self.end - self.pos
    }

    pub fn is_empty(&self) -> bool {
        self.pos == self.end
    }

    fn short(&self, what: &str, n: usize) -> DecodeError {
        DecodeError::new(
            self.short.0,
            self.short.1,
            format!(
                "{what} at byte {} needs {n} bytes, {} left",
                self.pos,
                self.remaining()
            ),
        )
    }

    /// The next `n` bytes.
    pub fn bytes(&mut self, n: usize, what: &str) -> Result<&'a [u8], DecodeError> {
        if n > self.remaining() {
            return Err(self.short(what, n));
        }
        let s = &self.frame[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// Everything left.
    pub fn rest(&mut self) -> &'a [u8] {
        let s = &self.frame[self.pos..self.end];
        self.pos = self.end;
        s
    }

    /// A reader of the next `n` bytes (consumed here) whose truncation
    /// error is `short`.
    pub fn sub(&mut self, n: usize, what: &str, short: (u16, u16)) -> Result<Self, DecodeError> {
        if n > self.remaining() {
            return Err(self.short(what, n));
        }
        let r = Reader {
            frame: self.frame,
            pos: self.pos,
            end: self.pos + n,
            short,
        };
        self.pos += n;
        Ok(r)
    }

    /// The next `n` bytes without consuming them.
    pub fn peek(&self, n: usize) -> Option<&'a [u8]> {
        (n <= self.remaining()).then(|| &self.frame[self.pos..self.pos + n])
    }

    pub fn skip(&mut self, n: usize, what: &str) -> Result<(), DecodeError> {
        self.bytes(n, what).map(|_| ())
    }

    pub fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], DecodeError> {
        let mut a = [0; N];
        a.copy_from_slice(self.bytes(N, what)?);
        Ok(a)
    }

    pub fn u8(&mut self, what: &str) -> Result<u8, DecodeError> {
        Ok(self.array::<1>(what)?[0])
    }

    pub fn u16(&mut self, what: &str) -> Result<u16, DecodeError> {
        Ok(u16::from_be_bytes(self.array(what)?))
    }

    pub fn u32(&mut self, what: &str) -> Result<u32, DecodeError> {
        Ok(u32::from_be_bytes(self.array(what)?))
    }

    pub fn u64(&mut self, what: &str) -> Result<u64, DecodeError> {
        Ok(u64::from_be_bytes(self.array(what)?))
    }

    /// A NUL-padded string field of `n` bytes, of which at most `n - 1`
    /// count (the last is the terminator the specification wants). Bytes
    /// that are not UTF-8 become '?', one each, so that encoding the string
    /// again fits the field.
    pub fn string(&mut self, n: usize, what: &str) -> Result<String, DecodeError> {
        let raw = self.bytes(n, what)?;
        let raw = &raw[..n.saturating_sub(1)];
        let raw = raw.split(|&b| b == 0).next().unwrap_or_default();
        let mut s = String::with_capacity(raw.len());
        for chunk in raw.utf8_chunks() {
            s.push_str(chunk.valid());
            s.extend(chunk.invalid().iter().map(|_| '?'));
        }
        Ok(s)
    }
}

/// Big-endian writes.
pub(crate) trait Put {
    fn u8(&mut self, v: u8);
    fn u16(&mut self, v: u16);
    fn u32(&mut self, v: u32);
    fn u64(&mut self, v: u64);
    fn zeros(&mut self, n: usize);
    /// `s` NUL-padded to `n` bytes, cut at a character boundary to leave
    /// room for the terminator.
    fn string(&mut self, s: &str, n: usize);
    /// Zeros up to the next multiple of 8 counted from `start`.
    fn pad8(&mut self, start: usize);
    /// Writes `v` over the two bytes at `at` (a length written afterwards).
    fn patch_u16(&mut self, at: usize, v: usize);
}

impl Put for Vec<u8> {
    fn u8(&mut self, v: u8) {
        self.push(v);
    }
    fn u16(&mut self, v: u16) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    fn u32(&mut self, v: u32) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    fn zeros(&mut self, n: usize) {
        self.resize(self.len() + n, 0);
    }
    fn string(&mut self, s: &str, n: usize) {
        let mut end = s.len().min(n.saturating_sub(1));
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        self.extend_from_slice(&s.as_bytes()[..end]);
        self.zeros(n - end);
    }
    fn pad8(&mut self, start: usize) {
        let len = self.len() - start;
        self.zeros(pad8(len) - len);
    }
    fn patch_u16(&mut self, at: usize, v: usize) {
        // Lengths of values too big for the wire saturate: encoding such a
        // value is the caller's mistake, not untrusted input.
        let v = u16::try_from(v).unwrap_or(u16::MAX);
        self[at..at + 2].copy_from_slice(&v.to_be_bytes());
    }
}

/// `n` rounded up to a multiple of 8.
pub(crate) fn pad8(n: usize) -> usize {
    n.div_ceil(8) * 8
}
