//! A minimal blocking HTTP/1.1 client: one keep-alive connection per thread, requests with a
//! `Content-Length` body (or a chunked one streamed from a reader), responses with
//! `Content-Length` or chunked bodies. Used by `ingest-driver` (events to an engine over HTTP)
//! and by `victorialogs-logs` (the log protocol translated into VictoriaLogs' HTTP API).
//!
//! Hand-written rather than a client library so that a driver or adapter, which shares the
//! 2-core dev machine with the engine it measures, spends as little CPU per request as it can:
//! a request is one header write and one body write on a socket with `TCP_NODELAY`, a response
//! one buffered read of the header and the body.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

pub struct Response {
    pub status: u16,
    pub body: Vec<u8>,
}

pub struct Connection {
    addr: SocketAddr,
    stream: Option<BufReader<TcpStream>>,
    /// Requests sent on the current stream: a stream that served one may have been closed by
    /// the server since (idle timeout), and a failure on it is retried once on a fresh one.
    served: u64,
}

impl Connection {
    pub fn new(addr: SocketAddr) -> Connection {
        Connection {
            addr,
            stream: None,
            served: 0,
        }
    }

    pub fn get(&mut self, target: &str) -> io::Result<Response> {
        self.request("GET", target, None, &[])
    }

    pub fn post(&mut self, target: &str, content_type: &str, body: &[u8]) -> io::Result<Response> {
        self.request("POST", target, Some(content_type), body)
    }

    /// POSTs the whole of `body` with `Transfer-Encoding: chunked`, in chunks of at most 1 MiB,
    /// without holding it in memory: for bodies too large for that, or of unknown length. Not
    /// retried on a stale connection (the reader cannot be rewound), so it always opens a fresh
    /// one.
    pub fn post_chunked(
        &mut self,
        target: &str,
        content_type: &str,
        body: &mut dyn Read,
    ) -> io::Result<Response> {
        self.stream = None;
        let head = format!(
            "POST {target} HTTP/1.1\r\nHost: {}\r\nContent-Type: {content_type}\r\nTransfer-Encoding: chunked\r\n\r\n",
            self.addr
        );
        let stream = TcpStream::connect_timeout(&self.addr, Duration::from_secs(10))?;
        stream.set_nodelay(true)?;
        let mut reader = BufReader::with_capacity(64 << 10, stream);
        let outcome = (|| {
            let stream = reader.get_mut();
            stream.write_all(head.as_bytes())?;
            let mut chunk = vec![0u8; 1 << 20];
            loop {
                let read = match body.read(&mut chunk) {
                    Ok(0) => break,
                    Ok(read) => read,
                    Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                    Err(error) => return Err(error),
                };
                stream.write_all(format!("{read:x}\r\n").as_bytes())?;
                stream.write_all(&chunk[..read])?;
                stream.write_all(b"\r\n")?;
            }
            stream.write_all(b"0\r\n\r\n")?;
            read_response(&mut reader)
        })();
        let (response, keep_alive) = outcome?;
        if keep_alive {
            self.stream = Some(reader);
            self.served = 1;
        }
        Ok(response)
    }

    fn request(
        &mut self,
        method: &str,
        target: &str,
        content_type: Option<&str>,
        body: &[u8],
    ) -> io::Result<Response> {
        let mut head = format!("{method} {target} HTTP/1.1\r\nHost: {}\r\n", self.addr);
        if let Some(content_type) = content_type {
            head.push_str(&format!(
                "Content-Type: {content_type}\r\nContent-Length: {}\r\n",
                body.len()
            ));
        }
        head.push_str("\r\n");
        let reused = self.stream.is_some() && self.served > 0;
        match self.exchange(head.as_bytes(), body) {
            Err(error) if reused && is_stale(&error) => {
                self.stream = None;
                self.exchange(head.as_bytes(), body)
            }
            outcome => outcome,
        }
    }

    fn exchange(&mut self, head: &[u8], body: &[u8]) -> io::Result<Response> {
        if self.stream.is_none() {
            let stream = TcpStream::connect_timeout(&self.addr, Duration::from_secs(10))?;
            stream.set_nodelay(true)?;
            self.stream = Some(BufReader::with_capacity(64 << 10, stream));
            self.served = 0;
        }
        let outcome = (|| {
            let reader = self.stream.as_mut().expect("connected above");
            let stream = reader.get_mut();
            stream.write_all(head)?;
            if !body.is_empty() {
                stream.write_all(body)?;
            }
            read_response(reader)
        })();
        match outcome {
            Ok((response, keep_alive)) => {
                self.served += 1;
                if !keep_alive {
                    self.stream = None;
                }
                Ok(response)
            }
            Err(error) => {
                self.stream = None;
                Err(error)
            }
        }
    }
}

/// An error a server's closing of an idle connection gives.
fn is_stale(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::UnexpectedEof
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe
    )
}

fn invalid(message: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.into())
}

/// Reads one response; also says whether the connection stays open.
fn read_response(reader: &mut impl BufRead) -> io::Result<(Response, bool)> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    let mut parts = line.split_whitespace();
    let version = parts.next().unwrap_or_default();
    let status: u16 = parts
        .next()
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| invalid(format!("malformed status line {line:?}")))?;
    let mut keep_alive = version != "HTTP/1.0";
    let mut length = None;
    let mut chunked = false;
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        let Some((name, value)) = header.split_once(':') else {
            return Err(invalid(format!("malformed header {header:?}")));
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            length = Some(
                value
                    .parse::<usize>()
                    .map_err(|_| invalid(format!("bad Content-Length {value:?}")))?,
            );
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.to_ascii_lowercase().contains("chunked");
        } else if name.eq_ignore_ascii_case("connection") {
            keep_alive = !value.eq_ignore_ascii_case("close");
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            line.clear();
            reader.read_line(&mut line)?;
            let size = line.trim_end().split(';').next().unwrap_or_default();
            let size = usize::from_str_radix(size.trim(), 16)
                .map_err(|_| invalid(format!("bad chunk size {line:?}")))?;
            if size == 0 {
                // Trailers, then the empty line.
                loop {
                    line.clear();
                    if reader.read_line(&mut line)? == 0 || line.trim_end().is_empty() {
                        break;
                    }
                }
                break;
            }
            let start = body.len();
            body.resize(start + size, 0);
            reader.read_exact(&mut body[start..])?;
            line.clear();
            reader.read_line(&mut line)?;
        }
    } else if let Some(length) = length {
        body.resize(length, 0);
        reader.read_exact(&mut body)?;
    } else if (100..200).contains(&status) || status == 204 || status == 304 {
        // No body.
    } else {
        // Delimited by the end of the connection.
        reader.read_to_end(&mut body)?;
        keep_alive = false;
    }
    Ok((Response { status, body }, keep_alive))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::TcpListener;

    fn read(raw: &str) -> (Response, bool) {
        read_response(&mut io::Cursor::new(raw.as_bytes())).unwrap()
    }

    #[test]
    fn reads_length_chunked_and_close_delimited_bodies() {
        let (response, keep_alive) =
            read("HTTP/1.1 200 OK\r\ncontent-length: 5\r\nX: y\r\n\r\nhello");
        assert_eq!(
            (response.status, &response.body[..], keep_alive),
            (200, &b"hello"[..], true)
        );
        let (response, keep_alive) = read(
            "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=1\r\nde\r\n0\r\n\r\n",
        );
        assert_eq!(
            (response.status, &response.body[..], keep_alive),
            (201, &b"abcde"[..], true)
        );
        let (response, keep_alive) = read("HTTP/1.0 404 Not Found\r\n\r\nnope");
        assert_eq!(
            (response.status, &response.body[..], keep_alive),
            (404, &b"nope"[..], false)
        );
        let (_, keep_alive) =
            read("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
        assert!(!keep_alive);
        assert!(read_response(&mut io::Cursor::new(&b"garbage\r\n\r\n"[..])).is_err());
    }

    /// A server that answers two requests per connection, then closes it: the client must
    /// reconnect and retry on the stale connection without the caller seeing it.
    #[test]
    fn keeps_connections_alive_and_retries_stale_ones() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            for _ in 0..3 {
                let (stream, _) = listener.accept().unwrap();
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut stream = stream;
                for _ in 0..2 {
                    let mut length = 0;
                    let mut line = String::new();
                    loop {
                        line.clear();
                        if reader.read_line(&mut line).unwrap() == 0 {
                            return;
                        }
                        if line == "\r\n" {
                            break;
                        }
                        if let Some(value) =
                            line.to_ascii_lowercase().strip_prefix("content-length:")
                        {
                            length = value.trim().parse().unwrap();
                        }
                    }
                    let mut body = vec![0; length];
                    reader.read_exact(&mut body).unwrap();
                    let answer = format!("got {}", body.len());
                    write!(
                        stream,
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{answer}",
                        answer.len()
                    )
                    .unwrap();
                }
            }
        });
        let mut connection = Connection::new(addr);
        for round in 0..5 {
            let response = connection
                .post("/_bulk", "application/x-ndjson", b"abc")
                .unwrap();
            assert_eq!(response.status, 200, "round {round}");
            assert_eq!(response.body, b"got 3");
        }
        let response = connection.get("/search?q=marker:m1").unwrap();
        assert_eq!(response.body, b"got 0");
        drop(connection);
        server.join().unwrap();
    }

    /// A chunked POST streams a body larger than one chunk; the server reads it back whole.
    #[test]
    fn posts_chunked_bodies() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut stream = stream;
            let mut line = String::new();
            let mut chunked = false;
            loop {
                line.clear();
                reader.read_line(&mut line).unwrap();
                if line == "\r\n" {
                    break;
                }
                chunked |= line.eq_ignore_ascii_case("transfer-encoding: chunked\r\n");
            }
            assert!(chunked);
            let mut body = Vec::new();
            loop {
                line.clear();
                reader.read_line(&mut line).unwrap();
                let size = usize::from_str_radix(line.trim_end(), 16).unwrap();
                let mut chunk = vec![0; size + 2];
                reader.read_exact(&mut chunk).unwrap();
                if size == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..size]);
            }
            let answer = format!(
                "got {} {}",
                body.len(),
                body.iter().filter(|&&b| b == b'x').count()
            );
            write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{answer}",
                answer.len()
            )
            .unwrap();
        });
        let body = vec![b'x'; (1 << 20) + 5];
        let mut connection = Connection::new(addr);
        let response = connection
            .post_chunked("/insert", "application/stream+json", &mut &body[..])
            .unwrap();
        assert_eq!(response.status, 200);
        assert_eq!(response.body, format!("got {0} {0}", body.len()).as_bytes());
        server.join().unwrap();
    }
}
