//! Encodes a decoded body with its recorded `content-encoding`, padded to
//! the recorded size on the wire.
//!
//! A HAR keeps a compressed response decoded, with the size it had on the
//! wire. Compressing it again rarely gives that size exactly: another
//! compressor, another level. Each format has a place for bytes a decoder
//! skips, so a body that comes out smaller is padded there: gzip's header
//! comment, empty stored deflate blocks, a brotli metadata block, a zstd
//! skippable frame. A body that comes out larger is left larger.

use std::io::Write;

use anyhow::{Context, Result};
use flate2::Compression;

/// The encodings h3lab can replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// `gzip` (RFC 1952).
    Gzip,
    /// `deflate`: zlib-wrapped deflate (RFC 1950), as HTTP means it.
    Deflate,
    /// `br` (RFC 7932).
    Brotli,
    /// `zstd` (RFC 8878).
    Zstd,
}

impl Encoding {
    /// The encoding a `content-encoding` value names; `None` for identity
    /// or one h3lab cannot produce.
    pub fn from_header(value: &str) -> Option<Encoding> {
        match value.trim().to_ascii_lowercase().as_str() {
            "gzip" | "x-gzip" => Some(Encoding::Gzip),
            "deflate" => Some(Encoding::Deflate),
            "br" => Some(Encoding::Brotli),
            "zstd" => Some(Encoding::Zstd),
            _ => None,
        }
    }
}

/// `decoded` encoded with `encoding`, padded up to `wire_bytes` if smaller.
pub fn encode(decoded: &[u8], encoding: Encoding, wire_bytes: Option<u64>) -> Result<Vec<u8>> {
    let encoded = compress(decoded, encoding).context("compressing a body")?;
    let Some(target) = wire_bytes.and_then(|n| usize::try_from(n).ok()) else {
        return Ok(encoded);
    };
    if target <= encoded.len() {
        return Ok(encoded);
    }
    let padding = target - encoded.len();
    Ok(match encoding {
        Encoding::Gzip => gzip(decoded, Some(padding))?,
        Encoding::Deflate => pad_zlib(encoded, padding),
        Encoding::Brotli => pad_brotli(encoded, padding),
        Encoding::Zstd => pad_zstd(encoded, padding),
    })
}

fn compress(decoded: &[u8], encoding: Encoding) -> Result<Vec<u8>> {
    match encoding {
        Encoding::Gzip => gzip(decoded, None),
        Encoding::Deflate => {
            let mut writer = flate2::write::ZlibEncoder::new(Vec::new(), Compression::best());
            writer.write_all(decoded)?;
            Ok(writer.finish()?)
        }
        Encoding::Brotli => {
            let mut out = Vec::new();
            let mut writer = brotli::CompressorWriter::new(&mut out, 4096, 11, 22);
            writer.write_all(decoded)?;
            drop(writer);
            Ok(out)
        }
        Encoding::Zstd => Ok(zstd::bulk::compress(decoded, 19)?),
    }
}

/// gzip at the best level; `padding` more bytes ride in the header's
/// comment (its text and the zero that ends it), up to the 64 KiB that
/// decoders such as flate2's accept in a header field.
fn gzip(decoded: &[u8], padding: Option<usize>) -> Result<Vec<u8>> {
    const LONGEST_COMMENT: usize = 65_000;
    let mut builder = flate2::GzBuilder::new();
    if let Some(padding) = padding {
        let text = padding.saturating_sub(1).min(LONGEST_COMMENT);
        builder = builder.comment(vec![b' '; text]);
    }
    let mut writer = builder.write(Vec::new(), Compression::best());
    writer.write_all(decoded)?;
    Ok(writer.finish()?)
}

/// Empty stored blocks (5 bytes each, not final) right after the zlib
/// header: the deflate stream decodes to the same bytes, and the Adler-32
/// at the end covers only those.
fn pad_zlib(encoded: Vec<u8>, padding: usize) -> Vec<u8> {
    const EMPTY_STORED_BLOCK: [u8; 5] = [0x00, 0x00, 0x00, 0xff, 0xff];
    let blocks = padding / EMPTY_STORED_BLOCK.len();
    let mut out = Vec::with_capacity(encoded.len() + padding);
    out.extend_from_slice(&encoded[..2]);
    for _ in 0..blocks {
        out.extend_from_slice(&EMPTY_STORED_BLOCK);
    }
    out.extend_from_slice(&encoded[2..]);
    out
}

/// A skippable frame (magic, length, then the bytes) after the data frame;
/// it needs at least 8 bytes.
fn pad_zstd(mut encoded: Vec<u8>, padding: usize) -> Vec<u8> {
    const SKIPPABLE_MAGIC: u32 = 0x184D_2A50;
    const FRAME_HEADER: usize = 8;
    if padding < FRAME_HEADER {
        return encoded;
    }
    let length = (padding - FRAME_HEADER) as u32;
    encoded.extend_from_slice(&SKIPPABLE_MAGIC.to_le_bytes());
    encoded.extend_from_slice(&length.to_le_bytes());
    encoded.resize(encoded.len() + length as usize, 0);
    encoded
}

/// A metadata meta-block (RFC 7932 §9.2) between the stream's window
/// header and its first meta-block, sized so the stream grows by
/// `padding` bytes, or as close below as the block's framing allows.
fn pad_brotli(encoded: Vec<u8>, padding: usize) -> Vec<u8> {
    let window_bits = brotli_window_header_bits(encoded[0]);
    let Some((skip_bytes, skip_len)) = metadata_block_size(window_bits, padding) else {
        return encoded;
    };
    let mut out = BitWriter::default();
    out.copy_bits(&encoded, 0, window_bits);
    out.push(0, 1); // ISLAST
    out.push(3, 2); // MNIBBLES = 0: a metadata block
    out.push(0, 1); // reserved
    out.push(skip_bytes as u64, 2);
    if skip_bytes > 0 {
        out.push(skip_len as u64 - 1, 8 * skip_bytes);
    }
    out.align();
    out.bytes.resize(out.bytes.len() + skip_len, 0);
    out.copy_bits(&encoded, window_bits, encoded.len() * 8 - window_bits);
    out.bytes
}

/// How many bits the stream's WBITS field takes (1, 4 or 7).
fn brotli_window_header_bits(first: u8) -> usize {
    match (first & 1, (first >> 1) & 7) {
        (0, _) => 1,
        (_, 0) => 7,
        _ => 4,
    }
}

/// `(MSKIPBYTES, MSKIPLEN)` of the metadata block that grows the stream
/// most without growing it by more than `padding` bytes.
fn metadata_block_size(window_bits: usize, padding: usize) -> Option<(usize, usize)> {
    (0..=3usize)
        .filter_map(|skip_bytes| {
            // The window header and the block's framing, padded to a
            // byte, then the contents; the rest of the stream, realigned,
            // keeps its length in bytes.
            let framing = (window_bits + 6 + 8 * skip_bytes).div_ceil(8);
            let (lowest, highest) = match skip_bytes {
                0 => (0, 0),
                1 => (1, 256),
                n => (1 + (1 << (8 * (n - 1))), 1 << (8 * n)),
            };
            let skip_len = padding.checked_sub(framing)?.min(highest);
            (skip_len >= lowest).then_some((framing + skip_len, skip_bytes, skip_len))
        })
        .max()
        .map(|(_, skip_bytes, skip_len)| (skip_bytes, skip_len))
}

/// Bits written least significant first, as brotli reads them.
#[derive(Default)]
struct BitWriter {
    bytes: Vec<u8>,
    used: usize,
}

impl BitWriter {
    fn push(&mut self, value: u64, bits: usize) {
        for i in 0..bits {
            self.push_bit(((value >> i) & 1) as u8);
        }
    }

    fn push_bit(&mut self, bit: u8) {
        if self.used % 8 == 0 {
            self.bytes.push(0);
        }
        let last = self.bytes.len() - 1;
        self.bytes[last] |= bit << (self.used % 8);
        self.used += 1;
    }

    fn align(&mut self) {
        self.used = self.bytes.len() * 8;
    }

    fn copy_bits(&mut self, from: &[u8], start: usize, count: usize) {
        for position in start..start + count {
            self.push_bit((from[position / 8] >> (position % 8)) & 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    fn decode(bytes: &[u8], encoding: Encoding) -> Vec<u8> {
        let mut out = Vec::new();
        match encoding {
            Encoding::Gzip => flate2::read::GzDecoder::new(bytes)
                .read_to_end(&mut out)
                .unwrap(),
            Encoding::Deflate => flate2::read::ZlibDecoder::new(bytes)
                .read_to_end(&mut out)
                .unwrap(),
            Encoding::Brotli => brotli::Decompressor::new(bytes, 4096)
                .read_to_end(&mut out)
                .unwrap(),
            Encoding::Zstd => {
                out = zstd::stream::decode_all(bytes).unwrap();
                0
            }
        };
        out
    }

    fn text(len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| b"<p>lorem ipsum dolor sit amet</p>\n"[i % 34] ^ ((i / 97) as u8 & 1))
            .collect()
    }

    const ALL: [Encoding; 4] = [
        Encoding::Gzip,
        Encoding::Deflate,
        Encoding::Brotli,
        Encoding::Zstd,
    ];

    #[test]
    fn padded_bodies_decode_to_the_original_at_the_recorded_size() {
        let original = text(20_000);
        for encoding in ALL {
            let plain = encode(&original, encoding, None).unwrap();
            for extra in [9, 13, 200, 300, 60_000] {
                let target = (plain.len() + extra) as u64;
                let padded = encode(&original, encoding, Some(target)).unwrap();
                assert_eq!(decode(&padded, encoding), original, "{encoding:?} +{extra}");
                let short = target - padded.len() as u64;
                assert!(short < 5, "{encoding:?} +{extra}: {short} bytes short");
            }
        }
    }

    #[test]
    fn brotli_pads_every_window_header_width_exactly() {
        for window in [10, 16, 22] {
            let mut out = Vec::new();
            let mut writer = brotli::CompressorWriter::new(&mut out, 4096, 5, window);
            writer.write_all(&text(3000)).unwrap();
            drop(writer);
            for padding in 2..600 {
                let padded = pad_brotli(out.clone(), padding);
                assert_eq!(
                    decode(&padded, Encoding::Brotli),
                    text(3000),
                    "lgwin {window}"
                );
                assert!(padded.len() <= out.len() + padding);
                assert!(
                    padded.len() + 2 >= out.len() + padding,
                    "lgwin {window} +{padding}"
                );
            }
        }
    }

    #[test]
    fn gzip_padding_stops_at_what_decoders_accept_in_a_header() {
        let original = text(5000);
        let plain = encode(&original, Encoding::Gzip, None).unwrap();
        let padded = encode(
            &original,
            Encoding::Gzip,
            Some(plain.len() as u64 + 100_000),
        )
        .unwrap();
        assert_eq!(decode(&padded, Encoding::Gzip), original);
        assert_eq!(padded.len(), plain.len() + 65_001);
    }

    #[test]
    fn a_recorded_size_below_ours_leaves_the_body_as_compressed() {
        let original = text(5000);
        for encoding in ALL {
            let plain = encode(&original, encoding, None).unwrap();
            assert_eq!(encode(&original, encoding, Some(10)).unwrap(), plain);
        }
    }
}
