//! A `victoria-logs` server process on a data directory: started on a free port of 127.0.0.1
//! with the flags of bench/run-sizes.sh (`-storageDataPath=DIR -httpListenAddr=127.0.0.1:PORT
//! -retentionPeriod=100y`; the retention keeps the generated events, dated 2026-11-01, from
//! being dropped as too old), its output in a log file beside the directory (`DIR.log`), stopped
//! with SIGINT (a graceful shutdown, which flushes what it holds).

use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use logs_driver::http::Connection;

/// How long a starting server has to answer `/health`, and a stopping one to exit.
const START_TIMEOUT: Duration = Duration::from_secs(60);
const STOP_TIMEOUT: Duration = Duration::from_secs(60);

pub struct Server {
    /// `None` when the server was given (`serve --addr`), not started here.
    child: Option<Child>,
    pub addr: SocketAddr,
    pub log: Option<PathBuf>,
}

/// The log file of the server on `data`: `DATA.log`, beside the directory, so that it does not
/// count in the index bytes.
pub fn log_path(data: &Path) -> PathBuf {
    let mut name = OsString::from(data.as_os_str());
    name.push(".log");
    PathBuf::from(name)
}

/// A TCP port of 127.0.0.1 that nothing listens on (as bench/lib.sh's `free_port`: another
/// process may take it before the server binds it, which then fails to start).
fn free_port() -> anyhow::Result<u16> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).context("finding a free port")?;
    Ok(listener.local_addr()?.port())
}

impl Server {
    /// Starts `bin` on `data` (created if missing), its output appended to `DATA.log` (truncated
    /// first when `fresh_log`), and waits until it answers `/health`.
    pub fn start(bin: &Path, data: &Path, fresh_log: bool) -> anyhow::Result<Server> {
        let port = free_port()?;
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let log = log_path(data);
        let log_file = if fresh_log {
            File::create(&log)
        } else {
            OpenOptions::new().create(true).append(true).open(&log)
        }
        .with_context(|| format!("opening {}", log.display()))?;
        let mut command = Command::new(bin);
        command
            .arg(format!("-storageDataPath={}", data.display()))
            .arg(format!("-httpListenAddr={addr}"))
            .arg("-retentionPeriod=100y")
            .stdin(Stdio::null())
            .stdout(log_file.try_clone()?)
            .stderr(log_file);
        // SAFETY: prctl is async-signal-safe and touches no memory of the parent. The server
        // gets SIGTERM (a graceful stop) if this process dies first, so none is left behind.
        unsafe {
            command.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command
            .spawn()
            .with_context(|| format!("starting {}", bin.display()))?;
        let mut server = Server {
            child: Some(child),
            addr,
            log: Some(log),
        };
        server.wait_healthy()?;
        Ok(server)
    }

    /// A server started by someone else, at `addr`.
    pub fn given(addr: SocketAddr) -> anyhow::Result<Server> {
        let mut server = Server {
            child: None,
            addr,
            log: None,
        };
        server.wait_healthy()?;
        Ok(server)
    }

    fn wait_healthy(&mut self) -> anyhow::Result<()> {
        let started = Instant::now();
        let mut connection = Connection::new(self.addr);
        loop {
            if let Ok(response) = connection.get("/health") {
                if response.status == 200 {
                    return Ok(());
                }
            }
            if let Some(child) = &mut self.child {
                if let Some(status) = child.try_wait()? {
                    bail!(
                        "victoria-logs exited with {status} before answering /health{}",
                        self.log_hint()
                    );
                }
            }
            if started.elapsed() > START_TIMEOUT {
                bail!(
                    "victoria-logs did not answer http://{}/health within {START_TIMEOUT:?}{}",
                    self.addr,
                    self.log_hint()
                );
            }
            thread::sleep(Duration::from_millis(50));
        }
    }

    fn log_hint(&self) -> String {
        match &self.log {
            Some(log) => format!(" (log: {})", log.display()),
            None => String::new(),
        }
    }

    /// The text of the server's log so far (empty for a given server).
    pub fn log_text(&self) -> anyhow::Result<String> {
        match &self.log {
            Some(log) => {
                let bytes = fs::read(log).with_context(|| format!("reading {}", log.display()))?;
                Ok(String::from_utf8_lossy(&bytes).into_owned())
            }
            None => Ok(String::new()),
        }
    }

    /// Stops a started server with SIGINT and waits for it to exit; fails when it had to be
    /// killed or exited with an error. A given server is left running.
    pub fn stop(mut self) -> anyhow::Result<()> {
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        let pid = libc::pid_t::try_from(child.id()).context("pid out of range")?;
        // SAFETY: kill(2) on the pid of our own child, which has not been reaped yet.
        unsafe {
            libc::kill(pid, libc::SIGINT);
        }
        let started = Instant::now();
        loop {
            if let Some(status) = child.try_wait()? {
                if !status.success() {
                    bail!(
                        "victoria-logs exited with {status} on SIGINT{}",
                        self.log_hint()
                    );
                }
                return Ok(());
            }
            if started.elapsed() > STOP_TIMEOUT {
                let _ = child.kill();
                let _ = child.wait();
                bail!(
                    "victoria-logs did not exit within {STOP_TIMEOUT:?} of SIGINT and was killed{}",
                    self.log_hint()
                );
            }
            thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Server {
    /// A server not stopped (an error on the way) is killed, not left running.
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
