//! A throwaway PostgreSQL cluster for the tests that need the metastore's database: `initdb`
//! into a temporary directory, `pg_ctl start` on a free loopback port, stopped and deleted on
//! drop. Never a system service. `fsync` is off (the tests stop PostgreSQL, never the
//! machine, so the page cache keeps every write), but commits are synchronous: a stop with
//! `-m immediate` must not lose a commit the metastore was told of.
//! The binaries come from `QUARRY_PG_BIN`, else `PATH`, else Debian's
//! `/usr/lib/postgresql/*/bin`. PostgreSQL refuses to run as root, so as root the cluster runs
//! as `nobody` (through `runuser`). Without PostgreSQL the tests that need it say so and pass,
//! unless `QUARRY_REQUIRE_POSTGRES=1` (CI), where its absence fails them.
//!
//! Shared by the store's and the server's tests (`#[path]`-included).

#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub struct PostgreSql {
    bin: PathBuf,
    data: PathBuf,
    /// `postgres://quarry@127.0.0.1:PORT/postgres`
    pub url: String,
    port: u16,
    /// `pg_ctl start`'s server options.
    options: String,
    _dir: tempfile::TempDir,
}

/// The directory holding `initdb`, `pg_ctl` and `postgres`, if this machine has one.
pub fn postgres_bin() -> Option<PathBuf> {
    if let Ok(dir) = std::env::var("QUARRY_PG_BIN") {
        return Some(PathBuf::from(dir));
    }
    let has_tools = |dir: &Path| dir.join("initdb").exists() && dir.join("pg_ctl").exists();
    // Debian's own directory first: its `PATH` wrappers pick a version by cluster config.
    let mut debian: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path().join("bin"))
        .filter(|dir| has_tools(dir))
        .collect();
    debian.sort();
    if let Some(dir) = debian.pop() {
        return Some(dir);
    }
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path).find(|dir| has_tools(dir) && dir.join("postgres").exists())
    })
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc_geteuid() == 0 }
}

extern "C" {
    #[link_name = "geteuid"]
    fn libc_geteuid() -> u32;
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl PostgreSql {
    /// Starts one, or returns None (after saying why) when this machine has no PostgreSQL and
    /// the run does not require it.
    pub fn start() -> Option<PostgreSql> {
        let Some(bin) = postgres_bin() else {
            if std::env::var("QUARRY_REQUIRE_POSTGRES").is_ok_and(|v| v == "1") {
                panic!("QUARRY_REQUIRE_POSTGRES=1 but no PostgreSQL (initdb, pg_ctl) was found");
            }
            eprintln!("skipped: no PostgreSQL binaries (install postgresql, or set QUARRY_PG_BIN)");
            return None;
        };
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        if is_root() {
            let status = Command::new("chown")
                .args(["nobody"])
                .arg(dir.path())
                .status()
                .unwrap();
            assert!(status.success(), "chown nobody {}", dir.path().display());
        }
        let port = free_port();
        let options = format!(
            "-p {port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c fsync=off \
             -c max_connections=50"
        );
        let server = PostgreSql {
            bin,
            data,
            url: format!("postgres://quarry@127.0.0.1:{port}/postgres"),
            port,
            options,
            _dir: dir,
        };
        server.run(
            "initdb",
            &[
                "-D".as_ref(),
                server.data.as_os_str(),
                "-U".as_ref(),
                "quarry".as_ref(),
                "--auth=trust".as_ref(),
                "-E".as_ref(),
                "UTF8".as_ref(),
                "--no-locale".as_ref(),
                "--no-sync".as_ref(),
            ],
        );
        server.start_again();
        Some(server)
    }

    /// Starts the cluster (again, after `stop`), on the same port and data.
    pub fn start_again(&self) {
        let log = self.data.with_file_name("postgres.log");
        self.run(
            "pg_ctl",
            &[
                "-D".as_ref(),
                self.data.as_os_str(),
                "-o".as_ref(),
                self.options.as_ref(),
                "-l".as_ref(),
                log.as_os_str(),
                "-w".as_ref(),
                "-t".as_ref(),
                "60".as_ref(),
                "start".as_ref(),
            ],
        );
    }

    /// Stops the cluster at once (`-m immediate`: as if its machine went away), keeping its
    /// data for `start_again`.
    pub fn stop(&self) {
        self.run(
            "pg_ctl",
            &[
                "-D".as_ref(),
                self.data.as_os_str(),
                "-m".as_ref(),
                "immediate".as_ref(),
                "-w".as_ref(),
                "stop".as_ref(),
            ],
        );
    }

    /// One of the cluster's programs, to run as `nobody` when the tests run as root.
    fn command(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        if is_root() {
            let mut command = Command::new("runuser");
            command.args(["-u", "nobody", "--"]).arg(&path);
            command
        } else {
            Command::new(&path)
        }
    }

    /// Runs one of the cluster's programs; it must succeed.
    fn run(&self, program: &str, args: &[&std::ffi::OsStr]) {
        let path = self.bin.join(program);
        let output = self
            .command(program)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            output.status.success(),
            "{program} failed: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// A new empty database on this cluster, and its URL (one per test, so tests sharing a
    /// cluster never see each other's rows).
    pub fn database(&self, name: &str) -> String {
        let output = Command::new(self.bin.join("psql"))
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                "quarry",
            ])
            .args(["-d", "postgres", "-v", "ON_ERROR_STOP=1", "-c"])
            .arg(format!("CREATE DATABASE \"{name}\""))
            .output();
        let created = match output {
            Ok(output) if output.status.success() => true,
            Ok(output) => panic!(
                "CREATE DATABASE {name}: {}",
                String::from_utf8_lossy(&output.stderr)
            ),
            Err(_) => false,
        };
        assert!(created, "no psql beside initdb in {}", self.bin.display());
        format!("postgres://quarry@127.0.0.1:{}/{name}", self.port)
    }
}

impl Drop for PostgreSql {
    fn drop(&mut self) {
        let _ = self
            .command("pg_ctl")
            .arg("-D")
            .arg(&self.data)
            .args(["-m", "immediate", "-w", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}
