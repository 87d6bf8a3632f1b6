//! QPACK (RFC 9204) without a dynamic table: the static table, field lines
//! written for requests, and field sections read from responses.

use super::*;

/// The QPACK static table (RFC 9204 Appendix A): name and value by index.
pub(super) static STATIC: [(&str, &str); 99] = [
    (":authority", ""),
    (":path", "/"),
    ("age", "0"),
    ("content-disposition", ""),
    ("content-length", "0"),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("referer", ""),
    ("set-cookie", ""),
    (":method", "CONNECT"),
    (":method", "DELETE"),
    (":method", "GET"),
    (":method", "HEAD"),
    (":method", "OPTIONS"),
    (":method", "POST"),
    (":method", "PUT"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "103"),
    (":status", "200"),
    (":status", "304"),
    (":status", "404"),
    (":status", "503"),
    ("accept", "*/*"),
    ("accept", "application/dns-message"),
    ("accept-encoding", "gzip, deflate, br"),
    ("accept-ranges", "bytes"),
    ("access-control-allow-headers", "cache-control"),
    ("access-control-allow-headers", "content-type"),
    ("access-control-allow-origin", "*"),
    ("cache-control", "max-age=0"),
    ("cache-control", "max-age=2592000"),
    ("cache-control", "max-age=604800"),
    ("cache-control", "no-cache"),
    ("cache-control", "no-store"),
    ("cache-control", "public, max-age=31536000"),
    ("content-encoding", "br"),
    ("content-encoding", "gzip"),
    ("content-type", "application/dns-message"),
    ("content-type", "application/javascript"),
    ("content-type", "application/json"),
    ("content-type", "application/x-www-form-urlencoded"),
    ("content-type", "image/gif"),
    ("content-type", "image/jpeg"),
    ("content-type", "image/png"),
    ("content-type", "text/css"),
    ("content-type", "text/html; charset=utf-8"),
    ("content-type", "text/plain"),
    ("content-type", "text/plain;charset=utf-8"),
    ("range", "bytes=0-"),
    ("strict-transport-security", "max-age=31536000"),
    (
        "strict-transport-security",
        "max-age=31536000; includesubdomains",
    ),
    (
        "strict-transport-security",
        "max-age=31536000; includesubdomains; preload",
    ),
    ("vary", "accept-encoding"),
    ("vary", "origin"),
    ("x-content-type-options", "nosniff"),
    ("x-xss-protection", "1; mode=block"),
    (":status", "100"),
    (":status", "204"),
    (":status", "206"),
    (":status", "302"),
    (":status", "400"),
    (":status", "403"),
    (":status", "421"),
    (":status", "425"),
    (":status", "500"),
    ("accept-language", ""),
    ("access-control-allow-credentials", "FALSE"),
    ("access-control-allow-credentials", "TRUE"),
    ("access-control-allow-headers", "*"),
    ("access-control-allow-methods", "get"),
    ("access-control-allow-methods", "get, post, options"),
    ("access-control-allow-methods", "options"),
    ("access-control-expose-headers", "content-length"),
    ("access-control-request-headers", "content-type"),
    ("access-control-request-method", "get"),
    ("access-control-request-method", "post"),
    ("alt-svc", "clear"),
    ("authorization", ""),
    (
        "content-security-policy",
        "script-src 'none'; object-src 'none'; base-uri 'none'",
    ),
    ("early-data", "1"),
    ("expect-ct", ""),
    ("forwarded", ""),
    ("if-range", ""),
    ("origin", ""),
    ("purpose", "prefetch"),
    ("server", ""),
    ("timing-allow-origin", "*"),
    ("upgrade-insecure-requests", "1"),
    ("user-agent", ""),
    ("x-forwarded-for", ""),
    ("x-frame-options", "deny"),
    ("x-frame-options", "sameorigin"),
];

/// The static table's indices of entries named `name`, so that the encoder
/// looks a name up with one `match` instead of scanning 99 entries (a test
/// checks this against [`STATIC`]).
pub(super) fn static_indices(name: &str) -> &'static [u8] {
    match name {
        ":authority" => &[0],
        ":path" => &[1],
        "age" => &[2],
        "content-disposition" => &[3],
        "content-length" => &[4],
        "cookie" => &[5],
        "date" => &[6],
        "etag" => &[7],
        "if-modified-since" => &[8],
        "if-none-match" => &[9],
        "last-modified" => &[10],
        "link" => &[11],
        "location" => &[12],
        "referer" => &[13],
        "set-cookie" => &[14],
        ":method" => &[15, 16, 17, 18, 19, 20, 21],
        ":scheme" => &[22, 23],
        ":status" => &[24, 25, 26, 27, 28, 63, 64, 65, 66, 67, 68, 69, 70, 71],
        "accept" => &[29, 30],
        "accept-encoding" => &[31],
        "accept-ranges" => &[32],
        "access-control-allow-headers" => &[33, 34, 75],
        "access-control-allow-origin" => &[35],
        "cache-control" => &[36, 37, 38, 39, 40, 41],
        "content-encoding" => &[42, 43],
        "content-type" => &[44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54],
        "range" => &[55],
        "strict-transport-security" => &[56, 57, 58],
        "vary" => &[59, 60],
        "x-content-type-options" => &[61],
        "x-xss-protection" => &[62],
        "accept-language" => &[72],
        "access-control-allow-credentials" => &[73, 74],
        "access-control-allow-methods" => &[76, 77, 78],
        "access-control-expose-headers" => &[79],
        "access-control-request-headers" => &[80],
        "access-control-request-method" => &[81, 82],
        "alt-svc" => &[83],
        "authorization" => &[84],
        "content-security-policy" => &[85],
        "early-data" => &[86],
        "expect-ct" => &[87],
        "forwarded" => &[88],
        "if-range" => &[89],
        "origin" => &[90],
        "purpose" => &[91],
        "server" => &[92],
        "timing-allow-origin" => &[93],
        "upgrade-insecure-requests" => &[94],
        "user-agent" => &[95],
        "x-forwarded-for" => &[96],
        "x-frame-options" => &[97, 98],
        _ => &[],
    }
}

/// Appends one field line (RFC 9204 §4.5): indexed when the static table
/// has the name and value, a literal with a static name reference when it
/// has the name, else a literal with a literal name. The N bit stays 0 and
/// strings are not Huffman-coded.
pub(super) fn put_field(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    let indices = static_indices(name);
    let entry = |&&index: &&u8| STATIC[usize::from(index)].1.as_bytes() == value;
    if let Some(&index) = indices.iter().find(entry) {
        put_int(out, 0xc0, 6, index.into());
    } else if let Some(&index) = indices.first() {
        put_int(out, 0x50, 4, index.into());
        put_string(out, value);
    } else {
        put_int(out, 0x20, 3, name.len() as u64);
        out.extend_from_slice(name.as_bytes());
        put_string(out, value);
    }
}

/// Appends a string literal with an 8-bit prefix, not Huffman-coded.
pub(super) fn put_string(out: &mut Vec<u8>, text: &[u8]) {
    put_int(out, 0x00, 7, text.len() as u64);
    out.extend_from_slice(text);
}

/// Appends a prefixed integer (RFC 7541 §5.1) in the low `bits` bits of a
/// first byte whose high bits are `flags`.
pub(super) fn put_int(out: &mut Vec<u8>, flags: u8, bits: u32, value: u64) {
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

/// A field line's name or value as its section carries it, so that only
/// what a caller needs gets decoded.
#[derive(Clone, Copy)]
pub(super) enum Text<'a> {
    Static(&'static str),
    Plain(&'a [u8]),
    Huffman(&'a [u8]),
}

/// Walks an encoded field section (RFC 9204 §4.5), handing each field
/// line's name and value to `line`. Whatever needs the dynamic table is an
/// error: the client's has capacity 0.
pub(super) fn decode_section<'a>(
    mut section: &'a [u8],
    mut line: impl FnMut(Text<'a>, Text<'a>) -> Result<(), H3Error>,
) -> Result<(), H3Error> {
    if prefix_int(&mut section, 8)? != 0 {
        return Err(qpack(
            "a field section needs the dynamic table, which has capacity 0",
        ));
    }
    // Sign 1 makes Base = 0 - Delta Base - 1, negative (RFC 9204 §4.5.1.2).
    let negative = section.first().is_some_and(|b| b & 0x80 != 0);
    prefix_int(&mut section, 7)?;
    if negative {
        return Err(qpack("a field section's Base is negative"));
    }
    while let Some(&first) = section.first() {
        let (name, value) = match first {
            0xc0..=0xff => {
                let (name, value) = STATIC[static_index(&mut section, 6)?];
                (Text::Static(name), Text::Static(value))
            }
            0x50..=0x5f | 0x70..=0x7f => {
                let name = STATIC[static_index(&mut section, 4)?].0;
                (Text::Static(name), string(&mut section, 7)?)
            }
            0x20..=0x3f => (string(&mut section, 3)?, string(&mut section, 7)?),
            _ => {
                return Err(qpack(
                    "a field line refers to the dynamic table, which has capacity 0",
                ))
            }
        };
        line(name, value)?;
    }
    Ok(())
}

/// Reads a prefixed integer (RFC 7541 §5.1) that starts in the low `bits`
/// bits of the first byte. QPACK needs no more than 62 bits (RFC 9204
/// §4.1.1); more, or a section ending inside it, is an error.
pub(super) fn prefix_int(section: &mut &[u8], bits: u32) -> Result<u64, H3Error> {
    const CUT: H3Error = qpack("a field section ends inside an integer");
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
                return Err(qpack("a field section's integer is longer than 62 bits"));
            }
        }
    }
    if value >= 1 << 62 {
        return Err(qpack("a field section's integer is longer than 62 bits"));
    }
    *section = rest;
    Ok(value)
}

/// Reads a static table index (RFC 9204 §3.1) with a `bits`-bit prefix.
pub(super) fn static_index(section: &mut &[u8], bits: u32) -> Result<usize, H3Error> {
    let index = prefix_int(section, bits)?;
    usize::try_from(index)
        .ok()
        .filter(|&index| index < STATIC.len())
        .ok_or(qpack("a static table index past the table's 99 entries"))
}

/// Reads a string literal (RFC 9204 §4.1.2) whose Huffman flag sits just
/// above its `bits`-bit length prefix, without decoding it.
pub(super) fn string<'a>(section: &mut &'a [u8], bits: u32) -> Result<Text<'a>, H3Error> {
    let huffman = section.first().is_some_and(|b| b & (1 << bits) != 0);
    let len = prefix_int(section, bits)?;
    let all: &'a [u8] = section;
    let len = usize::try_from(len)
        .ok()
        .filter(|&len| len <= all.len())
        .ok_or(qpack("a string literal runs past its field section's end"))?;
    let (text, rest) = all.split_at(len);
    *section = rest;
    Ok(if huffman {
        Text::Huffman(text)
    } else {
        Text::Plain(text)
    })
}

/// Decodes a Huffman-coded string (RFC 7541 §5.2, Appendix B) with
/// httlib_huffman's table for reading 5 bits at a time, handing each byte
/// to `emit` so that callers choose where it goes (a stack buffer, a check)
/// and nothing is allocated here. Stricter than `httlib_huffman::decode`
/// about the end: the padding must be at most 7 bits, all ones (a prefix of
/// EOS), and EOS itself is an error.
pub(super) fn huffman(
    src: &[u8],
    mut emit: impl FnMut(u8) -> Result<(), H3Error>,
) -> Result<(), H3Error> {
    const BAD: H3Error = qpack("a Huffman-coded string does not decode");
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

/// Whether `byte` may be in a field name: a token character (RFC 9110
/// §5.6.2) that is not an uppercase letter (RFC 9114 §4.2).
pub(super) const fn is_name_byte(byte: u8) -> bool {
    matches!(byte, b'a'..=b'z' | b'0'..=b'9' | b'!' | b'#' | b'$' | b'%' | b'&' | b'\''
        | b'*' | b'+' | b'-' | b'.' | b'^' | b'_' | b'`' | b'|' | b'~')
}

/// Checks the byte at `at` of a literal field name: a name byte, or the
/// `:` that starts a pseudo-header.
pub(super) fn check_name_byte(at: usize, byte: u8) -> Result<(), H3Error> {
    match byte {
        _ if is_name_byte(byte) || (at == 0 && byte == b':') => Ok(()),
        b'A'..=b'Z' => Err(malformed("an uppercase field name")),
        _ => Err(malformed("an invalid character in a field name")),
    }
}

/// The bytes of `text`: a literal passes each byte through `check` first
/// and a Huffman-coded one is decoded into `buf`. The flag says whether
/// they are whole: a decoded string longer than `buf` keeps only its start.
pub(super) fn text_bytes<'b>(
    text: Text<'b>,
    buf: &'b mut [u8],
    check: fn(usize, u8) -> Result<(), H3Error>,
) -> Result<(&'b [u8], bool), H3Error> {
    match text {
        Text::Static(text) => Ok((text.as_bytes(), true)),
        Text::Plain(text) => {
            for (at, &byte) in text.iter().enumerate() {
                check(at, byte)?;
            }
            Ok((text, true))
        }
        Text::Huffman(coded) => {
            let mut len = 0;
            huffman(coded, |byte| {
                check(len, byte)?;
                if let Some(slot) = buf.get_mut(len) {
                    *slot = byte;
                }
                len += 1;
                Ok(())
            })?;
            let whole = len <= buf.len();
            Ok((&buf[..len.min(buf.len())], whole))
        }
    }
}

/// What a field name is to a response.
pub(super) enum Role {
    /// `:status`.
    Status,
    /// A field, and its index in the caller's wanted names if it is one.
    Field(Option<usize>),
}

/// How many bytes of a Huffman-coded field name are decoded onto the stack:
/// longer names still get checked, but cannot be wanted or a pseudo-header.
pub(super) const NAME_BUF: usize = 128;

/// Checks a field name (RFC 9114 §4.2, §4.3) and says what it is. Static
/// table names are known good; a literal one must be lowercase token
/// characters (or `:` and them), non-empty and not connection-specific.
pub(super) fn name_role(
    name: Text<'_>,
    buf: &mut [u8; NAME_BUF],
    wanted: &[HeaderName],
) -> Result<Role, H3Error> {
    let (name, whole) = text_bytes(name, buf, check_name_byte)?;
    match name {
        [] => return Err(malformed("an empty field name")),
        b"connection" | b"keep-alive" | b"proxy-connection" | b"te" | b"transfer-encoding"
        | b"upgrade" => return Err(malformed("a connection-specific field in a response")),
        _ => {}
    }
    match name.strip_prefix(b":") {
        Some(b"status") => Ok(Role::Status),
        Some(_) => Err(malformed(
            "a request or unknown pseudo-header in a response",
        )),
        None if !whole => Ok(Role::Field(None)),
        None => Ok(Role::Field(
            wanted.iter().position(|w| w.as_str().as_bytes() == name),
        )),
    }
}

/// Reads `:status` (RFC 9114 §4.3.2): three digits from 100 to 599
/// (RFC 9110 §15), and not 101, as HTTP/3 has no Upgrade (§4.5).
pub(super) fn status(value: Text<'_>) -> Result<StatusCode, H3Error> {
    let mut buf = [0; 3];
    let (digits, whole) = text_bytes(value, &mut buf, |_, _| Ok(()))?;
    StatusCode::from_bytes(digits)
        .ok()
        .filter(|status| {
            whole
                && (100..600).contains(&status.as_u16())
                && *status != StatusCode::SWITCHING_PROTOCOLS
        })
        .ok_or(malformed(
            "a :status that is not a status code from 100 to 599, or is 101",
        ))
}

/// A wanted field's value: the static table's without copying, a literal's
/// copied (decoded, if Huffman-coded) and checked for control characters.
pub(super) fn header_value(value: Text<'_>) -> Result<HeaderValue, H3Error> {
    let value = match value {
        Text::Static(value) => Ok(HeaderValue::from_static(value)),
        Text::Plain(value) => HeaderValue::from_bytes(value),
        Text::Huffman(coded) => {
            // The shortest code is 5 bits, so 8 bits per 5 bound the size.
            let mut decoded = Vec::with_capacity(coded.len() * 8 / 5);
            huffman(coded, |byte| {
                decoded.push(byte);
                Ok(())
            })?;
            HeaderValue::from_maybe_shared(Bytes::from(decoded))
        }
    };
    value.map_err(|_| malformed("a field value with a control character"))
}

/// A field section read as a response head, or as trailers (RFC 9114 §4.3).
pub(super) struct SectionReader<'w> {
    wanted: &'w [HeaderName],
    trailers: bool,
    status: Option<StatusCode>,
    fields: Vec<(HeaderName, HeaderValue)>,
    name_buf: [u8; NAME_BUF],
}

impl<'w> SectionReader<'w> {
    fn new(wanted: &'w [HeaderName], trailers: bool) -> Self {
        Self {
            wanted,
            trailers,
            status: None,
            fields: Vec::new(),
            name_buf: [0; NAME_BUF],
        }
    }

    /// Takes one field line. Pseudo-headers must precede fields, so a field
    /// before `:status` means it is missing or late: malformed either way,
    /// and a `:status` after a field is necessarily the second one.
    fn field(&mut self, name: Text<'_>, value: Text<'_>) -> Result<(), H3Error> {
        match name_role(name, &mut self.name_buf, self.wanted)? {
            Role::Status if self.trailers => Err(malformed("a :status in trailers")),
            Role::Status if self.status.is_some() => Err(malformed("a second :status")),
            Role::Status => {
                self.status = Some(status(value)?);
                Ok(())
            }
            Role::Field(_) if !self.trailers && self.status.is_none() => {
                Err(malformed("a response field before :status"))
            }
            Role::Field(Some(at)) => {
                self.fields
                    .push((self.wanted[at].clone(), header_value(value)?));
                Ok(())
            }
            Role::Field(_) => Ok(()),
        }
    }
}

/// Decodes a response head: the final one, or `None` for an interim (1xx)
/// head, which the caller skips.
pub(super) fn decode_head(section: &[u8], wanted: &[HeaderName]) -> Result<Option<Head>, H3Error> {
    let mut reader = SectionReader::new(wanted, false);
    decode_section(section, |name, value| reader.field(name, value))?;
    let status = reader
        .status
        .ok_or(malformed("a response head without :status"))?;
    if status.is_informational() {
        return Ok(None);
    }
    Ok(Some(Head {
        status,
        fields: reader.fields,
    }))
}

/// Checks a trailer section, which the caller does not read.
pub(super) fn check_trailers(section: &[u8]) -> Result<(), H3Error> {
    let mut reader = SectionReader::new(&[], true);
    decode_section(section, |name, value| reader.field(name, value))
}
