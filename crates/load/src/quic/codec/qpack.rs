//! QPACK (RFC 9204) without a dynamic table: the static table, field lines
//! written for requests, and field sections read from responses.

use super::*;
use crate::fields::{prefix_int, put_int, put_string, string, FieldError, SectionReader, Text};

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
        put_string(out, 0x00, 7, value, false);
    } else {
        put_string(out, 0x20, 3, name.as_bytes(), false);
        put_string(out, 0x00, 7, value, false);
    }
}

/// Walks an encoded field section (RFC 9204 §4.5), handing each field
/// line's name and value to `line`. Whatever needs the dynamic table is an
/// error: the client's has capacity 0.
pub(super) fn decode_section<'a>(
    mut section: &'a [u8],
    mut line: impl FnMut(Text<'a>, Text<'a>) -> Result<(), FieldError>,
) -> Result<(), FieldError> {
    if prefix_int(&mut section, 8)? != 0 {
        return Err(FieldError::Undecodable(
            "a field section needs the dynamic table, which has capacity 0",
        ));
    }
    // Sign 1 makes Base = 0 - Delta Base - 1, negative (RFC 9204 §4.5.1.2).
    let negative = section.first().is_some_and(|b| b & 0x80 != 0);
    prefix_int(&mut section, 7)?;
    if negative {
        return Err(FieldError::Undecodable(
            "a field section's Base is negative",
        ));
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
                return Err(FieldError::Undecodable(
                    "a field line refers to the dynamic table, which has capacity 0",
                ))
            }
        };
        line(name, value)?;
    }
    Ok(())
}

/// Reads a static table index (RFC 9204 §3.1) with a `bits`-bit prefix.
pub(super) fn static_index(section: &mut &[u8], bits: u32) -> Result<usize, FieldError> {
    let index = prefix_int(section, bits)?;
    usize::try_from(index)
        .ok()
        .filter(|&index| index < STATIC.len())
        .ok_or(FieldError::Undecodable(
            "a static table index past the table's 99 entries",
        ))
}

/// Decodes a response head: the final one, or `None` for an interim (1xx)
/// head, which the caller skips.
pub(super) fn decode_head(section: &[u8], wanted: &[HeaderName]) -> Result<Option<Head>, H3Error> {
    let mut reader = SectionReader::head(wanted);
    decode_section(section, |name, value| reader.field(name, value))?;
    Ok(reader.finish()?)
}

/// Checks a trailer section, which the caller does not read.
pub(super) fn check_trailers(section: &[u8]) -> Result<(), H3Error> {
    let mut reader = SectionReader::trailers();
    Ok(decode_section(section, |name, value| {
        reader.field(name, value)
    })?)
}
