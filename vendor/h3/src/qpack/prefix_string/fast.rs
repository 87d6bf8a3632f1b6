//! h3lab: table-driven Huffman coding of QPACK string literals (RFC 7541,
//! Appendix B). The crate's own coder moves one bit window at a time and
//! allocates per byte; this one packs and unpacks whole codes through a
//! 64-bit accumulator. The original stays as the reference, and decoding
//! falls back to it for anything this decoder does not accept, so errors
//! are the original's.

use std::sync::OnceLock;

use bytes::BufMut;

use super::encode::HPACK_STRING;

/// The end-of-string symbol's code: 30 one bits.
const EOS: (u32, u32) = (0x3fff_ffff, 30);
const MAX_LEN: usize = 30;

/// `(code, bits)` of each byte value, read from the encoder's table.
fn codes() -> &'static [(u32, u32); 256] {
    static CODES: OnceLock<[(u32, u32); 256]> = OnceLock::new();
    CODES.get_or_init(|| {
        let mut codes = [(0, 0); 256];
        for (slot, value) in codes.iter_mut().zip(HPACK_STRING.iter()) {
            let mut code = 0u32;
            let mut rest = value.bit_count;
            for &byte in value.buffer {
                let take = rest.min(8);
                code = (code << take) | (u32::from(byte) & ((1 << take) - 1));
                rest -= take;
            }
            *slot = (code, value.bit_count);
        }
        codes
    })
}

/// Length in bytes of `value` Huffman-coded, padding included.
pub fn encoded_len(value: &[u8]) -> usize {
    let codes = codes();
    let bits: usize = value.iter().map(|&b| codes[b as usize].1 as usize).sum();
    bits.div_ceil(8)
}

/// Writes `value` Huffman-coded, padded with ones to a whole byte.
pub fn encode<B: BufMut>(value: &[u8], buf: &mut B) {
    let codes = codes();
    let mut acc: u64 = 0;
    let mut pending: u32 = 0;
    for &byte in value {
        let (code, bits) = codes[byte as usize];
        acc = (acc << bits) | u64::from(code);
        pending += bits;
        while pending >= 8 {
            pending -= 8;
            buf.put_u8((acc >> pending) as u8);
        }
        acc &= (1 << pending) - 1;
    }
    if pending > 0 {
        let pad = 8 - pending;
        buf.put_u8(((acc << pad) | ((1 << pad) - 1)) as u8);
    }
}

/// Canonical decoding tables: per code length, the first code, how many
/// codes have it, and where their symbols start in `symbols`.
struct Canonical {
    first: [u32; MAX_LEN + 1],
    count: [u32; MAX_LEN + 1],
    offset: [usize; MAX_LEN + 1],
    /// Symbols ordered by (length, code); 256 is EOS.
    symbols: Vec<u16>,
}

/// `None` if the table were not canonical (then every string takes the
/// original decoder).
fn canonical() -> Option<&'static Canonical> {
    static TABLE: OnceLock<Option<Canonical>> = OnceLock::new();
    TABLE
        .get_or_init(|| {
            let mut all: Vec<(u32, u32, u16)> = codes()
                .iter()
                .enumerate()
                .map(|(symbol, &(code, bits))| (bits, code, symbol as u16))
                .collect();
            all.push((EOS.1, EOS.0, 256));
            all.sort_unstable();
            let mut table = Canonical {
                first: [0; MAX_LEN + 1],
                count: [0; MAX_LEN + 1],
                offset: [0; MAX_LEN + 1],
                symbols: all.iter().map(|&(_, _, symbol)| symbol).collect(),
            };
            let mut next = 0u32;
            let mut previous_len = all[0].0;
            for (index, &(bits, code, _)) in all.iter().enumerate() {
                next <<= bits - previous_len;
                previous_len = bits;
                if code != next {
                    return None;
                }
                let len = bits as usize;
                if table.count[len] == 0 {
                    table.first[len] = code;
                    table.offset[len] = index;
                }
                table.count[len] += 1;
                next += 1;
            }
            Some(table)
        })
        .as_ref()
}

/// Decodes a Huffman-coded string, or `None` when it is not one this
/// decoder accepts (an EOS symbol, bad padding, a truncated code).
pub fn decode(input: &[u8]) -> Option<Vec<u8>> {
    let table = canonical()?;
    let mut out = Vec::with_capacity(input.len() * 8 / 5 + 1);
    let mut acc: u64 = 0;
    let mut bits: u32 = 0;
    let mut next = 0;
    loop {
        while bits <= 56 && next < input.len() {
            acc = (acc << 8) | u64::from(input[next]);
            bits += 8;
            next += 1;
        }
        if bits == 0 {
            return Some(out);
        }
        let symbol = (5..=MAX_LEN.min(bits as usize)).find_map(|len| {
            let code = ((acc >> (bits as usize - len)) & ((1 << len) - 1)) as u32;
            let index = code.checked_sub(table.first[len])?;
            (index < table.count[len]).then(|| (table.symbols[table.offset[len] + index as usize], len))
        });
        match symbol {
            Some((256, _)) => return None,
            Some((symbol, len)) => {
                out.push(symbol as u8);
                bits -= len as u32;
                acc &= (1 << bits) - 1;
            }
            // What is left must be padding: fewer than 8 one bits.
            None if next == input.len() && bits < 8 && acc == (1 << bits) - 1 => {
                return Some(out)
            }
            None => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::encode::HpackStringEncode;
    use super::super::HpackStringDecode;
    use super::*;

    fn reference_encode(value: &[u8]) -> Vec<u8> {
        Vec::from(value).hpack_encode().unwrap()
    }

    fn reference_decode(input: &[u8]) -> Option<Vec<u8>> {
        input.to_vec().hpack_decode().collect::<Result<Vec<u8>, _>>().ok()
    }

    /// A deterministic stream of test bytes.
    fn bytes(seed: u64, len: usize) -> Vec<u8> {
        let mut state = seed | 1;
        (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 24) as u8
            })
            .collect()
    }

    #[test]
    fn the_code_table_is_canonical() {
        assert!(canonical().is_some());
    }

    #[test]
    fn encoding_matches_the_reference() {
        for seed in 0..2000u64 {
            let mut value = bytes(seed, (seed % 70) as usize);
            if seed % 3 == 0 {
                // Mostly header-like text, where the short codes are.
                value.iter_mut().for_each(|b| *b = b"abcdefghij0123/:.-=%"[*b as usize % 20]);
            }
            let mut fast = Vec::new();
            encode(&value, &mut fast);
            assert_eq!(fast, reference_encode(&value), "{value:?}");
            assert_eq!(encoded_len(&value), fast.len());
            assert_eq!(decode(&fast).as_deref(), Some(&value[..]), "{value:?}");
        }
    }

    #[test]
    fn decoding_accepts_only_what_the_reference_decodes_alike() {
        for seed in 0..20000u64 {
            let input = bytes(seed, (seed % 12) as usize);
            if let Some(fast) = decode(&input) {
                assert_eq!(Some(fast), reference_decode(&input), "{input:?}");
            }
        }
    }
}
