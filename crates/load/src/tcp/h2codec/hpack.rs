//! HPACK (RFC 7541): the static table, requests encoded without the
//! dynamic table, and the decoder of responses, which keeps the server's.

use http::header::HeaderName;
use http::request::Parts;

use super::table::{DynamicTable, Entry};
use super::H2Error;
use crate::fields::{huffman_len, prefix_int, put_int, request_fields, string};
use crate::fields::{FieldError, SectionReader, Text};
use crate::head::Head;

/// The HPACK static table (RFC 7541 Appendix A): name and value of indices
/// 1 to 61.
pub(super) static STATIC: [(&str, &str); 61] = [
    (":authority", ""),
    (":method", "GET"),
    (":method", "POST"),
    (":path", "/"),
    (":path", "/index.html"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "200"),
    (":status", "204"),
    (":status", "206"),
    (":status", "304"),
    (":status", "400"),
    (":status", "404"),
    (":status", "500"),
    ("accept-charset", ""),
    ("accept-encoding", "gzip, deflate"),
    ("accept-language", ""),
    ("accept-ranges", ""),
    ("accept", ""),
    ("access-control-allow-origin", ""),
    ("age", ""),
    ("allow", ""),
    ("authorization", ""),
    ("cache-control", ""),
    ("content-disposition", ""),
    ("content-encoding", ""),
    ("content-language", ""),
    ("content-length", ""),
    ("content-location", ""),
    ("content-range", ""),
    ("content-type", ""),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("expect", ""),
    ("expires", ""),
    ("from", ""),
    ("host", ""),
    ("if-match", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("if-range", ""),
    ("if-unmodified-since", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("max-forwards", ""),
    ("proxy-authenticate", ""),
    ("proxy-authorization", ""),
    ("range", ""),
    ("referer", ""),
    ("refresh", ""),
    ("retry-after", ""),
    ("server", ""),
    ("set-cookie", ""),
    ("strict-transport-security", ""),
    ("transfer-encoding", ""),
    ("user-agent", ""),
    ("vary", ""),
    ("via", ""),
    ("www-authenticate", ""),
];

/// The client's SETTINGS_HEADER_TABLE_SIZE, left at its default (RFC 9113
/// §6.5.2): the largest dynamic table the server's encoder may use.
pub(super) const TABLE_SIZE_LIMIT: usize = 4096;

/// Fields whose values are sent as literals that are never indexed, as the
/// h2 crate's encoder (`Header::skip_value_index`) and browsers send them:
/// values that change from request to request, or secrets.
const NOT_INDEXED: [&str; 10] = [
    ":path",
    "age",
    "authorization",
    "content-length",
    "etag",
    "if-modified-since",
    "if-none-match",
    "location",
    "cookie",
    "set-cookie",
];

/// A connection's encoder of request header blocks, with a dynamic table
/// as real clients keep one (the h2 crate's, browsers'): a field enters it
/// the first time (§6.2.1), unless it is in [`NOT_INDEXED`], and later
/// requests send its index, so an h2 request costs on the wire what it
/// costs from those clients. Strings are always Huffman-coded, as h2 codes
/// them. The table starts at the default 4096 bytes (the server may use
/// it before its SETTINGS arrive); a smaller SETTINGS_HEADER_TABLE_SIZE
/// shrinks it, announced at the start of the next block (§4.2).
pub(crate) struct HpackEncoder {
    table: DynamicTable,
    /// A size the next block must announce first.
    size_update: Option<usize>,
    /// Whether the last block inserted into the table.
    inserted: bool,
}

impl HpackEncoder {
    pub(crate) fn new() -> Self {
        Self {
            table: DynamicTable::new(TABLE_SIZE_LIMIT),
            size_update: None,
            inserted: false,
        }
    }

    /// The server's SETTINGS_HEADER_TABLE_SIZE: the table may grow no
    /// larger (it stays at 4096 at most, as the h2 crate's).
    pub(crate) fn set_max_size(&mut self, size: u32) {
        let size = (size as usize).min(TABLE_SIZE_LIMIT);
        if size != self.table.max_size() {
            self.table.set_max_size(size);
            self.size_update = Some(size);
        }
    }

    /// Appends the header block of the request in `parts`; returns whether
    /// it changed the table (if not, the same request encodes to the same
    /// block again).
    pub(crate) fn encode_request(&mut self, parts: &Parts, out: &mut Vec<u8>) -> bool {
        if let Some(size) = self.size_update.take() {
            put_int(out, 0x20, 5, size as u64);
        }
        self.inserted = false;
        request_fields(parts, |name, value| self.put_field(out, name, value));
        self.inserted
    }

    fn put_field(&mut self, out: &mut Vec<u8>, name: &str, value: &[u8]) {
        let indexing = !NOT_INDEXED.contains(&name);
        let found = self.find(name, value);
        match found {
            Some((index, true)) => return put_int(out, 0x80, 7, index as u64),
            Some((index, false)) if indexing => put_int(out, 0x40, 6, index as u64),
            Some((index, false)) => put_int(out, 0x00, 4, index as u64),
            None => {
                out.push(if indexing { 0x40 } else { 0x00 });
                put_huffman(out, name.as_bytes());
            }
        }
        put_huffman(out, value);
        if indexing {
            let entry = Entry::new(Text::Plain(name.as_bytes()), Text::Plain(value));
            self.table
                .insert(entry.expect("plain text needs no decoding"));
            self.inserted = true;
        }
    }

    /// The first entry with `name` and `value`, static table first, then
    /// the dynamic table; else the first with `name` (1-based, §2.3.3).
    fn find(&self, name: &str, value: &[u8]) -> Option<(usize, bool)> {
        let dynamic = (0..self.table.len()).map(|at| {
            let entry = self.table.get(at).expect("an entry within the length");
            (STATIC.len() + 1 + at, entry.name(), entry.value())
        });
        let all = STATIC
            .iter()
            .enumerate()
            .map(|(at, &(n, v))| (at + 1, n.as_bytes(), v.as_bytes()))
            .chain(dynamic);
        let mut named = None;
        for (index, entry_name, entry_value) in all {
            if entry_name == name.as_bytes() {
                if entry_value == value {
                    return Some((index, true));
                }
                named = named.or(Some((index, false)));
            }
        }
        named
    }
}

/// A string literal, Huffman-coded whatever its length (§5.2).
fn put_huffman(out: &mut Vec<u8>, text: &[u8]) {
    put_int(out, 0x80, 7, huffman_len(text) as u64);
    httlib_huffman::encode(text, out).expect("every byte has a Huffman code");
}

/// The decoder of a connection's response header blocks (RFC 7541 §3),
/// holding the dynamic table the server's encoder fills. Every block the
/// connection receives must go through it, in order, even a stream's that
/// is no longer wanted: skipping one would leave the table behind the
/// server's.
pub(crate) struct HpackDecoder {
    table: DynamicTable,
}

impl HpackDecoder {
    /// A decoder with an empty table of the default maximum size (4096).
    pub(crate) fn new() -> Self {
        Self {
            table: DynamicTable::new(TABLE_SIZE_LIMIT),
        }
    }

    /// Decodes a response head: the final one with the fields named in
    /// `wanted`, or `None` for an interim (1xx) head, which the caller
    /// skips. A block that does not decode is COMPRESSION_ERROR for the
    /// connection; a malformed head (RFC 9113 §8.1.1) is PROTOCOL_ERROR
    /// for the stream, returned only once the whole block is decoded, so
    /// that the table stays in step.
    pub(crate) fn decode_head(
        &mut self,
        block: &[u8],
        wanted: &[HeaderName],
    ) -> Result<Option<Head>, H2Error> {
        let mut reader = SectionReader::head(wanted);
        self.decode(block, |name, value| reader.field(name, value))?;
        Ok(reader.finish()?)
    }

    /// Decodes trailers, which are checked (no pseudo-header, RFC 9113
    /// §8.1) and dropped; errors as [`Self::decode_head`]'s.
    pub(crate) fn decode_trailers(&mut self, block: &[u8]) -> Result<(), H2Error> {
        let mut reader = SectionReader::trailers();
        Ok(self.decode(block, |name, value| reader.field(name, value))?)
    }

    /// Decodes a block whose message no one reads (a reset stream's), only
    /// to keep the table in step: unchecked, and only COMPRESSION_ERROR.
    pub(crate) fn discard(&mut self, block: &[u8]) -> Result<(), H2Error> {
        Ok(self.decode(block, |_, _| Ok(()))?)
    }

    /// Walks a header block (RFC 7541 §6), updating the table and handing
    /// each field line to `line`. A decoding error stops it; a malformed
    /// field (`line`'s error) does not, and the first one is returned at
    /// the end. Dynamic table size updates may only open the block (§4.2).
    fn decode(
        &mut self,
        mut block: &[u8],
        mut line: impl FnMut(Text<'_>, Text<'_>) -> Result<(), FieldError>,
    ) -> Result<(), FieldError> {
        let mut malformed = None;
        let mut opening = true;
        while let Some(&first) = block.first() {
            let result = match first {
                0x80..=0xff => self.indexed(&mut block, &mut line),
                0x40..=0x7f => self.literal(&mut block, 6, true, &mut line),
                0x20..=0x3f => self.size_update(&mut block, opening),
                _ => self.literal(&mut block, 4, false, &mut line),
            };
            opening &= (0x20..=0x3f).contains(&first);
            match result {
                Ok(()) => {}
                Err(FieldError::Malformed(_)) => malformed = malformed.or(result.err()),
                Err(err) => return Err(err),
            }
        }
        malformed.map_or(Ok(()), Err)
    }

    /// An indexed field line (RFC 7541 §6.1).
    fn indexed(
        &self,
        block: &mut &[u8],
        line: &mut impl FnMut(Text<'_>, Text<'_>) -> Result<(), FieldError>,
    ) -> Result<(), FieldError> {
        let (name, value) = self.entry(prefix_int(block, 7)?)?;
        line(name, value)
    }

    /// A literal field line (RFC 7541 §6.2) whose name index has a
    /// `bits`-bit prefix (0 for a literal name), added to the table when
    /// `indexing` (§6.2.1). Never-indexed lines (§6.2.3) read as
    /// not-indexed ones: the client forwards nothing.
    fn literal(
        &mut self,
        block: &mut &[u8],
        bits: u32,
        indexing: bool,
        line: &mut impl FnMut(Text<'_>, Text<'_>) -> Result<(), FieldError>,
    ) -> Result<(), FieldError> {
        let name = match prefix_int(block, bits)? {
            0 => string(block, 7)?,
            index => self.entry(index)?.0,
        };
        let value = string(block, 7)?;
        if !indexing {
            return line(name, value);
        }
        // Copied before inserting, as the name may be an entry the
        // insertion evicts (§4.4).
        let entry = Entry::new(name, value)?;
        let result = line(Text::Plain(entry.name()), Text::Plain(entry.value()));
        self.table.insert(entry);
        result
    }

    /// A dynamic table size update (RFC 7541 §6.3): only before the first
    /// field line (§4.2), and not above SETTINGS_HEADER_TABLE_SIZE.
    fn size_update(&mut self, block: &mut &[u8], opening: bool) -> Result<(), FieldError> {
        if !opening {
            return Err(FieldError::Undecodable(
                "a dynamic table size update after a field line",
            ));
        }
        let size = prefix_int(block, 5)?;
        if size > TABLE_SIZE_LIMIT as u64 {
            return Err(FieldError::Undecodable(
                "a dynamic table size update above SETTINGS_HEADER_TABLE_SIZE (4096)",
            ));
        }
        self.table.set_max_size(size as usize);
        Ok(())
    }

    /// The name and value at `index` (RFC 7541 §2.3.3): 1 to 61 static,
    /// then the dynamic table's, newest first.
    fn entry(&self, index: u64) -> Result<(Text<'_>, Text<'_>), FieldError> {
        let index = usize::try_from(index).unwrap_or(usize::MAX);
        if let Some(&(name, value)) = index.checked_sub(1).and_then(|at| STATIC.get(at)) {
            return Ok((Text::Static(name), Text::Static(value)));
        }
        match index
            .checked_sub(STATIC.len() + 1)
            .and_then(|at| self.table.get(at))
        {
            Some(entry) => Ok((Text::Plain(entry.name()), Text::Plain(entry.value()))),
            None => Err(FieldError::Undecodable(
                "an index of 0 or past the static and dynamic tables",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::code;
    use super::*;
    use crate::fields::put_string;
    use crate::fields::testing::{busy_request, head, parts, Lcg};
    use http::header::HeaderValue;
    use http::StatusCode;

    /// The bytes of hex digits grouped as the RFC prints them.
    fn hex(text: &str) -> Vec<u8> {
        let digits: Vec<u8> = text.bytes().filter(u8::is_ascii_hexdigit).collect();
        digits
            .chunks(2)
            .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).unwrap())
            .collect()
    }

    fn names(names: &[&'static str]) -> Vec<HeaderName> {
        names
            .iter()
            .map(|name| HeaderName::from_static(name))
            .collect()
    }

    fn assert_table(decoder: &HpackDecoder, entries: &[(&str, &str)], size: usize) {
        let expected: Vec<_> = entries
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect();
        assert_eq!(decoder.table.entries(), expected);
        assert_eq!(decoder.table.size(), size);
    }

    /// A dynamic table size update (RFC 7541 §6.3).
    fn size_update(size: u64) -> Vec<u8> {
        let mut out = Vec::new();
        put_int(&mut out, 0x20, 5, size);
        out
    }

    /// A literal field line with a literal name: with incremental indexing
    /// (`0x40`) or without (`0x00`), Huffman-coded where shorter when
    /// `huffman`.
    fn literal(kind: u8, name: &str, value: &str, huffman: bool) -> Vec<u8> {
        let mut out = vec![kind];
        put_string(&mut out, 0x00, 7, name.as_bytes(), huffman);
        put_string(&mut out, 0x00, 7, value.as_bytes(), huffman);
        out
    }

    const AUTHORITY: (&str, &str) = (":authority", "www.example.com");
    const NO_CACHE: (&str, &str) = ("cache-control", "no-cache");
    const CUSTOM: (&str, &str) = ("custom-key", "custom-value");

    #[test]
    fn rfc_7541_c3_c4_requests_keep_the_table_in_step_though_malformed() {
        let c3 = [
            "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
            "8286 84be 5808 6e6f 2d63 6163 6865",
            "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
        ];
        let c4 = [
            "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
            "8286 84be 5886 a8eb 1064 9cbf",
            "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
        ];
        let tables: [(&[(&str, &str)], usize); 3] = [
            (&[AUTHORITY], 57),
            (&[NO_CACHE, AUTHORITY], 110),
            (&[CUSTOM, NO_CACHE, AUTHORITY], 164),
        ];
        for blocks in [c3, c4] {
            let (mut discarding, mut reading) = (HpackDecoder::new(), HpackDecoder::new());
            for (block, (entries, size)) in blocks.iter().zip(tables) {
                assert_eq!(discarding.discard(&hex(block)), Ok(()));
                assert_table(&discarding, entries, size);
                // A request's pseudo-headers make a malformed response,
                // yet the table follows the whole block.
                let err = reading.decode_head(&hex(block), &[]).unwrap_err();
                assert_eq!((err.code, err.connection), (code::PROTOCOL_ERROR, false));
                assert_table(&reading, entries, size);
            }
        }
    }

    const DATE_21: &str = "Mon, 21 Oct 2013 20:13:21 GMT";
    const DATE_22: &str = "Mon, 21 Oct 2013 20:13:22 GMT";
    const LOCATION: &str = "https://www.example.com";
    const COOKIE: &str = "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1";

    /// Decodes RFC 7541's three responses (C.5 or C.6) into one decoder,
    /// its table limited to 256 bytes as there, by an opening update.
    fn three_responses(blocks: [&str; 3]) {
        let wanted = names(&["cache-control", "date", "location", "set-cookie"]);
        let mut decoder = HpackDecoder::new();
        let first = [size_update(256), hex(blocks[0])].concat();
        let common = [
            ("cache-control", "private"),
            ("date", DATE_21),
            ("location", LOCATION),
        ];
        assert_eq!(decoder.decode_head(&first, &wanted), Ok(head(302, &common)));
        let table_1 = [
            ("location", LOCATION),
            ("date", DATE_21),
            ("cache-control", "private"),
        ];
        assert_table(
            &decoder,
            &[&table_1[..], &[(":status", "302")]].concat(),
            222,
        );
        assert_eq!(
            decoder.decode_head(&hex(blocks[1]), &wanted),
            Ok(head(307, &common))
        );
        assert_table(
            &decoder,
            &[&[(":status", "307")], &table_1[..]].concat(),
            222,
        );
        let third = [
            ("cache-control", "private"),
            ("date", DATE_22),
            ("location", LOCATION),
            ("set-cookie", COOKIE),
        ];
        assert_eq!(
            decoder.decode_head(&hex(blocks[2]), &wanted),
            Ok(head(200, &third))
        );
        let table_3 = [
            ("set-cookie", COOKIE),
            ("content-encoding", "gzip"),
            ("date", DATE_22),
        ];
        assert_table(&decoder, &table_3, 215);
    }

    #[test]
    fn rfc_7541_c5_responses() {
        three_responses([
            "4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133
             2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70
             6c65 2e63 6f6d",
            "4803 3330 37c1 c0bf",
            "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d
             54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049
             5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e
             3d31",
        ]);
    }

    #[test]
    fn rfc_7541_c6_responses_with_huffman_coding() {
        three_responses([
            "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6
             2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
            "4883 640e ffc1 c0bf",
            "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab
             77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f
             9587 3160 65c0 03ed 4ee5 b106 3d50 07",
        ]);
    }

    #[test]
    fn entries_are_evicted_oldest_first() {
        let wanted = names(&["x-c"]);
        let mut decoder = HpackDecoder::new();
        let (a, b) = ("1".repeat(30), "2".repeat(30));
        // Each entry is 3 + 30 + 32 = 65 bytes: one fits in 100.
        let block = [
            size_update(100),
            vec![0x88],
            literal(0x40, "x-a", &a, false),
            literal(0x40, "x-b", &b, false),
        ]
        .concat();
        assert_eq!(decoder.decode_head(&block, &wanted), Ok(head(200, &[])));
        assert_table(&decoder, &[("x-b", &b)], 65);
        // A new value under the name of the entry it evicts (§4.4).
        let c = "3".repeat(30);
        let mut block = vec![0x88, 0x7e];
        put_string(&mut block, 0x00, 7, c.as_bytes(), false);
        assert_eq!(decoder.decode_head(&block, &wanted), Ok(head(200, &[])));
        assert_table(&decoder, &[("x-b", &c)], 65);
        // An entry larger than the table empties it, yet is a field.
        let large = "4".repeat(70);
        let block = [vec![0x88], literal(0x40, "x-c", &large, true)].concat();
        assert_eq!(
            decoder.decode_head(&block, &wanted),
            Ok(head(200, &[("x-c", &large)]))
        );
        assert_table(&decoder, &[], 0);
        assert_eq!(
            decoder
                .decode_head(&[0x88, 0xbe], &wanted)
                .unwrap_err()
                .code,
            code::COMPRESSION_ERROR
        );
    }

    /// A connection's COMPRESSION_ERROR, and a stream's PROTOCOL_ERROR.
    const COMPRESSION: (u32, bool) = (code::COMPRESSION_ERROR, true);
    const MALFORMED: (u32, bool) = (code::PROTOCOL_ERROR, false);

    /// How a test decodes a block.
    #[derive(Clone, Copy)]
    enum As {
        Head,
        Trailers,
    }

    /// Checks that each case's block, decoded by a new decoder as a head
    /// (wanting `server-timing`) or as trailers, fails with `expected`.
    fn expect_errors(cases: &[(&str, Vec<u8>)], section: As, expected: (u32, bool)) {
        let wanted = names(&["server-timing"]);
        for (case, block) in cases {
            let mut decoder = HpackDecoder::new();
            let result = match section {
                As::Head => decoder.decode_head(block, &wanted).map(drop),
                As::Trailers => decoder.decode_trailers(block),
            };
            let err = result.expect_err(case);
            assert_eq!((err.code, err.connection), expected, "{case}");
        }
    }

    #[test]
    fn size_updates_only_open_a_block_and_stay_within_4096() {
        let mut decoder = HpackDecoder::new();
        let fill = [vec![0x88], literal(0x40, "x-a", "1", false)].concat();
        decoder.decode_head(&fill, &[]).unwrap();
        assert_table(&decoder, &[("x-a", "1")], 36);
        // The smallest size, then the final one (§4.2): 0 empties the table.
        let block = [size_update(0), size_update(4096), vec![0x88]].concat();
        assert_eq!(decoder.decode_head(&block, &[]), Ok(head(200, &[])));
        assert_table(&decoder, &[], 0);
        decoder.decode_head(&fill, &[]).unwrap();
        let shrink = [size_update(35), vec![0x88]].concat();
        decoder.decode_head(&shrink, &[]).unwrap();
        assert_table(&decoder, &[], 0);
        let too_large = [size_update(36), fill.clone()].concat();
        decoder.decode_head(&too_large, &[]).unwrap();
        assert_table(&decoder, &[("x-a", "1")], 36);
        let cases = [
            ("after a field", [vec![0x88], size_update(4096)].concat()),
            ("after a literal", [fill.clone(), size_update(0)].concat()),
            ("above 4096", [size_update(4097), vec![0x88]].concat()),
            ("far above", [size_update(1 << 40), vec![0x88]].concat()),
        ];
        expect_errors(&cases, As::Head, COMPRESSION);
    }

    #[test]
    fn undecodable_blocks_are_compression_errors() {
        let mut overlong = vec![0xff];
        overlong.extend_from_slice(&[0xff; 8]);
        overlong.push(0x7f);
        let cases = [
            ("index 0", vec![0x80]),
            ("index past the static table", vec![0x88, 0xbe]),
            (
                "name index past the tables",
                vec![0x88, 0x7f, 0x00, 0x01, b'x'],
            ),
            (
                "unindexed name index past",
                vec![0x88, 0x0f, 0x30, 0x01, b'x'],
            ),
            ("cut integer", vec![0x88, 0xff]),
            ("integer past 62 bits", overlong),
            ("string past the end", vec![0x88, 0x5c, 0x05, b'1']),
            ("block ends after a name index", vec![0x88, 0x5c]),
            (
                "block ends after a literal name",
                vec![0x88, 0x40, 0x01, b'a'],
            ),
            ("bad Huffman padding, indexed", vec![0x88, 0x5c, 0x81, 0x00]),
            (
                "EOS in a Huffman name",
                vec![0x88, 0x40, 0x84, 0xff, 0xff, 0xff, 0xfc, 0x00],
            ),
        ];
        expect_errors(&cases, As::Head, COMPRESSION);
        expect_errors(&cases[1..2], As::Trailers, COMPRESSION);
        // A wanted value is decoded, so its bad Huffman code is seen.
        let wanted = names(&["server-timing"]);
        let mut block = vec![0x88, 0x00];
        put_string(&mut block, 0x00, 7, b"server-timing", false);
        block.extend_from_slice(&[0x81, 0x00]);
        let err = HpackDecoder::new()
            .decode_head(&block, &wanted)
            .unwrap_err();
        assert_eq!(err.code, code::COMPRESSION_ERROR);
    }

    #[test]
    fn malformed_heads_are_stream_errors() {
        let ok = |line: Vec<u8>| [vec![0x88], line].concat();
        let plain = |name, value| literal(0x00, name, value, false);
        let cases = [
            ("empty block", vec![]),
            ("no :status", plain("server", "x")),
            ("late :status", [plain("server", "x"), vec![0x88]].concat()),
            ("second :status", vec![0x88, 0x89]),
            (":path", vec![0x88, 0x84]),
            ("unknown pseudo", ok(plain(":foo", "x"))),
            ("uppercase", ok(plain("Server", "x"))),
            (
                "uppercase, Huffman",
                ok(literal(0x00, "Server-Timing", "x", true)),
            ),
            (
                "uppercase, indexed",
                ok(literal(0x40, "X-Upper", "x", true)),
            ),
            ("space in a name", ok(plain("bad name", "x"))),
            ("empty name", ok(plain("", "x"))),
            ("connection", ok(plain("connection", "close"))),
            ("te", ok(plain("te", "trailers"))),
            ("status 101", [vec![0x08, 0x03], b"101".to_vec()].concat()),
            ("status 2x0", [vec![0x08, 0x03], b"2x0".to_vec()].concat()),
            ("LF in a wanted value", ok(plain("server-timing", "a\nb"))),
        ];
        expect_errors(&cases, As::Head, MALFORMED);
        let mut decoder = HpackDecoder::new();
        assert_eq!(decoder.decode_trailers(&plain("x-checksum", "1")), Ok(()));
        assert_eq!(decoder.decode_trailers(&[]), Ok(()));
        let cases = [(":status in trailers", vec![0x88]), (":path", vec![0x84])];
        expect_errors(&cases, As::Trailers, MALFORMED);
    }

    #[test]
    fn a_malformed_head_still_updates_the_table() {
        let wanted = names(&["x-kept"]);
        let mut decoder = HpackDecoder::new();
        let block = [
            vec![0x88, 0x89],
            literal(0x00, "Bad", "x", false),
            literal(0x40, "x-kept", "v", true),
        ]
        .concat();
        let err = decoder.decode_head(&block, &wanted).unwrap_err();
        assert_eq!(
            err,
            H2Error::stream(code::PROTOCOL_ERROR, "a second :status"),
            "the first"
        );
        assert_eq!(
            decoder.decode_head(&[0x88, 0xbe], &wanted),
            Ok(head(200, &[("x-kept", "v")]))
        );
    }

    #[test]
    fn interim_heads_then_the_final_one() {
        let wanted = names(&["link", "server-timing"]);
        let mut decoder = HpackDecoder::new();
        let link = "</style.css>; rel=preload";
        let early = [
            vec![0x08, 0x03],
            b"103".to_vec(),
            literal(0x40, "link", link, true),
        ]
        .concat();
        assert_eq!(decoder.decode_head(&early, &wanted), Ok(None));
        let continue_100 = [vec![0x08, 0x03], b"100".to_vec()].concat();
        assert_eq!(decoder.decode_head(&continue_100, &wanted), Ok(None));
        let timing = literal(0x00, "server-timing", "origin;dur=3", true);
        let block = [vec![0x88, 0xbe], timing].concat();
        let expected = head(200, &[("link", link), ("server-timing", "origin;dur=3")]);
        assert_eq!(decoder.decode_head(&block, &wanted), Ok(expected));
    }

    #[test]
    fn a_static_status_allocates_nothing() {
        let mut decoder = HpackDecoder::new();
        let head = decoder
            .decode_head(&[0x88], &names(&["server-timing"]))
            .unwrap()
            .unwrap();
        assert_eq!(head.status, StatusCode::OK);
        assert_eq!(head.fields.capacity(), 0);
        assert_table(&decoder, &[], 0);
    }

    #[test]
    fn static_table_has_the_rfc_entries() {
        assert_eq!(STATIC[0], (":authority", ""));
        assert_eq!(STATIC[1], (":method", "GET"));
        assert_eq!(STATIC[7], (":status", "200"));
        assert_eq!(STATIC[13], (":status", "500"));
        assert_eq!(STATIC[15], ("accept-encoding", "gzip, deflate"));
        assert_eq!(STATIC[18], ("accept", ""));
        assert_eq!(STATIC[37], ("host", ""));
        assert_eq!(STATIC[57], ("user-agent", ""));
        assert_eq!(STATIC[60], ("www-authenticate", ""));
        for (name, value) in STATIC {
            // Handed out unchecked: they must be valid.
            HeaderName::from_static(name.strip_prefix(':').unwrap_or(name));
            HeaderValue::from_static(value);
        }
    }

    /// The requests' blocks from httlib-hpack's encoder, told to index as
    /// the h2 crate does: every field but [`NOT_INDEXED`]'s, the table's
    /// index wherever it has one, every string Huffman-coded.
    fn their_blocks(requests: &[Parts]) -> Vec<Vec<u8>> {
        use httlib_hpack::Encoder as E;
        let mut encoder = E::with_dynamic_size(4096);
        requests
            .iter()
            .map(|request| {
                let mut block = Vec::new();
                request_fields(request, |name, value| {
                    let mut flags = E::HUFFMAN_NAME | E::HUFFMAN_VALUE | E::BEST_FORMAT;
                    if !NOT_INDEXED.contains(&name) {
                        flags |= E::WITH_INDEXING;
                    }
                    let field = (name.as_bytes().to_vec(), value.to_vec(), flags);
                    encoder.encode(field, &mut block).unwrap();
                });
                block
            })
            .collect()
    }

    fn requests() -> Vec<Parts> {
        let (busy, _) = busy_request();
        // A field larger than the table empties it (§4.4): `busy` fills
        // nothing that lasts; `small` does.
        let small = parts("GET", "https://a.test/x", &[("user-agent", "h3lab")]);
        let cookie = parts(
            "GET",
            "https://a.test/y",
            &[("cookie", "a=1"), ("accept", "*/*")],
        );
        vec![busy, small.clone(), cookie, small]
    }

    #[test]
    fn indexes_as_the_h2_crate_does() {
        let requests = requests();
        let mut encoder = HpackEncoder::new();
        let ours: Vec<(Vec<u8>, bool)> = requests
            .iter()
            .map(|request| {
                let mut block = Vec::new();
                let changed = encoder.encode_request(request, &mut block);
                (block, changed)
            })
            .collect();
        let theirs = their_blocks(&requests);
        for (at, ((block, _), their)) in ours.iter().zip(&theirs).enumerate() {
            assert_eq!(block, their, "request {at}");
        }
        assert!(ours[1].1 && ours[2].1, "new fields enter the table");
        assert!(!ours[3].1, "the same request again changes nothing");
        assert!(ours[3].0.len() < ours[1].0.len() / 2, "sent as indices");
    }

    #[test]
    fn requests_decode_with_an_independent_decoder() {
        let (_, expected) = busy_request();
        let mut encoder = HpackEncoder::new();
        let mut decoder = httlib_hpack::Decoder::default();
        for request in requests() {
            let mut block = Vec::new();
            encoder.encode_request(&request, &mut block);
            let mut fields = Vec::new();
            decoder.decode(&mut block, &mut fields).unwrap();
            let text = |bytes: &[u8]| String::from_utf8(bytes.to_vec()).unwrap();
            let fields: Vec<(String, String)> = fields
                .iter()
                .map(|(name, value, _)| (text(name), text(value)))
                .collect();
            match fields[3].1.as_str() {
                "/a/b?c=d" => assert_eq!(fields, expected),
                "/x" => assert_eq!(fields[4], ("user-agent".into(), "h3lab".into())),
                _ => assert_eq!(fields[4], ("cookie".into(), "a=1".into())),
            }
        }
    }

    #[test]
    fn a_smaller_table_is_announced_at_the_start_of_the_next_block() {
        let mut encoder = HpackEncoder::new();
        let request = parts("GET", "https://a.test/", &[]);
        let mut first = Vec::new();
        encoder.encode_request(&request, &mut first);
        encoder.set_max_size(0);
        let mut second = Vec::new();
        encoder.encode_request(&request, &mut second);
        assert_eq!(second[0], 0x20, "a size update to 0");
        assert_eq!(
            &second[1..3],
            &[0x82, 0x87],
            ":method and :scheme as before"
        );
        assert_eq!(
            second[3], 0x41,
            ":authority a literal again: the table is empty"
        );
        let mut third = Vec::new();
        encoder.encode_request(&request, &mut third);
        assert_eq!(third, second[1..], "announced once");
    }

    /// One field line as httlib-hpack's encoder writes it, with flags
    /// (Huffman-coded name 0x1, value 0x2; indexed 0x4, never 0x8; the
    /// table's index when it has one, 0x10) drawn at random.
    fn their_line(rng: &mut Lcg, name: &str, value: &str) -> (Vec<u8>, Vec<u8>, u8) {
        let flags = [0x0, 0x4, 0x8][(rng.next() % 3) as usize] | (rng.next() % 4) as u8;
        let best = if rng.next() % 4 == 0 { 0 } else { 0x10 };
        (name.into(), value.into(), flags | best)
    }

    #[test]
    fn decodes_what_an_independent_encoder_indexes() {
        let field_names = [
            "server-timing",
            "x-a",
            "date",
            "content-type",
            "cache-control",
        ];
        let wanted = names(&field_names);
        let mut rng = Lcg(11);
        let mut encoder = httlib_hpack::Encoder::default();
        let mut decoder = HpackDecoder::new();
        let pool: Vec<String> = (0..8)
            .map(|i| format!("value-{i}-{}", "x".repeat(i * 40)))
            .collect();
        for round in 0..400 {
            let mut block = Vec::new();
            if round % 37 == 36 {
                let size = [0, 200, 1000, 4096][(rng.next() % 4) as usize];
                encoder.update_max_dynamic_size(size, &mut block).unwrap();
            }
            let status = ["200", "204", "302", "404", "503"][(rng.next() % 5) as usize];
            let line = their_line(&mut rng, ":status", status);
            encoder.encode(line, &mut block).unwrap();
            let mut fields = Vec::new();
            for _ in 0..rng.next() % 6 {
                let name = field_names[(rng.next() % 5) as usize];
                let value = if rng.next() % 3 == 0 {
                    let len = (rng.next() % 30) as usize;
                    let text = rng.bytes(len, 95);
                    String::from_utf8(text.iter().map(|b| b + 0x20).collect()).unwrap()
                } else {
                    pool[(rng.next() % 8) as usize].clone()
                };
                encoder
                    .encode(their_line(&mut rng, name, &value), &mut block)
                    .unwrap();
                fields.push((name, value));
            }
            let fields: Vec<_> = fields.iter().map(|(n, v)| (*n, v.as_str())).collect();
            let expected = head(status.parse().unwrap(), &fields);
            assert_eq!(
                decoder.decode_head(&block, &wanted),
                Ok(expected),
                "round {round}"
            );
        }
    }

    #[test]
    fn garbage_never_panics() {
        let mut rng = Lcg(5);
        let wanted = names(&["server-timing"]);
        let mut decoder = HpackDecoder::new();
        for _ in 0..20_000 {
            let len = (rng.next() % 24) as usize;
            let mut block = rng.bytes(len, 256);
            if len > 0 && rng.next() % 2 == 0 {
                block[0] = 0x88;
            }
            let _ = decoder.decode_head(&block, &wanted);
            let _ = decoder.decode_trailers(&block);
            assert!(decoder.table.size() <= TABLE_SIZE_LIMIT);
        }
    }
}
