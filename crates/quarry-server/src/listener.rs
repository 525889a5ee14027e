//! The accept loop: HTTP/1.1 and HTTP/2 over TCP, or over TLS (rustls), with the timers and
//! the connection cap a server on a network needs, and graceful shutdown.
//!
//! `axum::serve` sets no timer, and hyper's own (`header_read_timeout`) runs only once the
//! HTTP/1 side has the connection: the protocol detection of `auto::Builder` before it waits
//! for ever, so connections that never sent a byte piled up until they took every descriptor
//! and nobody else was answered (issue 26). Here a connection's transport is read through
//! [`Timed`], which knows the connection's [`Phase`] from accept on:
//! - nothing received yet: closed after `first_byte_timeout`;
//! - a request head begun: closed unless the head is whole within `header_timeout` (a client
//!   sending its head a byte at a time, slowloris, is cut off);
//! - requests under way: no timer here; the request timeout layer bounds them
//!   (`ServerConfig::request_timeout`, see `router`), and a stream (the live tail) runs as
//!   long as its client reads;
//! - idle between requests: closed after `keep_alive_timeout`.
//!
//! A TLS handshake has `TLS_HANDSHAKE_TIMEOUT` besides (its bytes count as the head's). At
//! most `max_connections` are open at once, a number kept under the open-file limit; a
//! connection beyond it is answered 503 and closed at once, so a flood of idle connections
//! can never take the descriptors the server needs.

use axum::body::Bytes;
use axum::extract::Request;
use axum::Router;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::time::{Instant, Sleep};
use tower::Service;

/// Time a client has to send a request's head (line and headers) once it has begun, unless
/// the request timeout is shorter.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Time a client has to complete a TLS handshake.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// After a shutdown signal, time given to requests under way before connections are dropped.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);
/// The most connections open at once when the configuration does not say, if the open-file
/// limit allows it (see [`max_connections_for`]).
const DEFAULT_MAX_CONNECTIONS: usize = 10_000;
/// Refused connections being answered at once (each holds a descriptor for at most
/// `REFUSAL_LINGER`); beyond, a refused connection is closed without waiting for its request.
/// Part of the descriptor reserve of [`max_connections_for`].
const REFUSALS_ANSWERING: usize = 64;
/// Time a refused connection is kept to send its 503 and read what the client sent: closing
/// a socket with unread bytes resets it, and a reset can discard the answer before the
/// client reads it.
const REFUSAL_LINGER: Duration = Duration::from_secs(2);
/// At most one warning about refused connections in this time.
const REFUSAL_WARNING_INTERVAL: Duration = Duration::from_secs(10);

/// The timers and the cap every connection is held to.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// From accept to the first byte received.
    pub first_byte_timeout: Duration,
    /// From a request head's first byte to its end.
    pub header_timeout: Duration,
    /// Between requests on a kept-alive connection: from an answer's end to the next
    /// request's first byte (HTTP/1), or to the next request (HTTP/2).
    pub keep_alive_timeout: Duration,
    /// Connections open at once; beyond, 503.
    pub max_connections: usize,
}

impl ConnectionLimits {
    pub const DEFAULT_FIRST_BYTE_TIMEOUT: Duration = Duration::from_secs(5);
    pub const DEFAULT_KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(60);
}

/// The open-file limit (the soft `RLIMIT_NOFILE`, `ulimit -n`), if there is one.
pub fn open_file_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes the struct it is given, nothing else.
        let failed = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0;
        if failed || limit.rlim_cur == libc::RLIM_INFINITY {
            return None;
        }
        #[allow(clippy::unnecessary_cast)] // rlim_t is u64 on Linux, not on every unix
        Some(limit.rlim_cur as u64)
    }
    #[cfg(not(unix))]
    None
}

/// The connection cap for an open-file limit: `DEFAULT_MAX_CONNECTIONS`, or less to keep a
/// reserve of descriptors for everything else the server opens (each tenant's WAL segment
/// and catalog, a block file while it is written or merged (read ones are mmapped and
/// closed), directories to fsync, the answers to refused connections, the runtime's own).
/// The reserve is a quarter of the limit, at least 128 and at most 1024: 768 connections
/// under `ulimit -n 1024`, 10,000 under the common 65,536.
pub fn max_connections_for(open_file_limit: Option<u64>) -> usize {
    let Some(limit) = open_file_limit else {
        return DEFAULT_MAX_CONNECTIONS;
    };
    let reserve = (limit / 4).clamp(128, 1024);
    let available = usize::try_from(limit.saturating_sub(reserve)).unwrap_or(usize::MAX);
    // A few connections even under a tiny limit: the server must stay reachable.
    available.clamp(8, DEFAULT_MAX_CONNECTIONS)
}

/// A TLS acceptor from PEM files: the certificate chain and its private key.
pub fn tls_acceptor(cert: &Path, key: &Path) -> Result<tokio_rustls::TlsAcceptor, String> {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect())
        .map_err(|e| format!("TLS certificate {}: {e}", cert.display()))?;
    if chain.is_empty() {
        return Err(format!(
            "TLS certificate {}: no certificate in it",
            cert.display()
        ));
    }
    let private =
        PrivateKeyDer::from_pem_file(key).map_err(|e| format!("TLS key {}: {e}", key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(chain, private)
        .map_err(|e| format!("TLS certificate and key: {e}"))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

/// Serves `app` on `listener` until `shutdown` completes, then stops accepting and waits for
/// the connections' requests under way (at most `SHUTDOWN_GRACE`).
pub async fn run(
    listener: TcpListener,
    app: Router,
    tls: Option<tokio_rustls::TlsAcceptor>,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let graceful = GracefulShutdown::new();
    // A cap past the semaphore's own bound (far past any open-file limit) is that bound.
    let connections = Arc::new(Semaphore::new(
        limits.max_connections.min(Semaphore::MAX_PERMITS),
    ));
    let refusals = Arc::new(Refusals::new(limits.max_connections, tls.is_some()));
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors and the like: wait rather than spin.
                    tracing::warn!(%error, "accepting a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // Held by the connection's task until it ends.
        let Ok(permit) = connections.clone().try_acquire_owned() else {
            refusals.refuse(stream, peer);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let clock = Arc::new(Clock::new(limits));
        let stream = Timed::new(stream, clock.clone());
        let service = hyper::service::service_fn({
            let app = app.clone();
            move |request: Request<Incoming>| {
                let in_flight = InFlight::begin(clock.clone(), request.version());
                let answer = app.clone().call(request);
                async move {
                    let response = answer.await?;
                    Ok::<_, std::convert::Infallible>(response.map(|body| TrackedBody {
                        body,
                        _in_flight: in_flight,
                    }))
                }
            }
        });
        let watcher = graceful.watcher();
        let tls = tls.clone();
        tokio::spawn(async move {
            let _permit = permit;
            // No timers of hyper's own: `Timed` keeps them all (hyper's header timer would
            // also end idle keep-alive connections, its duration counting from the end of
            // the previous answer).
            let builder = auto::Builder::new(TokioExecutor::new());
            let result = match tls {
                None => {
                    let connection =
                        builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
                    watcher.watch(connection.into_owned()).await
                }
                Some(acceptor) => {
                    let stream =
                        match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(stream))
                            .await
                        {
                            Ok(Ok(stream)) => stream,
                            Ok(Err(error)) => {
                                tracing::debug!(%peer, %error, "TLS handshake failed");
                                return;
                            }
                            Err(_) => {
                                tracing::debug!(%peer, "TLS handshake timed out");
                                return;
                            }
                        };
                    let connection =
                        builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
                    watcher.watch(connection.into_owned()).await
                }
            };
            if let Err(error) = result {
                tracing::debug!(%peer, %error, "connection ended with an error");
            }
        });
    }
    drop(listener);
    if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("requests still under way {SHUTDOWN_GRACE:?} after shutdown began; closing");
    }
    Ok(())
}

/// Where a connection is in its life, which decides its timer.
#[derive(Debug, Clone, Copy)]
enum Phase {
    /// Accepted at `since`; nothing received yet.
    Fresh { since: Instant },
    /// A request head's first byte came at `since`.
    Head { since: Instant },
    /// Requests being answered (several at once only on HTTP/2).
    Busy { requests: usize },
    /// The last answer ended at `since`; no request since.
    Idle { since: Instant },
}

/// One connection's phase, shared by its transport ([`Timed`]) and its requests
/// ([`InFlight`]).
struct Clock {
    limits: ConnectionLimits,
    state: Mutex<ClockState>,
}

struct ClockState {
    phase: Phase,
    /// HTTP/2: bytes come between requests (pings, window updates, settings) and say nothing
    /// of a request beginning, so only requests end an idle phase.
    multiplexed: bool,
    /// The task reading the connection, woken when the phase changes its deadline from
    /// elsewhere (a request's end, on HTTP/2 in another task).
    reader: Option<Waker>,
}

impl Clock {
    fn new(limits: ConnectionLimits) -> Clock {
        Clock {
            limits,
            state: Mutex::new(ClockState {
                phase: Phase::Fresh {
                    since: Instant::now(),
                },
                multiplexed: false,
                reader: None,
            }),
        }
    }

    fn state(&self) -> MutexGuard<'_, ClockState> {
        // Every critical section only assigns plain fields: a panic cannot leave them half
        // changed, so a poisoned lock's state is still whole.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Bytes arrived: on HTTP/1, outside a request they begin the next head.
    fn received(&self) {
        let mut state = self.state();
        if !state.multiplexed && matches!(state.phase, Phase::Fresh { .. } | Phase::Idle { .. }) {
            state.phase = Phase::Head {
                since: Instant::now(),
            };
        }
    }

    fn request_began(&self, version: axum::http::Version) {
        let mut state = self.state();
        state.multiplexed |= version == axum::http::Version::HTTP_2;
        state.phase = match state.phase {
            Phase::Busy { requests } => Phase::Busy {
                requests: requests + 1,
            },
            _ => Phase::Busy { requests: 1 },
        };
    }

    fn request_ended(&self) {
        let mut state = self.state();
        state.phase = match state.phase {
            Phase::Busy { requests } if requests > 1 => Phase::Busy {
                requests: requests - 1,
            },
            _ => Phase::Idle {
                since: Instant::now(),
            },
        };
        if let Some(reader) = state.reader.take() {
            reader.wake();
        }
    }

    /// When the connection is to be closed if nothing more comes, and why; `None` while
    /// requests are under way. Remembers `reader` to wake when that changes.
    fn deadline(&self, reader: &Waker) -> Option<(Instant, &'static str)> {
        let mut state = self.state();
        if !state.reader.as_ref().is_some_and(|r| r.will_wake(reader)) {
            state.reader = Some(reader.clone());
        }
        let limits = &self.limits;
        let (since, timeout, reason) = match state.phase {
            Phase::Fresh { since } => (
                since,
                limits.first_byte_timeout,
                "no byte received within the first-byte timeout",
            ),
            Phase::Head { since } => (
                since,
                limits.header_timeout,
                "request head not whole within the header timeout",
            ),
            Phase::Busy { .. } => return None,
            Phase::Idle { since } => (
                since,
                limits.keep_alive_timeout,
                "idle for the keep-alive timeout",
            ),
        };
        // A timeout too long for the clock to add is none.
        Some((since.checked_add(timeout)?, reason))
    }
}

/// A connection's transport, read under its [`Clock`]: when nothing is there to read and
/// the phase's deadline has passed, reading fails (`TimedOut`) and hyper closes the
/// connection. Under TLS this is the TCP stream, so the handshake's bytes count too.
struct Timed<S> {
    inner: S,
    clock: Arc<Clock>,
    sleep: Pin<Box<Sleep>>,
    /// The deadline `sleep` is set to.
    armed: Option<Instant>,
}

impl<S> Timed<S> {
    fn new(inner: S, clock: Arc<Clock>) -> Timed<S> {
        Timed {
            inner,
            clock,
            sleep: Box::pin(tokio::time::sleep_until(Instant::now())),
            armed: None,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Timed<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let before = buf.filled().len();
        // What has arrived is read first, however late.
        if let Poll::Ready(result) = Pin::new(&mut this.inner).poll_read(cx, buf) {
            if result.is_ok() && buf.filled().len() > before {
                this.clock.received();
            }
            return Poll::Ready(result);
        }
        let Some((deadline, reason)) = this.clock.deadline(cx.waker()) else {
            return Poll::Pending;
        };
        if this.armed != Some(deadline) {
            this.sleep.as_mut().reset(deadline);
            this.armed = Some(deadline);
        }
        match this.sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, reason))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Timed<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// A request under way on its connection's [`Clock`], from the call of the service to the
/// end of its answer's body (dropped by hyper once sent, or with the connection).
struct InFlight(Arc<Clock>);

impl InFlight {
    fn begin(clock: Arc<Clock>, version: axum::http::Version) -> InFlight {
        clock.request_began(version);
        InFlight(clock)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.request_ended();
    }
}

/// An answer's body that holds its request's [`InFlight`] until it is dropped.
struct TrackedBody {
    body: axum::body::Body,
    _in_flight: InFlight,
}

impl hyper::body::Body for TrackedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// Connections beyond `max_connections`: answered 503 and closed, with a warning at most
/// every `REFUSAL_WARNING_INTERVAL`.
struct Refusals {
    max_connections: usize,
    /// A plain-text answer would be garbage to a TLS client: it is closed without one.
    tls: bool,
    answering: Arc<Semaphore>,
    /// Refused since the last warning.
    refused: AtomicU64,
    last_warning: Mutex<Option<Instant>>,
    answer: Arc<[u8]>,
}

impl Refusals {
    fn new(max_connections: usize, tls: bool) -> Refusals {
        let body = serde_json::json!({
            "error": format!(
                "too many open connections: this server holds at most {max_connections} \
                 (--max-connections); try again later"
            )
        })
        .to_string();
        let answer = format!(
            "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
             retry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        Refusals {
            max_connections,
            tls,
            answering: Arc::new(Semaphore::new(REFUSALS_ANSWERING)),
            refused: AtomicU64::new(0),
            last_warning: Mutex::new(None),
            answer: answer.into_bytes().into(),
        }
    }

    fn refuse(&self, mut stream: TcpStream, peer: SocketAddr) {
        self.warn();
        tracing::debug!(%peer, "connection refused: too many open");
        if self.tls {
            return;
        }
        let Ok(permit) = self.answering.clone().try_acquire_owned() else {
            // Many refusals at once: what fits in the socket's buffer, then close.
            let _ = stream.try_write(&self.answer);
            return;
        };
        let answer = self.answer.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let answered = async {
                stream.write_all(&answer).await?;
                stream.shutdown().await?;
                let mut sink = [0u8; 4096];
                while stream.read(&mut sink).await? > 0 {}
                Ok::<(), io::Error>(())
            };
            let _ = tokio::time::timeout(REFUSAL_LINGER, answered).await;
        });
    }

    fn warn(&self) {
        let refused = self.refused.fetch_add(1, Ordering::Relaxed) + 1;
        // Only assigns an Option: a poisoned lock's value is whole.
        let mut last = self
            .last_warning
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        if last.is_some_and(|last| now < last + REFUSAL_WARNING_INTERVAL) {
            return;
        }
        *last = Some(now);
        self.refused.fetch_sub(refused, Ordering::Relaxed);
        tracing::warn!(
            max_connections = self.max_connections,
            refused,
            "refusing connections: the open-connection limit (--max-connections) is reached"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_connection_cap_leaves_a_reserve_under_the_open_file_limit() {
        let cases: &[(Option<u64>, usize)] = &[
            (None, 10_000),
            (Some(1_048_576), 10_000),
            (Some(65_536), 10_000),
            (Some(20_000), 10_000),
            (Some(4_096), 3_072),
            (Some(1_024), 768),
            (Some(256), 128),
            (Some(100), 8),
            (Some(0), 8),
        ];
        for &(limit, expected) in cases {
            assert_eq!(max_connections_for(limit), expected, "limit {limit:?}");
        }
    }
}
