//! The real `quarry` binary, and `quarry serve` on a loopback port asked over plain HTTP/1.1,
//! shared by the server's end-to-end tests.
#![allow(dead_code)] // each test binary uses its own part

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

/// A loopback port free now (for a listener a spawned node binds itself).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub fn quarry(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_quarry"))
        .args(args)
        .output()
        .expect("run quarry")
}

/// A data directory `DIR/data` of `events` generated events from 2026-01-01 (the same on every
/// machine), indexed by `quarry index` with `index_args`.
pub fn indexed_logs(dir: &Path, events: usize, index_args: &[&str]) -> std::path::PathBuf {
    let (file, data) = (dir.join("events.json"), dir.join("data"));
    let count = events.to_string();
    let start = "2026-01-01T00:00:00Z";
    let out = quarry(&[
        "gen-logs",
        "--events",
        &count,
        "--start",
        start,
        "-o",
        path(&file),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut args = vec!["index", "--data", path(&data)];
    args.extend_from_slice(index_args);
    args.push(path(&file));
    let out = quarry(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    data
}

fn path(path: &Path) -> &str {
    path.to_str().expect("test paths are UTF-8")
}

pub struct Server {
    pub child: Child,
    pub addr: String,
    /// Sent as `Authorization: Bearer` by `request` and `get`.
    pub token: Option<String>,
}

/// An answer: status, headers (lowercase names) and body.
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Answer {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "{e}: {} {}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

impl Server {
    pub fn start(data: &Path) -> Server {
        Server::start_with(data, &[])
    }

    /// `quarry serve --data DATA --listen 127.0.0.1:0 EXTRA`.
    pub fn start_with(data: &Path, extra: &[&str]) -> Server {
        let mut args = vec!["--data", data.to_str().unwrap(), "--listen", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        Server::spawn(&args, &[], Path::new("."))
    }

    /// `quarry serve ARGS` with `env`, in `dir`; waits for the line with its address.
    pub fn spawn(args: &[&str], env: &[(&str, &str)], dir: &Path) -> Server {
        Server::spawn_logged(args, env, dir, None)
    }

    /// As `spawn`, the server's log (stderr) appended to `log` when given.
    pub fn spawn_logged(
        args: &[&str],
        env: &[(&str, &str)],
        dir: &Path,
        log: Option<&Path>,
    ) -> Server {
        Server::try_spawn_logged(args, env, dir, log).unwrap_or_else(|why| panic!("{why}"))
    }

    /// As `spawn_logged`; a server that exits before it prints its address is an error with
    /// its log (stderr, kept in a temporary file when `log` is not given).
    pub fn try_spawn_logged(
        args: &[&str],
        env: &[(&str, &str)],
        dir: &Path,
        log: Option<&Path>,
    ) -> Result<Server, String> {
        let kept = tempfile::NamedTempFile::new().unwrap();
        let log_path = log.unwrap_or(kept.path()).to_owned();
        let stderr = Stdio::from(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&log_path)
                .unwrap(),
        );
        let mut child = Command::new(env!("CARGO_BIN_EXE_quarry"))
            .arg("serve")
            .args(args)
            .envs(env.iter().copied())
            .current_dir(dir)
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("start quarry serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let Some(addr) = line
            .split("://")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
        else {
            let _ = child.kill();
            let status = child.wait().ok();
            let log = std::fs::read_to_string(&log_path).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(20).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            return Err(format!(
                "quarry serve {args:?} printed no address ({line:?}; exit {status:?}); its log ends:\n{}",
                tail.join("\n")
            ));
        };
        Ok(Server {
            child,
            addr: addr.to_owned(),
            token: None,
        })
    }

    /// One request with `headers` and a raw body.
    pub fn send(
        &self,
        method: &str,
        target: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Answer {
        send_to(&self.addr, method, target, headers, body)
            .unwrap_or_else(|| panic!("no answer to {method} {target}"))
    }

    /// One request with a JSON (or any text) body; returns the status and the JSON answer.
    pub fn request(
        &self,
        method: &str,
        target: &str,
        body: Option<&str>,
    ) -> (u16, serde_json::Value) {
        let authorization = self.token.as_ref().map(|t| format!("Bearer {t}"));
        let mut headers = vec![("Content-Type", "application/json")];
        if let Some(value) = &authorization {
            headers.push(("Authorization", value));
        }
        let answer = self.send(method, target, &headers, body.unwrap_or("").as_bytes());
        (answer.status, answer.json())
    }

    pub fn get(&self, target: &str) -> (u16, serde_json::Value) {
        self.request("GET", target, None)
    }

    /// Every event of `GET /api/v1/default/export?PARAMS` (NDJSON, each with its `_time`).
    pub fn export(&self, params: &str) -> Vec<serde_json::Value> {
        let authorization = self.token.as_ref().map(|t| format!("Bearer {t}"));
        let headers: Vec<(&str, &str)> = authorization
            .iter()
            .map(|value| ("Authorization", value.as_str()))
            .collect();
        let target = format!("/api/v1/default/export?{params}");
        let answer = self.send("GET", &target, &headers, b"");
        let body = String::from_utf8_lossy(&answer.body);
        assert_eq!(answer.status, 200, "{target}: {body}");
        body.lines()
            .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
            .collect()
    }

    /// Sends SIGTERM and waits for the process; returns whether it exited successfully.
    pub fn terminate(mut self) -> bool {
        let killed = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        self.child.wait().unwrap().success()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One request to `addr`; None when the connection fails or closes before a whole head (a
/// server killed meanwhile).
pub fn send_to(
    addr: &str,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Option<Answer> {
    let mut stream = TcpStream::connect(addr).ok()?;
    let mut head = format!(
        "{method} {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).ok()?;
    // The server may answer (413) before reading all of a large body.
    let _ = stream.write_all(body);
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let split = response.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&response[..split]).into_owned();
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect::<Vec<_>>();
    let mut body = response[split + 4..].to_vec();
    if headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"))
    {
        body = dechunk(&body);
    }
    Some(Answer {
        status,
        headers,
        body,
    })
}

fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(end) = body.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size = usize::from_str_radix(std::str::from_utf8(&body[..end]).unwrap().trim(), 16)
            .unwrap_or(0);
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&body[end + 2..end + 2 + size]);
        body = &body[end + 2 + size + 2..];
    }
}

/// A request to a tenant endpoint with `key` (None: no Authorization header); the answer's
/// status and JSON (`null` when the body is not JSON).
pub fn call(
    server: &Server,
    method: &str,
    target: &str,
    key: Option<&str>,
    body: &str,
) -> (u16, serde_json::Value) {
    let authorization = key.map(|k| format!("Bearer {k}"));
    let mut headers = vec![("Content-Type", "application/json")];
    if let Some(value) = &authorization {
        headers.push(("Authorization", value));
    }
    let answer = server.send(method, target, &headers, body.as_bytes());
    let json = serde_json::from_slice(&answer.body).unwrap_or(serde_json::Value::Null);
    (answer.status, json)
}

/// `n` NDJSON events `{"message": "WORD event I", "n": I}`.
pub fn word_events(word: &str, n: usize) -> String {
    (0..n)
        .map(|i| {
            format!(
                "{}\n",
                serde_json::json!({"message": format!("{word} event {i}"), "n": i})
            )
        })
        .collect()
}

/// Events matching `query` in `tenant`, as `key` sees them.
pub fn tenant_count(server: &Server, tenant: &str, key: &str, query: &str) -> u64 {
    let (status, answer) = call(
        server,
        "GET",
        &format!("/api/v1/{tenant}/search?count=true&limit=0&query={query}"),
        Some(key),
        "",
    );
    assert_eq!(status, 200, "{answer}");
    answer["count"].as_u64().unwrap()
}

/// `text` as a query-string value.
pub fn url_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
