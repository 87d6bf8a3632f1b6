//! The deterministic byte pattern `/bytes/{n}` serves.
//!
//! Byte `i` of every response is `i mod 251`. The period is prime, so it does
//! not divide the chunk size: a lost, repeated or reordered chunk changes the
//! bytes and a client check catches it. Chunks are zero-copy slices of one
//! static buffer, so a 1 GB response allocates nothing per request.

use bytes::Bytes;

/// Length of the repeating pattern.
pub const PATTERN_PERIOD: usize = 251;
/// Largest chunk handed to the transport at once.
pub const CHUNK_SIZE: usize = 64 * 1024;

const BUFFER_LEN: usize = CHUNK_SIZE + PATTERN_PERIOD;
static PATTERN: [u8; BUFFER_LEN] = build_pattern();

const fn build_pattern() -> [u8; BUFFER_LEN] {
    let mut buffer = [0u8; BUFFER_LEN];
    let mut i = 0;
    while i < BUFFER_LEN {
        buffer[i] = (i % PATTERN_PERIOD) as u8;
        i += 1;
    }
    buffer
}

/// The byte at `offset` in any `/bytes/{n}` response, for checking bodies.
#[cfg(test)]
pub fn pattern_byte(offset: u64) -> u8 {
    (offset % PATTERN_PERIOD as u64) as u8
}

/// Hands out the chunks of an `n`-byte pattern body in order.
#[derive(Debug)]
pub struct PatternCursor {
    sent: u64,
    total: u64,
}

impl PatternCursor {
    pub fn new(total: u64) -> Self {
        Self { sent: 0, total }
    }

    /// Bytes not handed out yet.
    pub fn remaining(&self) -> u64 {
        self.total - self.sent
    }

    /// The next chunk (at most [`CHUNK_SIZE`] bytes), or `None` when done.
    pub fn next_chunk(&mut self) -> Option<Bytes> {
        let len = self.remaining().min(CHUNK_SIZE as u64) as usize;
        if len == 0 {
            return None;
        }
        let start = (self.sent % PATTERN_PERIOD as u64) as usize;
        self.sent += len as u64;
        Some(Bytes::from_static(&PATTERN[start..start + len]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(total: u64) -> Vec<Bytes> {
        let mut cursor = PatternCursor::new(total);
        std::iter::from_fn(|| cursor.next_chunk()).collect()
    }

    #[test]
    fn empty_body_has_no_chunks() {
        assert!(drain(0).is_empty());
    }

    #[test]
    fn chunks_cover_exactly_n_bytes_of_the_pattern() {
        let total = 3 * CHUNK_SIZE as u64 + 12_345;
        let chunks = drain(total);
        assert_eq!(chunks.len(), 4);
        assert!(chunks.iter().all(|c| c.len() <= CHUNK_SIZE));
        let body: Vec<u8> = chunks.concat();
        assert_eq!(body.len() as u64, total);
        for (offset, byte) in body.iter().enumerate() {
            assert_eq!(*byte, pattern_byte(offset as u64), "offset {offset}");
        }
    }

    #[test]
    fn period_does_not_divide_chunk_size() {
        assert_ne!(CHUNK_SIZE % PATTERN_PERIOD, 0);
        let chunks = drain(2 * CHUNK_SIZE as u64);
        assert_ne!(chunks[0], chunks[1]);
    }
}
