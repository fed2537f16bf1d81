//! Bounded output: the head of a stream, a ring buffer of its tail, and a count of the rest.

use std::collections::VecDeque;

/// A piece of a stream, read "since" an offset.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OutputChunk {
    /// The offset of the first byte of `bytes` in the stream.
    pub start: u64,
    /// The bytes, as the child wrote them (not necessarily UTF-8, and a read may split a
    /// character; decoding is the caller's job).
    pub bytes: Vec<u8>,
    /// Bytes between the offset asked for and `start` that were not kept (they fell between
    /// the head and the tail).
    pub skipped: u64,
    /// The offset after `bytes`: pass it as `since` to read on.
    pub next: u64,
    /// Everything the stream has produced so far (its current end offset).
    pub total: u64,
}

/// A whole stream as kept: head, tail, and how much was dropped between them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OutputSnapshot {
    /// The first bytes of the stream.
    pub head: Vec<u8>,
    /// The last bytes of the stream, following `head` after `dropped` bytes.
    pub tail: Vec<u8>,
    /// Bytes produced but not kept.
    pub dropped: u64,
    /// Bytes produced in total.
    pub total: u64,
}

impl OutputSnapshot {
    /// Head and tail joined, with `marker(dropped)` between them when bytes were dropped.
    pub fn joined(&self, marker: impl FnOnce(u64) -> Vec<u8>) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.head.len() + self.tail.len() + 64);
        out.extend_from_slice(&self.head);
        if self.dropped > 0 {
            out.extend(marker(self.dropped));
        }
        out.extend_from_slice(&self.tail);
        out
    }

    /// [`Self::joined`] as text (invalid UTF-8 replaced), with `[N bytes left out]` on a
    /// line of its own where bytes were dropped.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.joined(|n| format!("\n[{n} bytes left out]\n").into_bytes()))
            .into_owned()
    }
}

/// One stream's bytes: `head` holds offsets `[0, head.len())`, `tail` holds
/// `[total - tail.len(), total)`, and nothing in between is kept.
#[derive(Debug)]
pub(crate) struct OutputBuffer {
    head_cap: usize,
    tail_cap: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: u64,
}

impl OutputBuffer {
    pub(crate) fn new(head_cap: usize, tail_cap: usize) -> Self {
        Self {
            head_cap,
            tail_cap,
            head: Vec::new(),
            tail: VecDeque::new(),
            total: 0,
        }
    }

    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    pub(crate) fn push(&mut self, mut data: &[u8]) {
        self.total += data.len() as u64;
        if self.head.len() < self.head_cap {
            let n = (self.head_cap - self.head.len()).min(data.len());
            self.head.extend_from_slice(&data[..n]);
            data = &data[n..];
        }
        if data.is_empty() || self.tail_cap == 0 {
            return;
        }
        if data.len() >= self.tail_cap {
            self.tail.clear();
            self.tail.extend(&data[data.len() - self.tail_cap..]);
        } else {
            let over = (self.tail.len() + data.len()).saturating_sub(self.tail_cap);
            self.tail.drain(..over);
            self.tail.extend(data);
        }
    }

    /// `n` bytes the stream produced that were never seen here (a relaying backend's
    /// source dropped them): counted, and the tail starts again after them.
    pub(crate) fn skip(&mut self, n: u64) {
        if n > 0 {
            self.total += n;
            self.tail.clear();
        }
    }

    fn tail_start(&self) -> u64 {
        self.total - self.tail.len() as u64
    }

    pub(crate) fn read(&self, since: u64, max: usize) -> OutputChunk {
        let head_len = self.head.len() as u64;
        let (start, bytes) = if since < head_len {
            // `since < head_len <= usize::MAX`, so these conversions are exact.
            let from = since as usize;
            let to = from.saturating_add(max).min(self.head.len());
            (since, self.head[from..to].to_vec())
        } else {
            let start = since.max(self.tail_start()).min(self.total);
            let from = (start - self.tail_start()) as usize;
            let to = from.saturating_add(max).min(self.tail.len());
            (start, self.tail.range(from..to).copied().collect())
        };
        OutputChunk {
            start,
            skipped: start.saturating_sub(since),
            next: start + bytes.len() as u64,
            total: self.total,
            bytes,
        }
    }

    pub(crate) fn snapshot(&self) -> OutputSnapshot {
        OutputSnapshot {
            head: self.head.clone(),
            tail: self.tail.iter().copied().collect(),
            dropped: self.total - self.head.len() as u64 - self.tail.len() as u64,
            total: self.total,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filled(head: usize, tail: usize, n: u8) -> OutputBuffer {
        let mut b = OutputBuffer::new(head, tail);
        for i in 0..n {
            b.push(&[i]);
        }
        b
    }

    #[test]
    fn keeps_head_and_tail_and_counts_the_rest() {
        let b = filled(3, 4, 20);
        let s = b.snapshot();
        assert_eq!(s.head, vec![0, 1, 2]);
        assert_eq!(s.tail, vec![16, 17, 18, 19]);
        assert_eq!(s.dropped, 13);
        assert_eq!(s.total, 20);
        assert_eq!(s.joined(|n| format!("[{n}]").into_bytes()).len(), 3 + 4 + 4);
    }

    #[test]
    fn big_writes_keep_only_the_last_tail_bytes() {
        let mut b = OutputBuffer::new(2, 3);
        b.push(b"abcdefghij");
        let s = b.snapshot();
        assert_eq!(
            (s.head.as_slice(), s.tail.as_slice()),
            (&b"ab"[..], &b"hij"[..])
        );
        assert_eq!(s.dropped, 5);
    }

    #[test]
    fn reads_since_an_offset_report_what_was_skipped() {
        let b = filled(3, 4, 20);
        let c = b.read(0, 100);
        assert_eq!((c.bytes, c.skipped, c.next), (vec![0, 1, 2], 0, 3));
        let c = b.read(3, 100);
        assert_eq!((c.start, c.skipped, c.next), (16, 13, 20));
        assert_eq!(c.bytes, vec![16, 17, 18, 19]);
        let c = b.read(17, 2);
        assert_eq!((c.bytes, c.next), (vec![17, 18], 19));
        let c = b.read(20, 10);
        assert!(c.bytes.is_empty());
        assert_eq!((c.next, c.total), (20, 20));
        // Past the end: nothing, and no underflow.
        let c = b.read(99, 10);
        assert_eq!((c.start, c.skipped, c.bytes.len()), (20, 0, 0));
    }

    #[test]
    fn a_stream_shorter_than_the_head_is_all_in_the_head() {
        let b = filled(8, 0, 5);
        assert_eq!(b.read(2, 100).bytes, vec![2, 3, 4]);
        assert_eq!(b.snapshot().dropped, 0);
    }
}
