//! The primitives of RFC 7541 §5, which QPACK reuses (RFC 9204 §4.1):
//! prefixed integers, string literals and the Huffman code.

use httlib_huffman::decoder::table5;
use httlib_huffman::encoder::table::ENCODE_TABLE;

use super::{FieldError, Text};

/// Appends a prefixed integer (RFC 7541 §5.1) in the low `bits` bits of a
/// first byte whose high bits are `flags`.
pub(crate) fn put_int(out: &mut Vec<u8>, flags: u8, bits: u32, value: u64) {
    let max = (1u64 << bits) - 1;
    if value < max {
        out.push(flags | value as u8);
        return;
    }
    out.push(flags | max as u8);
    let mut rest = value - max;
    while rest >= 0x80 {
        out.push(0x80 | (rest & 0x7f) as u8);
        rest >>= 7;
    }
    out.push(rest as u8);
}

/// Appends a string literal (RFC 7541 §5.2): its length in a `bits`-bit
/// prefix under `flags`, then its bytes. With `huffman`, they are
/// Huffman-coded when that is shorter, and the H flag just above the
/// prefix says so; without, they go as they are.
pub(crate) fn put_string(out: &mut Vec<u8>, flags: u8, bits: u32, text: &[u8], huffman: bool) {
    let coded_len = if huffman {
        huffman_len(text)
    } else {
        usize::MAX
    };
    if coded_len < text.len() {
        put_int(out, flags | 1 << bits, bits, coded_len as u64);
        httlib_huffman::encode(text, out).expect("every byte has a Huffman code");
    } else {
        put_int(out, flags, bits, text.len() as u64);
        out.extend_from_slice(text);
    }
}

/// The size of `text` Huffman-coded (RFC 7541 Appendix B), padding
/// included, found without coding it.
pub(crate) fn huffman_len(text: &[u8]) -> usize {
    let bits: usize = text
        .iter()
        .map(|&byte| usize::from(ENCODE_TABLE[usize::from(byte)].0))
        .sum();
    bits.div_ceil(8)
}

/// Reads a prefixed integer (RFC 7541 §5.1) that starts in the low `bits`
/// bits of the first byte. QPACK needs no more than 62 bits (RFC 9204
/// §4.1.1), and no HPACK integer (an index, a length, a table size) can be
/// near that; more, or a section ending inside it, is an error (RFC 7541
/// §5.1 lets a decoder set such a limit).
pub(crate) fn prefix_int(section: &mut &[u8], bits: u32) -> Result<u64, FieldError> {
    const CUT: FieldError = FieldError::Undecodable("a field section ends inside an integer");
    const LONG: FieldError =
        FieldError::Undecodable("a field section's integer is longer than 62 bits");
    let (&first, mut rest) = section.split_first().ok_or(CUT)?;
    let max = (1u64 << bits) - 1;
    let mut value = u64::from(first) & max;
    if value == max {
        // Nine continuation bytes at most: 56-bit shifts keep the sum below
        // 2^64, and the check below rejects what passes 62 bits.
        let mut shift = 0;
        loop {
            let (&byte, tail) = rest.split_first().ok_or(CUT)?;
            rest = tail;
            value += u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                break;
            }
            shift += 7;
            if shift > 56 {
                return Err(LONG);
            }
        }
    }
    if value >= 1 << 62 {
        return Err(LONG);
    }
    *section = rest;
    Ok(value)
}

/// Reads a string literal (RFC 7541 §5.2, RFC 9204 §4.1.2) whose Huffman
/// flag sits just above its `bits`-bit length prefix, without decoding it.
pub(crate) fn string<'a>(section: &mut &'a [u8], bits: u32) -> Result<Text<'a>, FieldError> {
    let huffman = section.first().is_some_and(|b| b & (1 << bits) != 0);
    let len = prefix_int(section, bits)?;
    let all: &'a [u8] = section;
    let len = usize::try_from(len)
        .ok()
        .filter(|&len| len <= all.len())
        .ok_or(FieldError::Undecodable(
            "a string literal runs past its field section's end",
        ))?;
    let (text, rest) = all.split_at(len);
    *section = rest;
    Ok(if huffman {
        Text::Huffman(text)
    } else {
        Text::Plain(text)
    })
}

/// Appends the bytes `text` stands for to `out`, decoding a Huffman-coded
/// one: what a table entry or a kept value is made of.
pub(crate) fn text_to_vec(text: Text<'_>, out: &mut Vec<u8>) -> Result<(), FieldError> {
    match text {
        Text::Static(text) => out.extend_from_slice(text.as_bytes()),
        Text::Plain(text) => out.extend_from_slice(text),
        Text::Huffman(coded) => {
            // The shortest code is 5 bits, so 8 bits per 5 bound the size.
            out.reserve(coded.len() * 8 / 5);
            huffman(coded, |byte| {
                out.push(byte);
                Ok(())
            })?;
        }
    }
    Ok(())
}

/// Decodes a Huffman-coded string (RFC 7541 §5.2, Appendix B) with
/// httlib_huffman's table for reading 5 bits at a time, handing each byte
/// to `emit` so that callers choose where it goes (a stack buffer, a check)
/// and nothing is allocated here. Stricter than `httlib_huffman::decode`
/// about the end: the padding must be at most 7 bits, all ones (a prefix of
/// EOS), and EOS itself is an error.
pub(crate) fn huffman(
    src: &[u8],
    mut emit: impl FnMut(u8) -> Result<(), FieldError>,
) -> Result<(), FieldError> {
    const BAD: FieldError = FieldError::Undecodable("a Huffman-coded string does not decode");
    const WIDTH: u32 = 5;
    let table = &table5::DECODE_TABLE;
    // Bits read but not consumed, right-aligned (fewer than 13).
    let (mut bits, mut unread) = (0u32, 0u32);
    // The table row reached by the code read so far, and that code's bits.
    let (mut row, mut code, mut code_len) = (0usize, 0u32, 0u32);
    for &byte in src {
        bits = (bits << 8) | u32::from(byte);
        unread += 8;
        while unread >= WIDTH {
            let key = (bits >> (unread - WIDTH)) & 0x1f;
            match table[row][key as usize] {
                (_, Some(symbol), leftover) => {
                    emit(u8::try_from(symbol).map_err(|_| BAD)?)?;
                    unread -= WIDTH - u32::from(leftover);
                    (row, code, code_len) = (0, 0, 0);
                }
                (Some(next), None, _) => {
                    unread -= WIDTH;
                    (row, code, code_len) = (next.into(), (code << WIDTH) | key, code_len + WIDTH);
                }
                (None, None, _) => return Err(BAD),
            }
            bits &= (1 << unread) - 1;
        }
    }
    // The last bits, fewer than WIDTH, may end a symbol: look them up
    // padded with zeros and keep the symbol only if it ends within them.
    if unread > 0 {
        let key = (bits << (WIDTH - unread)) & 0x1f;
        if let (_, Some(symbol), leftover) = table[row][key as usize] {
            let used = WIDTH - u32::from(leftover);
            if used <= unread {
                emit(u8::try_from(symbol).map_err(|_| BAD)?)?;
                unread -= used;
                bits &= (1 << unread) - 1;
                (code, code_len) = (0, 0);
            }
        }
    }
    let padding_len = code_len + unread;
    if padding_len > 7 || ((code << unread) | bits) != (1 << padding_len) - 1 {
        return Err(BAD);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fields::testing::Lcg;
    use httlib_huffman::DecoderSpeed;

    #[test]
    fn prefix_integers_round_trip() {
        // RFC 7541 C.1.2: 1337 with a 5-bit prefix.
        let mut out = Vec::new();
        put_int(&mut out, 0x00, 5, 1337);
        assert_eq!(out, [0x1f, 0x9a, 0x0a]);
        let mut rng = Lcg(7);
        for bits in 3..=8 {
            for value in [0, 1, 6, 7, 8, 126, 127, 128, 255, 256, (1 << 62) - 1]
                .into_iter()
                .chain((0..100).map(|_| rng.next() << (rng.next() % 31)))
            {
                let mut out = Vec::new();
                put_int(&mut out, 0x00, bits, value);
                let mut read = &out[..];
                assert_eq!(
                    prefix_int(&mut read, bits),
                    Ok(value),
                    "{value} in {bits} bits"
                );
                assert!(read.is_empty());
            }
        }
    }

    #[test]
    fn strings_are_huffman_coded_only_when_shorter() {
        let put = |text: &[u8], huffman: bool| {
            let mut out = Vec::new();
            put_string(&mut out, 0x00, 7, text, huffman);
            out
        };
        // RFC 7541 C.4.1's value: 15 bytes, 12 coded.
        let coded = put(b"www.example.com", true);
        assert_eq!(coded[0], 0x80 | 12);
        assert_eq!(
            coded[1..],
            [0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90, 0xf4, 0xff]
        );
        assert_eq!(put(b"www.example.com", false), b"\x0fwww.example.com");
        // '&' is 8 bits: as long coded, so sent as it is; '~' is 13 bits.
        assert_eq!(put(b"&&", true), b"\x02&&");
        assert_eq!(put(b"~", true), b"\x01~");
        assert_eq!(put(b"", true), [0x00]);
        // A 3-bit prefix under flags, as QPACK's literal names have.
        let mut out = Vec::new();
        put_string(&mut out, 0x20, 3, b"x-custom", false);
        assert_eq!(out, b"\x27\x01x-custom");
        let mut rng = Lcg(3);
        for len in 0..200 {
            let text = rng.bytes(len, if len % 2 == 0 { 128 } else { 256 });
            let out = put(&text, true);
            let mut read = &out[..];
            let mut decoded = Vec::new();
            text_to_vec(string(&mut read, 7).unwrap(), &mut decoded).unwrap();
            assert_eq!(decoded, text);
            assert!(read.is_empty());
            assert!(out.len() <= put(&text, false).len());
        }
    }

    #[test]
    fn huffman_decoder_agrees_with_httlib() {
        let ours = |coded: &[u8]| {
            let mut out = Vec::new();
            huffman(coded, |byte| {
                out.push(byte);
                Ok(())
            })
            .map(|()| out)
        };
        let mut rng = Lcg(42);
        let mut texts: Vec<Vec<u8>> = (0..=255).map(|byte| vec![byte]).collect();
        texts.extend((0..2000).map(|i| rng.bytes(i % 40, if i % 2 == 0 { 128 } else { 256 })));
        for text in texts {
            let mut coded = Vec::new();
            httlib_huffman::encode(&text, &mut coded).unwrap();
            assert_eq!(coded.len(), huffman_len(&text), "{text:?}");
            assert_eq!(ours(&coded), Ok(text));
        }
        for _ in 0..20_000 {
            let len = (rng.next() % 8) as usize;
            let garbage = rng.bytes(len, 256);
            let mut theirs = Vec::new();
            let their_result =
                httlib_huffman::decode(&garbage, &mut theirs, DecoderSpeed::FiveBits);
            if let Ok(decoded) = ours(&garbage) {
                assert_eq!(their_result, Ok(()), "{garbage:?}");
                assert_eq!(decoded, theirs, "{garbage:?}");
            }
        }
    }

    #[test]
    fn huffman_padding_is_checked() {
        let decode = |coded: &[u8]| huffman(coded, |_| Ok(()));
        // 'a' is 00011: padded with 111 it is whole.
        assert_eq!(decode(&[0x1f]), Ok(()));
        assert!(matches!(decode(&[0x18]), Err(FieldError::Undecodable(_))));
        assert!(decode(&[0x1f, 0xff]).is_err(), "padding past 7 bits");
        assert!(decode(&[0xff, 0xff, 0xff, 0xfc]).is_err(), "EOS");
    }
}
