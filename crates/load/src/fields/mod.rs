//! HTTP fields as HTTP/2's HPACK (RFC 7541) and HTTP/3's QPACK (RFC 9204)
//! carry them: what the two codecs share, written once. QPACK took its
//! integers, string literals and Huffman code from HPACK (RFC 9204 §4.1),
//! both protocols send a request's fields in the same order and leave out
//! the same connection-specific ones (RFC 9113 §8.2.2, RFC 9114 §4.2), and
//! both hold a response head to the same rules (RFC 9113 §8.2, §8.3.2;
//! RFC 9114 §4.2, §4.3.2). What differs is the codecs' tables and how they
//! index them, which stay in `quic::codec` and `tcp::h2codec`.

mod coding;
mod request;
mod response;

pub(crate) use coding::{huffman_len, prefix_int, put_int, put_string, string, text_to_vec};
pub(crate) use request::request_fields;
pub(crate) use response::SectionReader;
#[cfg(test)]
pub(crate) use response::NAME_BUF;

/// Why a field section was refused, in the words both protocols use: the
/// caller maps it to its own error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FieldError {
    /// The section does not decode (a bad integer, index or Huffman code,
    /// a literal cut short): QPACK_DECOMPRESSION_FAILED or HTTP/2's
    /// COMPRESSION_ERROR, a connection error in both.
    Undecodable(&'static str),
    /// The section decodes but the message is malformed (RFC 9113 §8.1.1,
    /// RFC 9114 §4.1.2): a stream error, H3_MESSAGE_ERROR or HTTP/2's
    /// PROTOCOL_ERROR.
    Malformed(&'static str),
}

/// A field line's name or value as its section carries it, so that only
/// what a caller needs gets decoded.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Text<'a> {
    /// A static table's entry, known to be valid.
    Static(&'static str),
    /// A literal's bytes, or a dynamic table's (decoded when inserted).
    Plain(&'a [u8]),
    /// A Huffman-coded literal, still coded.
    Huffman(&'a [u8]),
}

/// What the codecs' tests share.
#[cfg(test)]
pub(crate) mod testing;
