//! The bytes of frames and QPACK instructions the cases send, including
//! ones no encoder would produce (a length longer than the payload, a
//! reference to a table entry that does not exist).

/// A QUIC variable-length integer (RFC 9000 §16).
pub(crate) fn varint(value: u64) -> Vec<u8> {
    match value {
        0..=0x3f => vec![value as u8],
        0x40..=0x3fff => (value as u16 | 0x4000).to_be_bytes().to_vec(),
        0x4000..=0x3fff_ffff => (value as u32 | 0x8000_0000).to_be_bytes().to_vec(),
        _ => (value | 0xc000_0000_0000_0000).to_be_bytes().to_vec(),
    }
}

/// An HTTP/3 frame: type, length, payload (RFC 9114 §7.1).
pub(crate) fn frame(frame_type: u64, payload: &[u8]) -> Vec<u8> {
    frame_claiming(frame_type, payload.len() as u64, payload)
}

/// A frame whose length field says `length`, whatever the payload is.
pub(crate) fn frame_claiming(frame_type: u64, length: u64, payload: &[u8]) -> Vec<u8> {
    let mut bytes = varint(frame_type);
    bytes.extend(varint(length));
    bytes.extend_from_slice(payload);
    bytes
}

/// A SETTINGS frame with these identifier and value pairs, in order.
pub(crate) fn settings(pairs: &[(u64, u64)]) -> Vec<u8> {
    let payload: Vec<u8> = pairs
        .iter()
        .flat_map(|&(id, value)| [varint(id), varint(value)].concat())
        .collect();
    frame(SETTINGS, &payload)
}

/// A QPACK prefixed integer (RFC 9204 §4.1.1, RFC 7541 §5.1): `value` in
/// the low `prefix_bits` of the first byte, whose high bits are `flags`.
pub(crate) fn prefixed_int(flags: u8, prefix_bits: u32, value: u64) -> Vec<u8> {
    let max = (1u64 << prefix_bits) - 1;
    if value < max {
        return vec![flags | value as u8];
    }
    let mut bytes = vec![flags | max as u8];
    let mut rest = value - max;
    while rest >= 0x80 {
        bytes.push((rest % 0x80) as u8 | 0x80);
        rest /= 0x80;
    }
    bytes.push(rest as u8);
    bytes
}

/// A field section's prefix (RFC 9204 §4.5.1): the encoded Required Insert
/// Count and a Base of 0.
pub(crate) fn section_prefix(encoded_insert_count: u64) -> Vec<u8> {
    [prefixed_int(0, 8, encoded_insert_count), vec![0]].concat()
}

/// An indexed field line (RFC 9204 §4.5.2): static table entry `index`.
pub(crate) fn indexed_static(index: u64) -> Vec<u8> {
    prefixed_int(0b1100_0000, 6, index)
}

/// An indexed field line referring to the dynamic table, relative index
/// `index` from the Base.
pub(crate) fn indexed_dynamic(index: u64) -> Vec<u8> {
    prefixed_int(0b1000_0000, 6, index)
}

/// HTTP/3 frame types (RFC 9114 §7.2, §11.2.1).
pub(crate) const DATA: u64 = 0x00;
pub(crate) const HEADERS: u64 = 0x01;
pub(crate) const CANCEL_PUSH: u64 = 0x03;
pub(crate) const SETTINGS: u64 = 0x04;
pub(crate) const PUSH_PROMISE: u64 = 0x05;
pub(crate) const GOAWAY: u64 = 0x07;
pub(crate) const MAX_PUSH_ID: u64 = 0x0d;

/// A reserved type of the form 0x1f * N + 0x21, for frames, streams and
/// settings alike (RFC 9114 §6.2.3, §7.2.4.1, §7.2.8): never meaningful,
/// always to be ignored.
pub(crate) const RESERVED: u64 = 0x1f * 7 + 0x21;

/// Unidirectional stream types (RFC 9114 §6.2, RFC 9204 §4.2).
pub(crate) const CONTROL_STREAM: u64 = 0x00;
pub(crate) const PUSH_STREAM: u64 = 0x01;
pub(crate) const ENCODER_STREAM: u64 = 0x02;
pub(crate) const DECODER_STREAM: u64 = 0x03;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_use_the_shortest_length_rfc_9000_gives_for_each_example() {
        // RFC 9000 §A.1's examples.
        assert_eq!(varint(37), [0x25]);
        assert_eq!(varint(15_293), [0x7b, 0xbd]);
        assert_eq!(varint(494_878_333), [0x9d, 0x7f, 0x3e, 0x7d]);
        assert_eq!(
            varint(151_288_809_941_952_652),
            [0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c]
        );
    }

    #[test]
    fn prefixed_integers_match_rfc_7541s_examples() {
        // RFC 7541 §C.1.1-C.1.3.
        assert_eq!(prefixed_int(0, 5, 10), [0x0a]);
        assert_eq!(prefixed_int(0, 5, 1337), [0x1f, 0x9a, 0x0a]);
        assert_eq!(prefixed_int(0, 8, 42), [0x2a]);
        assert_eq!(prefixed_int(0b1110_0000, 5, 31), [0xff, 0x00]);
    }

    #[test]
    fn a_frame_is_type_length_payload() {
        assert_eq!(frame(DATA, b"ab"), [0x00, 0x02, b'a', b'b']);
        assert_eq!(frame_claiming(HEADERS, 9, b"a"), [0x01, 0x09, b'a']);
        assert_eq!(settings(&[(6, 100)]), [0x04, 0x03, 0x06, 0x40, 0x64]);
    }
}
