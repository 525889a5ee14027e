//! A throwaway SeaweedFS (Apache-2.0) with its S3 gateway, on free loopback ports and a
//! temporary directory, for the tests that need a real object store. The binary is the one
//! `.ci/seaweedfs.sh` builds into `~/.cache/quarry` (or `QUARRY_WEED`). Without it the tests
//! that need it say so and pass, unless `QUARRY_REQUIRE_SEAWEEDFS=1` (CI), where its absence
//! fails them.
//!
//! Shared by the store's and the server's tests (`#[path]`-included).

#![allow(dead_code)]

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The SeaweedFS version `.ci/seaweedfs.sh` builds.
pub const WEED_VERSION: &str = "v0.0.0-20261109003541-7506e5f91cd6";
pub const ACCESS_KEY: &str = "quarry-test";
pub const SECRET_KEY: &str = "quarry-test-secret";
pub const BUCKET: &str = "quarry";

pub struct SeaweedFs {
    child: Child,
    /// `http://127.0.0.1:PORT`, the S3 endpoint.
    pub endpoint: String,
    _dir: tempfile::TempDir,
}

/// The SeaweedFS binary, if this machine has one.
pub fn weed_binary() -> Option<PathBuf> {
    if let Ok(path) = std::env::var("QUARRY_WEED") {
        return Some(PathBuf::from(path));
    }
    let home = std::env::var("HOME").ok()?;
    let path = PathBuf::from(home).join(format!(".cache/quarry/weed-{WEED_VERSION}"));
    path.exists().then_some(path)
}

/// A free loopback port below 55535 (SeaweedFS puts nothing at port + 10000 when each gRPC
/// port is given, but stays clear of the top of the range anyway), never one this process
/// handed out before (the instances of tests running side by side must not share one).
fn free_port() -> u16 {
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut given = GIVEN
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if port < 55535 && !given.contains(&port) {
            given.push(port);
            return port;
        }
    }
}

impl SeaweedFs {
    /// Starts one, or returns None (after saying why) when this machine has no binary and
    /// the run does not require it.
    pub fn start() -> Option<SeaweedFs> {
        let Some(weed) = weed_binary() else {
            if std::env::var("QUARRY_REQUIRE_SEAWEEDFS").is_ok_and(|v| v == "1") {
                panic!("QUARRY_REQUIRE_SEAWEEDFS=1 but no SeaweedFS binary: run .ci/seaweedfs.sh");
            }
            eprintln!("skipped: no SeaweedFS binary (build one with .ci/seaweedfs.sh)");
            return None;
        };
        // A port another process took between our check and SeaweedFS's bind makes it exit
        // at once: started again on other ports.
        for attempt in 1.. {
            let mut server = SeaweedFs::spawn(&weed);
            match server.wait_ready() {
                Ok(()) => {
                    server.warm_up();
                    return Some(server);
                }
                Err(log) if attempt < 3 => {
                    eprintln!(
                        "SeaweedFS exited at start (attempt {attempt}), starting it again:\n{log}"
                    );
                }
                Err(log) => panic!("SeaweedFS exited at start, three times; its log:\n{log}"),
            }
        }
        unreachable!()
    }

    fn spawn(weed: &std::path::Path) -> SeaweedFs {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("s3.json");
        std::fs::write(
            &config,
            format!(
                r#"{{"identities":[{{"name":"quarry","credentials":[{{"accessKey":"{ACCESS_KEY}","secretKey":"{SECRET_KEY}"}}],"actions":["Admin","Read","Write","List","Tagging"]}}]}}"#
            ),
        )
        .unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir_all(&data).unwrap();
        let s3 = free_port();
        let port = |name: &str, port: u16| format!("-{name}={port}");
        let log = std::fs::File::create(dir.path().join("weed.log")).unwrap();
        let child = Command::new(weed)
            .args([
                "server",
                &format!("-dir={}", data.display()),
                "-ip=127.0.0.1",
                "-ip.bind=127.0.0.1",
                &port("master.port", free_port()),
                &port("master.port.grpc", free_port()),
                &port("volume.port", free_port()),
                &port("volume.port.grpc", free_port()),
                &port("filer.port", free_port()),
                &port("filer.port.grpc", free_port()),
                "-s3",
                &port("s3.port", s3),
                &port("s3.port.grpc", free_port()),
                "-s3.port.iceberg=0",
                "-s3.port.lance=0",
                &format!("-s3.config={}", config.display()),
                "-volume.max=0",
                "-master.volumeSizeLimitMB=64",
            ])
            .stdout(Stdio::from(log.try_clone().unwrap()))
            .stderr(Stdio::from(log))
            .spawn()
            .unwrap_or_else(|e| panic!("{}: {e}", weed.display()));
        SeaweedFs {
            child,
            endpoint: format!("http://127.0.0.1:{s3}"),
            _dir: dir,
        }
    }

    /// Waits until the S3 gateway answers (an anonymous request gets 403 once it is up);
    /// `Err` with the end of its log when the server exited first.
    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(120);
        let address = self.endpoint.trim_start_matches("http://").to_owned();
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return Err(self.log_tail());
            }
            if let Ok(mut stream) = std::net::TcpStream::connect(&address) {
                use std::io::{Read, Write};
                let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
                let request =
                    format!("GET / HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
                let mut answer = String::new();
                if stream.write_all(request.as_bytes()).is_ok()
                    && stream.read_to_string(&mut answer).is_ok()
                    && answer.starts_with("HTTP/1.1 403")
                {
                    return Ok(());
                }
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!(
            "SeaweedFS did not come up in 120 s; its log, last lines first:\n{}",
            self.log_tail()
        );
    }

    /// The last lines of its log, last first.
    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self._dir.path().join("weed.log")).unwrap_or_default();
        log.lines().rev().take(30).collect::<Vec<_>>().join("\n")
    }

    /// Creates the bucket and its first volumes with one upload: SeaweedFS grows volumes on
    /// the first write, which takes seconds, and a server killed within a second of starting
    /// (the crash test) would otherwise never see an upload finish.
    fn warm_up(&self) {
        use quarry_store::BlockStore;
        let started = Instant::now();
        let scratch = tempfile::tempdir().unwrap();
        let storage = quarry_store::ObjectStorage::s3_with(
            &self.url("warm-up"),
            scratch.path(),
            &self.settings(),
        )
        .unwrap();
        storage
            .tenant_blocks("warm-up")
            .put_bytes(0, b"warm-up")
            .unwrap_or_else(|e| panic!("the first upload to SeaweedFS failed: {e}"));
        eprintln!(
            "SeaweedFS at {} ready, its first upload took {:.1} s",
            self.endpoint,
            started.elapsed().as_secs_f64()
        );
    }

    /// The environment a client of this store needs (`AWS_*`).
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT_URL", self.endpoint.clone()),
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY.to_owned()),
            ("AWS_SECRET_ACCESS_KEY", SECRET_KEY.to_owned()),
            ("AWS_REGION", "us-east-1".to_owned()),
        ]
    }

    /// The same as `object_store` settings, for a store built in-process
    /// (`ObjectStorage::s3_with`): the tests of one binary run at once, each with its own
    /// SeaweedFS, so none sets the process's environment.
    pub fn settings(&self) -> Vec<(&'static str, String)> {
        self.env()
            .into_iter()
            .map(|(name, value)| match name {
                "AWS_ENDPOINT_URL" => ("aws_endpoint_url", value),
                "AWS_ACCESS_KEY_ID" => ("aws_access_key_id", value),
                "AWS_SECRET_ACCESS_KEY" => ("aws_secret_access_key", value),
                _ => ("aws_region", value),
            })
            .collect()
    }

    /// `s3://BUCKET/prefix`.
    pub fn url(&self, prefix: &str) -> String {
        format!("s3://{BUCKET}/{prefix}")
    }
}

impl Drop for SeaweedFs {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
