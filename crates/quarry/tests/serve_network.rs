//! The server on a network: HTTPS with a certificate (checked by curl, a real HTTPS client),
//! and clients too slow to hold a connection: a request head sent a byte at a time
//! (slowloris) and a body trickled, both cut off by the timeouts instead of waiting for ever.

mod common;

use common::Server;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

#[test]
fn https_with_a_certificate_answers_a_real_client() {
    let dir = tempfile::tempdir().unwrap();
    let certified =
        rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
    let cert = dir.path().join("cert.pem");
    let key = dir.path().join("key.pem");
    std::fs::write(&cert, certified.cert.pem()).unwrap();
    std::fs::write(&key, certified.signing_key.serialize_pem()).unwrap();
    let data = dir.path().join("d");
    let server = Server::spawn(
        &[
            "--data",
            data.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ],
        &[],
        Path::new("."),
    );
    let port = server.addr.rsplit(':').next().unwrap();
    let curl = |args: &[&str]| {
        Command::new("curl")
            .args(["--silent", "--show-error", "--max-time", "20"])
            .args(args)
            .output()
            .expect("curl (CI installs it)")
    };
    // Trusting the certificate: ingest, then search, over HTTPS.
    let url = format!("https://localhost:{port}");
    let ingested = curl(&[
        "--cacert",
        cert.to_str().unwrap(),
        "-X",
        "POST",
        "--data-binary",
        "{\"message\": \"over tls\"}",
        &format!("{url}/api/v1/default/ingest"),
    ]);
    assert!(ingested.status.success(), "{ingested:?}");
    let found = curl(&[
        "--cacert",
        cert.to_str().unwrap(),
        &format!("{url}/api/v1/default/search?query=tls&count=true"),
    ]);
    let answer: serde_json::Value = serde_json::from_slice(&found.stdout).unwrap();
    assert_eq!(answer["count"], 1, "{answer}");
    // Not trusting it: the client refuses the connection.
    let untrusted = curl(&[&format!("{url}/health/live")]);
    assert!(!untrusted.status.success());
    // Plain HTTP to the TLS port gets no HTTP answer.
    let plain = curl(&[&format!("http://127.0.0.1:{port}/health/live")]);
    assert!(!plain.status.success() || plain.stdout.is_empty());
}

/// Reads what the server sends until it closes the connection (or 30 s pass: then the test
/// fails, the server having held the connection).
fn read_until_closed(stream: &mut TcpStream) -> String {
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut answer = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(&buffer[..n]),
            Err(error) if error.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(error) => panic!("the server held the connection: {error}"),
        }
    }
    String::from_utf8_lossy(&answer).into_owned()
}

#[test]
fn slow_clients_are_cut_off() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let server = Server::start_with(&data, &["--request-timeout", "1"]);

    // A head that never ends: the connection is closed.
    let mut slowloris = TcpStream::connect(&server.addr).unwrap();
    slowloris
        .write_all(b"GET /health/live HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
        .unwrap();
    let answer = read_until_closed(&mut slowloris);
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 408"),
        "{answer}"
    );

    // A body trickled a byte at a time: 408 once the request timeout passes.
    let mut trickle = TcpStream::connect(&server.addr).unwrap();
    trickle
        .write_all(
            b"POST /api/v1/default/ingest HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1000\r\n\r\n{",
        )
        .unwrap();
    let writer = {
        let mut stream = trickle.try_clone().unwrap();
        std::thread::spawn(move || {
            for _ in 0..100 {
                std::thread::sleep(Duration::from_millis(100));
                if stream.write_all(b" ").is_err() {
                    break;
                }
            }
        })
    };
    let answer = read_until_closed(&mut trickle);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    writer.join().unwrap();

    // The server still answers everyone else, and nothing was ingested.
    let (status, answer) = server.get("/api/v1/default/search?query=*&count=true");
    assert_eq!(status, 200);
    assert_eq!(answer["count"], 0);
}
