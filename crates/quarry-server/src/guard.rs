//! Refusals before routing that close the doors a web browser opens into a server on a
//! developer's machine (issue 26, item 5).
//!
//! - DNS rebinding: a page whose name is made to resolve to 127.0.0.1 reaches the keyless
//!   server as its own origin, so the browser lets it read every answer. The browser still
//!   sends the page's name as `Host`: without an admin token, only loopback names and
//!   addresses (`localhost`, 127.0.0.0/8, `[::1]`, any port) and the names given with
//!   `--allowed-host` are served, others get 403. With keys on, the key is the guard (a page
//!   cannot know it) and any `Host` is served: such a server sits behind any name.
//! - Cross-site writes: any page may POST to `http://127.0.0.1:7380` without asking the
//!   server first (a "simple" request, `text/plain`, no CORS preflight); the browser only
//!   hides the answer. A write (any method but GET, HEAD and OPTIONS) whose `Origin` is not
//!   the server's own (its `Host`), or whose `Sec-Fetch-Site` is `cross-site` or
//!   `same-site`, is refused with 403. Ingest from a browser (a request with `Origin` or any
//!   `Sec-Fetch-*` header) must besides be `application/json` or `application/x-ndjson`:
//!   types a page of another origin can only send after a preflight, which this server never
//!   grants, so even a browser that sends no `Origin` cannot be used to ingest.
//!
//! Clients that are not browsers (curl, log shippers, the Elasticsearch clients) send neither
//! `Origin` nor `Sec-Fetch-*` and are served as before, with any content type. The web UI is
//! served by this server: its requests are same-origin.

use crate::ApiError;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::net::IpAddr;
use std::sync::Arc;

/// What the guard lets through.
#[derive(Debug)]
pub(crate) struct Guard {
    /// Keyless: the names served besides loopback ones (lowercase, without a port).
    /// `None`: keys are on and any `Host` is served.
    allowed_hosts: Option<Vec<String>>,
}

impl Guard {
    /// `keyless`: no admin token. `allowed_hosts`: `--allowed-host` names (a port, if given,
    /// is ignored: every port of the name is allowed).
    pub(crate) fn new(keyless: bool, allowed_hosts: &[String]) -> Guard {
        let allowed_hosts = keyless.then(|| {
            allowed_hosts
                .iter()
                .map(|host| host_name(host.trim()).to_ascii_lowercase())
                .collect()
        });
        Guard { allowed_hosts }
    }

    fn check(&self, method: &Method, uri: &Uri, headers: &HeaderMap) -> Result<(), ApiError> {
        // HTTP/1.1 sends `Host`; HTTP/2 the `:authority` hyper puts in the URI. HTTP/1.0 may
        // send neither: browsers always send one, so none is no rebinding.
        let host = match headers.get(header::HOST) {
            Some(value) => Some(
                value
                    .to_str()
                    .map_err(|_| forbidden("refused: the Host header is not text".to_owned()))?,
            ),
            None => uri.authority().map(|authority| authority.as_str()),
        };
        if let (Some(allowed), Some(host)) = (&self.allowed_hosts, host) {
            let name = host_name(host);
            if !is_loopback(name) && !allowed.iter().any(|a| a.eq_ignore_ascii_case(name)) {
                return Err(forbidden(format!(
                    "refused: Host {host:?} is not a loopback name or address, and a server \
                     without an admin token answers only those (a web page could otherwise \
                     read it through DNS rebinding); to serve it under this name, start \
                     quarry serve with --allowed-host {name}"
                )));
            }
        }
        if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) {
            return Ok(());
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = origin.to_str().unwrap_or("(not text)");
            if !host.is_some_and(|host| same_origin(origin, host)) {
                return Err(forbidden(format!(
                    "refused: a {method} from a web page of another origin (Origin {origin:?}, \
                     this server is {:?}); browsers may write only from the server's own pages",
                    host.unwrap_or("")
                )));
            }
        }
        let fetch_site = headers
            .get("sec-fetch-site")
            .and_then(|v| v.to_str().ok())
            .map(str::trim);
        if let Some(site @ ("cross-site" | "same-site")) = fetch_site {
            return Err(forbidden(format!(
                "refused: a {method} from a web page of another origin (Sec-Fetch-Site: \
                 {site}); browsers may write only from the server's own pages"
            )));
        }
        if is_ingest(uri.path()) && is_from_browser(headers) {
            let content_type = headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            let media_type = content_type.split(';').next().unwrap_or("").trim();
            if !["application/json", "application/x-ndjson"]
                .iter()
                .any(|t| media_type.eq_ignore_ascii_case(t))
            {
                return Err(forbidden(format!(
                    "refused: ingest from a browser needs Content-Type application/json or \
                     application/x-ndjson, not {content_type:?} (a page of any origin can send \
                     the other types without asking)"
                )));
            }
        }
        Ok(())
    }
}

/// The middleware: every request passes [`Guard::check`] or is answered 403.
pub(crate) async fn check(
    State(guard): State<Arc<Guard>>,
    request: Request,
    next: Next,
) -> Response {
    match guard.check(request.method(), request.uri(), request.headers()) {
        Ok(()) => next.run(request).await,
        Err(error) => error.into_response(),
    }
}

fn forbidden(message: String) -> ApiError {
    ApiError::new(StatusCode::FORBIDDEN, message)
}

/// The name or address of a `Host` value: without its port, an IPv6 address without its
/// brackets, a fully qualified name without its final dot.
fn host_name(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split_once(']').map_or(rest, |(address, _)| address);
    }
    let name = match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    };
    name.strip_suffix('.').unwrap_or(name)
}

/// `localhost`, 127.0.0.0/8, ::1 (also as ::ffff:127.x.y.z). Not `*.localhost`: whether
/// those stay on this machine is up to each resolver.
fn is_loopback(name: &str) -> bool {
    if name.eq_ignore_ascii_case("localhost") {
        return true;
    }
    match name.parse::<IpAddr>() {
        Ok(IpAddr::V4(address)) => address.is_loopback(),
        Ok(IpAddr::V6(address)) => {
            address.is_loopback() || address.to_ipv4_mapped().is_some_and(|a| a.is_loopback())
        }
        Err(_) => false,
    }
}

/// Whether `origin` (`scheme://host[:port]`, or `null`) names the server reached as `host`.
/// The scheme only supplies a missing port (browsers leave out 80 and 443): behind a proxy
/// that ends TLS, the server cannot tell its clients' scheme.
fn same_origin(origin: &str, host: &str) -> bool {
    let Some((scheme, authority)) = origin.split_once("://") else {
        return false;
    };
    let default_port = match scheme.to_ascii_lowercase().as_str() {
        "http" => "80",
        "https" => "443",
        _ => return false,
    };
    let port = |authority: &str| {
        let name = host_name(authority);
        let after = authority
            .strip_prefix('[')
            .and_then(|rest| rest.split_once(']'))
            .map_or(authority, |(_, after)| after);
        match after.rsplit_once(':') {
            Some((_, port)) if !port.is_empty() => (name.to_ascii_lowercase(), port.to_owned()),
            _ => (name.to_ascii_lowercase(), default_port.to_owned()),
        }
    };
    !authority.contains('/') && port(authority) == port(host)
}

/// The ingest routes (see `router`): `/api/v1/{tenant}/ingest` and every `_bulk`.
fn is_ingest(path: &str) -> bool {
    let last = path.trim_end_matches('/').rsplit('/').next().unwrap_or("");
    last == "_bulk" || (last == "ingest" && path.starts_with("/api/v1/"))
}

/// Browsers send `Origin` with every write and `Sec-Fetch-*` with every request (all current
/// ones); other clients send neither.
fn is_from_browser(headers: &HeaderMap) -> bool {
    headers.contains_key(header::ORIGIN)
        || headers
            .keys()
            .any(|name| name.as_str().starts_with("sec-fetch-"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(guard: &Guard, method: &str, path: &str, headers: &[(&str, &str)]) -> u16 {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.append(
                header::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                value.parse().unwrap(),
            );
        }
        let method = Method::from_bytes(method.as_bytes()).unwrap();
        let uri: Uri = path.parse().unwrap();
        match guard.check(&method, &uri, &map) {
            Ok(()) => 200,
            Err(error) => error.status.as_u16(),
        }
    }

    #[test]
    fn hosts_served_without_keys() {
        let guard = Guard::new(true, &["Logs.Example.test:443".to_owned()]);
        let cases = [
            ("localhost", 200),
            ("localhost:7380", 200),
            ("LOCALHOST.:7380", 200),
            ("127.0.0.1:7380", 200),
            ("127.9.8.7", 200),
            ("[::1]:7380", 200),
            ("[::ffff:127.0.0.1]:7380", 200),
            ("logs.example.test", 200),
            ("logs.example.test:8443", 200),
            ("evil.example", 403),
            ("evil.example:7380", 403),
            ("localhost.evil.example", 403),
            ("app.localhost", 403),
            ("0.0.0.0:7380", 403),
            ("10.0.0.1", 403),
            ("[::2]:7380", 403),
        ];
        for (host, status) in cases {
            assert_eq!(
                answer(&guard, "GET", "/", &[("host", host)]),
                status,
                "{host}"
            );
        }
        // No Host (HTTP/1.0): no browser sends that.
        assert_eq!(answer(&guard, "GET", "/", &[]), 200);
        // With keys on, any name.
        let keyed = Guard::new(false, &[]);
        assert_eq!(answer(&keyed, "GET", "/", &[("host", "evil.example")]), 200);
    }

    #[test]
    fn browser_writes_from_other_origins_are_refused() {
        let guard = Guard::new(true, &[]);
        let ingest = "/api/v1/default/ingest";
        let host = ("host", "127.0.0.1:7380");
        let json = ("content-type", "application/json");
        let text = ("content-type", "text/plain");
        // (method, path, headers, status)
        type Case<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)], u16);
        let cases: &[Case] = &[
            // curl, shippers: no Origin, any type.
            ("POST", ingest, &[host, text], 200),
            ("POST", ingest, &[host], 200),
            ("POST", "/_bulk", &[host, text], 200),
            // Another origin, or a site of another origin.
            (
                "POST",
                ingest,
                &[host, json, ("origin", "https://evil.example")],
                403,
            ),
            ("POST", ingest, &[host, json, ("origin", "null")], 403),
            (
                "POST",
                ingest,
                &[host, json, ("origin", "http://127.0.0.1:8080")],
                403,
            ),
            (
                "POST",
                ingest,
                &[host, json, ("origin", "http://localhost:7380")],
                403,
            ),
            (
                "PUT",
                "/api/v1/default/mapping",
                &[host, json, ("origin", "https://evil.example")],
                403,
            ),
            (
                "DELETE",
                "/api/v1/tenants/x",
                &[host, ("origin", "https://evil.example")],
                403,
            ),
            (
                "POST",
                ingest,
                &[host, json, ("sec-fetch-site", "cross-site")],
                403,
            ),
            (
                "POST",
                ingest,
                &[host, json, ("sec-fetch-site", "same-site")],
                403,
            ),
            // The server's own pages: JSON or NDJSON only for ingest.
            (
                "POST",
                ingest,
                &[host, json, ("origin", "http://127.0.0.1:7380")],
                200,
            ),
            (
                "POST",
                ingest,
                &[host, json, ("origin", "https://127.0.0.1:7380")],
                200,
            ),
            (
                "POST",
                "/x/_bulk",
                &[
                    host,
                    ("content-type", "application/x-ndjson; charset=utf-8"),
                    ("origin", "http://127.0.0.1:7380"),
                ],
                200,
            ),
            (
                "POST",
                ingest,
                &[host, text, ("origin", "http://127.0.0.1:7380")],
                403,
            ),
            (
                "POST",
                ingest,
                &[host, ("origin", "http://127.0.0.1:7380")],
                403,
            ),
            (
                "POST",
                ingest,
                &[host, text, ("sec-fetch-site", "same-origin")],
                403,
            ),
            (
                "POST",
                ingest,
                &[
                    host,
                    json,
                    ("sec-fetch-site", "same-origin"),
                    ("sec-fetch-mode", "cors"),
                ],
                200,
            ),
            (
                "POST",
                "/api/v1/default/search",
                &[
                    host,
                    ("content-type", "application/x-www-form-urlencoded"),
                    ("origin", "http://127.0.0.1:7380"),
                ],
                200,
            ),
            // Reads: the browser keeps other origins' answers from their pages.
            (
                "GET",
                "/api/v1/default/search",
                &[host, ("origin", "https://evil.example")],
                200,
            ),
            // Default ports.
            (
                "POST",
                ingest,
                &[("host", "localhost"), json, ("origin", "http://localhost")],
                200,
            ),
            (
                "POST",
                ingest,
                &[
                    ("host", "localhost:80"),
                    json,
                    ("origin", "http://localhost"),
                ],
                200,
            ),
            (
                "POST",
                ingest,
                &[
                    ("host", "localhost"),
                    json,
                    ("origin", "http://localhost:8080"),
                ],
                403,
            ),
        ];
        for &(method, path, headers, status) in cases {
            assert_eq!(
                answer(&guard, method, path, headers),
                status,
                "{method} {path} {headers:?}"
            );
        }
    }

    #[test]
    fn host_names() {
        let cases = [
            ("localhost:7380", "localhost"),
            ("example.com.", "example.com"),
            ("[::1]:80", "::1"),
            ("[::1]", "::1"),
            ("10.0.0.1", "10.0.0.1"),
            ("name:notaport", "name:notaport"),
        ];
        for (host, name) in cases {
            assert_eq!(host_name(host), name, "{host}");
        }
    }
}
