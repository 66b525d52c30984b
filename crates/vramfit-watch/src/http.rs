//! A minimal HTTP/1.0 GET for engine pages (`/metrics`, `/slots`) on plain `http://` URLs.
//!
//! Engines serve these pages over plain HTTP on the host or pod; a full client (ureq with TLS)
//! would add a TLS stack to the build for nothing. HTTP/1.0 makes the server close the connection
//! after one identity-encoded body, so there is no chunked decoding to get wrong. Bounded in time
//! (timeouts) and memory (body cap).

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// A page larger than this is not an engine metrics page.
const MAX_BODY_BYTES: u64 = 16 << 20;

/// An `http://host[:port][/base]` URL split into parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpUrl {
    pub host: String,
    pub port: u16,
    /// Path prefix without a trailing slash ("" for the root).
    pub base: String,
}

impl HttpUrl {
    pub fn parse(url: &str) -> Result<HttpUrl, String> {
        let rest = url.strip_prefix("http://").ok_or_else(|| {
            if url.starts_with("https://") {
                "https is not supported; point at the engine's plain http port (e.g. http://127.0.0.1:8000)".to_string()
            } else {
                "write it as http://HOST:PORT, e.g. http://127.0.0.1:8000".to_string()
            }
        })?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
            None => (rest, ""),
        };
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(']') || authority.starts_with('[') => {
                let port = p
                    .parse::<u16>()
                    .map_err(|_| format!("port '{p}' is not a number 1-65535"))?;
                (h, port)
            }
            _ => (authority, 80),
        };
        if host.is_empty() {
            return Err("the host is missing".into());
        }
        Ok(HttpUrl {
            host: host.to_string(),
            port,
            base: path.to_string(),
        })
    }

    /// GETs `base + path` and returns the body of a 200 answer.
    pub fn get(&self, path: &str, timeout: Duration) -> Result<String, String> {
        let addr = (
            self.host.trim_start_matches('[').trim_end_matches(']'),
            self.port,
        )
            .to_socket_addrs()
            .map_err(|e| format!("cannot resolve {}: {e}", self.host))?
            .next()
            .ok_or_else(|| format!("cannot resolve {}", self.host))?;
        let mut stream = TcpStream::connect_timeout(&addr, timeout).map_err(|e| e.to_string())?;
        stream
            .set_read_timeout(Some(timeout))
            .map_err(|e| e.to_string())?;
        stream
            .set_write_timeout(Some(timeout))
            .map_err(|e| e.to_string())?;
        let request = format!(
            "GET {}{} HTTP/1.0\r\nHost: {}:{}\r\nUser-Agent: vramfit-watch\r\nAccept: text/plain, application/json\r\n\r\n",
            self.base, path, self.host, self.port
        );
        stream
            .write_all(request.as_bytes())
            .map_err(|e| e.to_string())?;
        let mut raw = Vec::new();
        stream
            .take(MAX_BODY_BYTES + 64 * 1024)
            .read_to_end(&mut raw)
            .map_err(|e| e.to_string())?;
        let split = raw
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .ok_or("the answer is not HTTP")?;
        let head = String::from_utf8_lossy(&raw[..split]);
        let status_line = head.lines().next().unwrap_or("");
        let status = status_line.split_whitespace().nth(1).unwrap_or("");
        if status != "200" {
            return Err(format!(
                "{}{} answered '{}'",
                self.base,
                path,
                status_line.trim()
            ));
        }
        if head.lines().any(|l| {
            let l = l.to_ascii_lowercase();
            l.starts_with("transfer-encoding:") && l.contains("chunked")
        }) {
            return Err("the server sent a chunked answer to an HTTP/1.0 request".into());
        }
        Ok(String::from_utf8_lossy(&raw[split + 4..]).into_owned())
    }
}
