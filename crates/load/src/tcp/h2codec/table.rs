//! The HPACK dynamic table (RFC 7541 §2.3.2, §4) a decoder keeps in step
//! with the server's encoder.

use std::collections::VecDeque;

use crate::fields::{text_to_vec, FieldError, Text};

/// What an entry adds to the table's size beyond its name and value
/// (RFC 7541 §4.1).
const ENTRY_OVERHEAD: usize = 32;

/// One entry: its name then its value, decoded, in one allocation.
pub(super) struct Entry {
    bytes: Vec<u8>,
    name_len: usize,
}

impl Entry {
    /// An entry of this name and value, Huffman-decoded if they are coded.
    pub(super) fn new(name: Text<'_>, value: Text<'_>) -> Result<Self, FieldError> {
        let mut bytes = Vec::with_capacity(decoded_bound(name) + decoded_bound(value));
        text_to_vec(name, &mut bytes)?;
        let name_len = bytes.len();
        text_to_vec(value, &mut bytes)?;
        Ok(Self { bytes, name_len })
    }

    pub(super) fn name(&self) -> &[u8] {
        &self.bytes[..self.name_len]
    }

    pub(super) fn value(&self) -> &[u8] {
        &self.bytes[self.name_len..]
    }

    /// Its size as the RFC counts it (§4.1).
    fn size(&self) -> usize {
        self.bytes.len() + ENTRY_OVERHEAD
    }
}

/// How many bytes `text` decodes to at most: 8 per 5 bits of Huffman code,
/// the shortest code being 5 bits.
fn decoded_bound(text: Text<'_>) -> usize {
    match text {
        Text::Static(text) => text.len(),
        Text::Plain(text) => text.len(),
        Text::Huffman(coded) => coded.len() * 8 / 5,
    }
}

/// The entries, newest first, and their size against the maximum the
/// encoder last set.
pub(super) struct DynamicTable {
    entries: VecDeque<Entry>,
    size: usize,
    max_size: usize,
}

impl DynamicTable {
    pub(super) fn new(max_size: usize) -> Self {
        Self {
            entries: VecDeque::new(),
            size: 0,
            max_size,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(super) fn max_size(&self) -> usize {
        self.max_size
    }

    /// The entry at `index`, 0 being the newest (HPACK index 62, §2.3.3).
    pub(super) fn get(&self, index: usize) -> Option<&Entry> {
        self.entries.get(index)
    }

    /// Adds an entry, evicting the oldest until it fits (§4.4). One larger
    /// than the whole table empties it and is not added.
    pub(super) fn insert(&mut self, entry: Entry) {
        let size = entry.size();
        if size > self.max_size {
            self.evict_to(0);
            return;
        }
        self.evict_to(self.max_size - size);
        self.size += size;
        self.entries.push_front(entry);
    }

    /// Sets the maximum size, evicting what no longer fits (§4.3).
    pub(super) fn set_max_size(&mut self, max_size: usize) {
        self.max_size = max_size;
        self.evict_to(max_size);
    }

    /// The table's size (§4.1).
    #[cfg(test)]
    pub(super) fn size(&self) -> usize {
        self.size
    }

    /// Evicts the oldest entries until the size is at most `limit`.
    fn evict_to(&mut self, limit: usize) {
        while self.size > limit {
            let evicted = self.entries.pop_back().expect("a table of size > 0");
            self.size -= evicted.size();
        }
    }

    /// The entries as text, newest first, for tests to compare.
    #[cfg(test)]
    pub(super) fn entries(&self) -> Vec<(String, String)> {
        let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
        self.entries
            .iter()
            .map(|entry| (text(entry.name()), text(entry.value())))
            .collect()
    }
}
