//! Content decoding, chunk by chunk, so the loader can read what a server
//! sends compressed, as a browser does. The loader offers what Chromium
//! offers: `gzip, deflate, br, zstd`.

use std::io::Write;

use http::header::{HeaderMap, CONTENT_ENCODING};

/// What the loader sends as `accept-encoding`.
pub const ACCEPTED: &str = "gzip, deflate, br, zstd";

/// Decodes one response body.
pub enum ContentDecoder {
    /// No encoding: chunks pass through.
    Identity,
    Gzip(flate2::write::GzDecoder<Vec<u8>>),
    Deflate(flate2::write::ZlibDecoder<Vec<u8>>),
    Brotli(Box<brotli::DecompressorWriter<Vec<u8>>>),
    Zstd(zstd::stream::write::Decoder<'static, Vec<u8>>),
}

impl ContentDecoder {
    /// The decoder for the response's `content-encoding`, or why there is none.
    pub fn for_headers(headers: &HeaderMap) -> Result<ContentDecoder, String> {
        let Some(value) = headers.get(CONTENT_ENCODING) else {
            return Ok(ContentDecoder::Identity);
        };
        let value = value.to_str().unwrap_or("").trim().to_ascii_lowercase();
        Ok(match value.as_str() {
            "" | "identity" => ContentDecoder::Identity,
            "gzip" | "x-gzip" => ContentDecoder::Gzip(flate2::write::GzDecoder::new(Vec::new())),
            "deflate" => ContentDecoder::Deflate(flate2::write::ZlibDecoder::new(Vec::new())),
            "br" => {
                ContentDecoder::Brotli(Box::new(brotli::DecompressorWriter::new(Vec::new(), 4096)))
            }
            "zstd" => ContentDecoder::Zstd(
                zstd::stream::write::Decoder::new(Vec::new()).map_err(|err| err.to_string())?,
            ),
            other => return Err(format!("content-encoding `{other}` was not offered")),
        })
    }

    /// The decoded bytes `chunk` completes.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Vec<u8>, String> {
        let failed = |err: std::io::Error| format!("content decoding failed: {err}");
        match self {
            ContentDecoder::Identity => return Ok(chunk.to_vec()),
            ContentDecoder::Gzip(d) => d.write_all(chunk).map_err(failed)?,
            ContentDecoder::Deflate(d) => d.write_all(chunk).map_err(failed)?,
            ContentDecoder::Brotli(d) => d.write_all(chunk).map_err(failed)?,
            ContentDecoder::Zstd(d) => d.write_all(chunk).map_err(failed)?,
        }
        Ok(std::mem::take(self.output()))
    }

    /// The last decoded bytes, once the body has ended; a truncated
    /// stream is an error.
    pub fn finish(mut self) -> Result<Vec<u8>, String> {
        let failed = |err: std::io::Error| format!("content decoding failed at the end: {err}");
        match &mut self {
            ContentDecoder::Identity => return Ok(Vec::new()),
            ContentDecoder::Gzip(d) => d.try_finish().map_err(failed)?,
            ContentDecoder::Deflate(d) => d.try_finish().map_err(failed)?,
            ContentDecoder::Brotli(d) => d.close().map_err(failed)?,
            ContentDecoder::Zstd(d) => d.flush().map_err(failed)?,
        }
        Ok(std::mem::take(self.output()))
    }

    fn output(&mut self) -> &mut Vec<u8> {
        match self {
            ContentDecoder::Gzip(d) => d.get_mut(),
            ContentDecoder::Deflate(d) => d.get_mut(),
            ContentDecoder::Brotli(d) => d.get_mut(),
            ContentDecoder::Zstd(d) => d.get_mut(),
            ContentDecoder::Identity => unreachable!("identity has no buffer"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn decode_in_chunks(encoding: &str, encoded: &[u8]) -> Vec<u8> {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_ENCODING, HeaderValue::from_str(encoding).unwrap());
        let mut decoder = ContentDecoder::for_headers(&headers).unwrap();
        let mut out = Vec::new();
        for chunk in encoded.chunks(7) {
            out.extend(decoder.feed(chunk).unwrap());
        }
        out.extend(decoder.finish().unwrap());
        out
    }

    #[test]
    fn every_offered_encoding_decodes_chunk_by_chunk() {
        let text: Vec<u8> = (0..5000)
            .flat_map(|i| format!("<p>{i}</p>").into_bytes())
            .collect();
        let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gzip.write_all(&text).unwrap();
        let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        zlib.write_all(&text).unwrap();
        let mut br = Vec::new();
        brotli::BrotliCompress(&mut &text[..], &mut br, &Default::default()).unwrap();
        let zstd = zstd::bulk::compress(&text, 3).unwrap();
        assert_eq!(decode_in_chunks("gzip", &gzip.finish().unwrap()), text);
        assert_eq!(decode_in_chunks("deflate", &zlib.finish().unwrap()), text);
        assert_eq!(decode_in_chunks("br", &br), text);
        assert_eq!(decode_in_chunks("zstd", &zstd), text);
    }

    #[test]
    fn a_truncated_or_unoffered_body_is_an_error() {
        let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gzip.write_all(&[b'x'; 1000]).unwrap();
        let encoded = gzip.finish().unwrap();
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        let mut decoder = ContentDecoder::for_headers(&headers).unwrap();
        decoder.feed(&encoded[..encoded.len() / 2]).unwrap();
        assert!(decoder.finish().is_err());
        headers.insert(CONTENT_ENCODING, HeaderValue::from_static("compress"));
        let err = ContentDecoder::for_headers(&headers).err().unwrap();
        assert!(err.contains("compress"), "{err}");
    }
}
