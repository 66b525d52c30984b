//! [`HttpSource`]: random access to a remote file by HTTP range requests.

use super::client::{bad_response, content_length, HubClient};
use super::RemoteError;
use crate::source::ByteSource;
use serde::{Deserialize, Serialize};
use std::io::{self, Read};
use std::sync::Mutex;
use ureq::http::Response;
use ureq::Body;

/// Bytes fetched when the source is opened: it learns the file's length from the answer's
/// Content-Range and keeps these bytes, which hold most safetensors headers and GGUF preambles.
pub const OPEN_PREFETCH: u64 = 64 * 1024;

/// How far a server that ignores `Range` (answers 200 with the whole file) may make us read
/// before the wanted bytes; past this we give up rather than stream gigabytes.
const MAX_SKIP_WITHOUT_RANGES: u64 = 64 * 1024 * 1024;

/// What a source has cost so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FetchStats {
    /// response body bytes read (including any a range-less server made us skip)
    pub bytes_fetched: u64,
    /// HTTP requests made (a redirect followed inside one request counts once)
    pub round_trips: u64,
}

/// A remote file read by `Range: bytes=a-b` requests.
pub struct HttpSource {
    client: HubClient,
    url: String,
    len: Option<u64>,
    /// the first bytes of the file, fetched by `open`
    prefix: Vec<u8>,
    stats: Mutex<FetchStats>,
}

impl HttpSource {
    /// Open `url` with one ranged GET of the first [`OPEN_PREFETCH`] bytes: this checks access
    /// (401/403/404 fail here, with their one-line errors) and learns the length.
    pub fn open(client: &HubClient, url: &str) -> Result<HttpSource, RemoteError> {
        let mut src = HttpSource {
            client: client.clone(),
            url: url.to_string(),
            len: None,
            prefix: Vec::new(),
            stats: Mutex::new(FetchStats::default()),
        };
        let resp = src.request(Some((0, OPEN_PREFETCH - 1)))?;
        match resp.status().as_u16() {
            206 => {
                let (start, total) = content_range(&resp).ok_or_else(|| {
                    bad_response(
                        url,
                        "a 206 answer without a usable Content-Range".to_string(),
                    )
                })?;
                if start != 0 {
                    return Err(bad_response(
                        url,
                        format!("asked for byte 0, got byte {start}"),
                    ));
                }
                src.len = total;
                src.prefix = src.read_body(resp, 0, OPEN_PREFETCH)?;
            }
            // an empty file: nothing satisfies the range; Content-Range says `bytes */0`
            416 => src.len = Some(content_range_total(&resp).unwrap_or(0)),
            200 => {
                src.len = content_length(&resp);
                src.prefix = src.read_body(resp, 0, OPEN_PREFETCH)?;
            }
            other => return Err(bad_response(url, format!("unexpected HTTP {other}"))),
        }
        if src
            .len
            .is_some_and(|len| (src.prefix.len() as u64) < len.min(OPEN_PREFETCH))
        {
            return Err(bad_response(
                url,
                format!("the answer ended after {} bytes", src.prefix.len()),
            ));
        }
        Ok(src)
    }

    /// Bytes fetched and round trips so far.
    pub fn stats(&self) -> FetchStats {
        *self.stats.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    fn request(&self, range: Option<(u64, u64)>) -> Result<Response<Body>, RemoteError> {
        self.stats
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .round_trips += 1;
        self.client.get(&self.url, range)
    }

    /// Read up to `want` bytes after skipping `skip`, then drop the connection.
    fn read_body(
        &self,
        resp: Response<Body>,
        skip: u64,
        want: u64,
    ) -> Result<Vec<u8>, RemoteError> {
        let net = |e: io::Error| RemoteError::Network {
            url: self.url.clone(),
            message: e.to_string(),
        };
        let mut reader = resp.into_body().into_reader();
        let skipped = io::copy(&mut (&mut reader).take(skip), &mut io::sink()).map_err(net)?;
        let mut out = Vec::with_capacity(want.min(OPEN_PREFETCH * 16) as usize);
        (&mut reader)
            .take(want)
            .read_to_end(&mut out)
            .map_err(net)?;
        self.stats
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .bytes_fetched += skipped + out.len() as u64;
        if skipped < skip {
            return Ok(Vec::new());
        }
        Ok(out)
    }

    fn fetch(&self, offset: u64, buf: &mut [u8]) -> Result<(), RemoteError> {
        let want = buf.len() as u64;
        let last = offset + want - 1;
        let resp = self.request(Some((offset, last)))?;
        let got = match resp.status().as_u16() {
            206 => {
                let (start, _) = content_range(&resp)
                    .ok_or_else(|| bad_response(&self.url, "a 206 answer without a usable Content-Range".to_string()))?;
                if start != offset {
                    return Err(bad_response(&self.url, format!("asked for byte {offset}, got byte {start}")));
                }
                self.read_body(resp, 0, want)?
            }
            200 if offset <= MAX_SKIP_WITHOUT_RANGES => self.read_body(resp, offset, want)?,
            200 => {
                return Err(bad_response(
                    &self.url,
                    format!("the server ignores range requests; reading byte {offset} would download the file"),
                ))
            }
            416 => Vec::new(),
            other => return Err(bad_response(&self.url, format!("unexpected HTTP {other}"))),
        };
        if (got.len() as u64) < want {
            return Err(bad_response(
                &self.url,
                format!(
                    "bytes {offset}..{} asked, {} received (file shorter than expected?)",
                    offset + want,
                    got.len()
                ),
            ));
        }
        buf.copy_from_slice(&got);
        Ok(())
    }
}

impl ByteSource for HttpSource {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let end = offset
            .checked_add(buf.len() as u64)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "offset overflows"))?;
        if self.len.is_some_and(|len| end > len) {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "read past the end of the file",
            ));
        }
        // serve what the prefix holds, fetch the rest
        let from_prefix = if offset < self.prefix.len() as u64 {
            let n = (self.prefix.len() as u64 - offset).min(buf.len() as u64) as usize;
            buf[..n].copy_from_slice(&self.prefix[offset as usize..offset as usize + n]);
            n
        } else {
            0
        };
        if from_prefix == buf.len() {
            return Ok(());
        }
        self.fetch(offset + from_prefix as u64, &mut buf[from_prefix..])
            .map_err(io::Error::other)
    }

    fn len(&self) -> Option<u64> {
        self.len
    }

    fn name(&self) -> String {
        self.url.clone()
    }
}

/// `Content-Range: bytes START-END/TOTAL` → (START, TOTAL if not `*`).
fn content_range(resp: &Response<Body>) -> Option<(u64, Option<u64>)> {
    let v = resp.headers().get("content-range")?.to_str().ok()?;
    let (range, total) = v.trim().strip_prefix("bytes ")?.split_once('/')?;
    let start: u64 = range.split_once('-')?.0.trim().parse().ok()?;
    Some((start, total.trim().parse().ok()))
}

/// `Content-Range: bytes */TOTAL` (a 416 answer) → TOTAL.
fn content_range_total(resp: &Response<Body>) -> Option<u64> {
    let v = resp.headers().get("content-range")?.to_str().ok()?;
    v.rsplit_once('/')?.1.trim().parse().ok()
}
