//! The CLI as a client of `quarry serve`, so that nobody needs curl: `quarry tenants`
//! (the admin API, `/api/v1/tenants`), `quarry ingest` (files sent in batches to
//! `POST /api/v1/{tenant}/ingest`, each server-reported line mapped back to `FILE:LINE`) and
//! the HTTP side of `quarry search --server` (`cli_search` builds the request and prints the
//! answer as the local search does).
//!
//! Blocking HTTP (ureq) on the main thread: one request at a time is all a CLI needs, and it
//! keeps an async runtime out of the client.

use crate::cli_index::{progress_bar, rate, MAX_PRINTED_LINE_ERRORS};
use crate::size::{format_size, parse_size};
use anyhow::{anyhow, bail, Context, Result};
use indicatif::ProgressBar;
use quarry_server::tenants::Quotas;
use serde_json::{json, Value as JsonValue};
use std::io::{BufRead, BufReader, IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

pub const DEFAULT_SERVER: &str = "http://127.0.0.1:7380";

/// Where to find the server.
#[derive(clap::Args, Debug)]
pub struct ServerArgs {
    /// The server's URL
    #[arg(long, env = "QUARRY_SERVER", value_name = "URL", default_value = DEFAULT_SERVER)]
    server: String,
}

/// Which tenant, and its key.
#[derive(clap::Args, Debug)]
pub struct TenantArgs {
    /// The tenant whose events are sent (ingest) or searched (search --server)
    #[arg(long, env = "QUARRY_TENANT", default_value = quarry_server::DEFAULT_TENANT)]
    pub tenant: String,
    /// The tenant's API key (or the admin token), sent as `Authorization:
    /// Bearer`; a server without an admin token needs none. Prefer the environment variable
    /// to the flag (a flag shows in `ps`)
    #[arg(
        long,
        env = "QUARRY_API_KEY",
        value_name = "KEY",
        hide_env_values = true
    )]
    pub key: Option<String>,
}

impl TenantArgs {
    /// A client of `server` for this tenant.
    pub fn client(&self, server: &str) -> Client {
        Client::new(server, self.key.clone(), "--key or QUARRY_API_KEY")
    }

    /// The path of one of the tenant's endpoints (`search`, `ingest`).
    pub fn path(&self, endpoint: &str) -> String {
        format!("/api/v1/{}/{endpoint}", self.tenant)
    }
}

/// The server and its admin token, for the tenants API.
#[derive(clap::Args, Debug)]
struct AdminArgs {
    #[command(flatten)]
    server: ServerArgs,
    /// The server's admin token (`quarry serve --admin-token`). Prefer the environment
    /// variable to the flag (a flag shows in `ps`)
    #[arg(
        long,
        env = "QUARRY_ADMIN_TOKEN",
        value_name = "TOKEN",
        hide_env_values = true
    )]
    admin_token: Option<String>,
}

impl AdminArgs {
    fn client(&self) -> Client {
        Client::new(
            &self.server.server,
            self.admin_token.clone(),
            "--admin-token or QUARRY_ADMIN_TOKEN",
        )
    }
}

#[derive(clap::Args, Debug)]
pub struct TenantsArgs {
    #[command(subcommand)]
    command: TenantsCommand,
}

#[derive(clap::Subcommand, Debug)]
enum TenantsCommand {
    /// Create a tenant and print its API key (shown this once; the server keeps only its hash)
    Create(CreateArgs),
    /// List the tenants: events, blocks, stored bytes, retention, quotas
    List(ListArgs),
    /// Show one tenant
    Show(ShowArgs),
    /// Delete a tenant with all its events (asks for the name typed back, or --yes)
    Delete(DeleteArgs),
}

#[derive(clap::Args, Debug)]
struct CreateArgs {
    #[command(flatten)]
    admin: AdminArgs,
    /// Delete whole blocks whose newest event is older than this (30d, 12h, ...)
    #[arg(long, value_name = "AGE")]
    retention: Option<String>,
    /// Quota: sustained ingest rate, in bytes of request body per second (e.g. 10MB)
    #[arg(long, value_name = "BYTES_PER_S", value_parser = parse_size)]
    ingest_rate: Option<usize>,
    /// Quota: bytes that may arrive at once above the rate [default: one second's worth]
    #[arg(long, value_name = "BYTES", value_parser = parse_size, requires = "ingest_rate")]
    ingest_burst: Option<usize>,
    /// Quota: block bytes stored, beyond which ingest is refused until retention frees some
    #[arg(long, value_name = "BYTES", value_parser = parse_size)]
    stored_bytes: Option<usize>,
    /// Quota: events in one ingest request
    #[arg(long, value_name = "N")]
    events_per_request: Option<u64>,
    /// The tenant's name: 1-63 of a-z 0-9 - _
    name: String,
}

#[derive(clap::Args, Debug)]
struct ListArgs {
    #[command(flatten)]
    admin: AdminArgs,
    /// Print the server's JSON answer instead of a table
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args, Debug)]
struct ShowArgs {
    #[command(flatten)]
    admin: AdminArgs,
    /// Print the server's JSON answer
    #[arg(long)]
    json: bool,
    name: String,
}

#[derive(clap::Args, Debug)]
struct DeleteArgs {
    #[command(flatten)]
    admin: AdminArgs,
    /// Delete without asking (needed when standard input is not a terminal, as in scripts)
    #[arg(long)]
    yes: bool,
    name: String,
}

#[derive(clap::Args, Debug)]
pub struct IngestArgs {
    #[command(flatten)]
    server: ServerArgs,
    #[command(flatten)]
    tenant: TenantArgs,
    /// The files are plain-text lines, each an event `{"message": line}` with the time of a
    /// leading timestamp (sent as text/plain); without it, one JSON object per line
    #[arg(long)]
    text: bool,
    /// Events (non-blank lines) per request
    #[arg(long, value_name = "EVENTS", default_value_t = 5000,
          value_parser = clap::value_parser!(u64).range(1..))]
    batch_size: u64,
    /// A request is also cut at this many bytes, below the server's --max-body-size (64MB by
    /// default; over it the server answers 413)
    #[arg(long, value_name = "SIZE", default_value = "16MB", value_parser = parse_size)]
    batch_bytes: usize,
    /// Files to send (.gz and .zst are decompressed); `-` reads stdin
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
}

/// An HTTP answer: its status, `Retry-After` in seconds, and its body.
pub struct Answer {
    pub status: u16,
    retry_after: Option<u64>,
    body: Vec<u8>,
}

impl Answer {
    pub fn json(&self) -> Result<JsonValue> {
        serde_json::from_slice(&self.body).with_context(|| {
            format!(
                "the server's answer ({}) is not JSON: {:?}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// The server's error message: the `error` of a JSON answer, else its text.
    pub fn message(&self) -> String {
        match serde_json::from_slice::<JsonValue>(&self.body) {
            Ok(JsonValue::Object(object)) if object.contains_key("error") => match &object["error"]
            {
                JsonValue::String(text) => text.clone(),
                other => other.to_string(),
            },
            _ => String::from_utf8_lossy(&self.body).trim().to_owned(),
        }
    }
}

/// A client of one server, with the token it sends (a tenant's key or the admin token).
pub struct Client {
    agent: ureq::Agent,
    server: String,
    token: Option<String>,
    /// How a user passes the token, for the message when none was sent.
    token_source: &'static str,
}

impl Client {
    fn new(server: &str, token: Option<String>, token_source: &'static str) -> Client {
        let agent = ureq::Agent::config_builder()
            // Every status is an answer to read: its message is what the user needs.
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(10)))
            .build()
            .new_agent();
        Client {
            agent,
            server: server.trim_end_matches('/').to_owned(),
            token: token.filter(|t| !t.is_empty()),
            token_source,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.server)
    }

    fn authorized<B>(&self, request: ureq::RequestBuilder<B>) -> ureq::RequestBuilder<B> {
        match &self.token {
            Some(token) => request.header("Authorization", format!("Bearer {token}")),
            None => request,
        }
    }

    pub fn get(&self, path: &str, query: &[(&str, String)]) -> Result<Answer> {
        let mut request = self.authorized(self.agent.get(self.url(path)));
        for (key, value) in query {
            request = request.query(*key, value);
        }
        self.answer(request.call())
    }

    pub fn post(&self, path: &str, content_type: &str, body: &[u8]) -> Result<Answer> {
        let request = self
            .authorized(self.agent.post(self.url(path)))
            .header("Content-Type", content_type);
        self.answer(request.send(body))
    }

    fn delete(&self, path: &str) -> Result<Answer> {
        self.answer(self.authorized(self.agent.delete(self.url(path))).call())
    }

    fn answer(
        &self,
        sent: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    ) -> Result<Answer> {
        let mut response = sent.map_err(|error| self.transport_error(error))?;
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|value| value.to_str().ok())
            .and_then(|text| text.trim().parse().ok());
        let body = response
            .body_mut()
            .with_config()
            .limit(u64::MAX)
            .read_to_vec()
            .map_err(|error| self.transport_error(error))?;
        Ok(Answer {
            status: response.status().as_u16(),
            retry_after,
            body,
        })
    }

    fn transport_error(&self, error: ureq::Error) -> anyhow::Error {
        let refused = match &error {
            ureq::Error::Io(io) => io.kind() == std::io::ErrorKind::ConnectionRefused,
            ureq::Error::ConnectionFailed => true,
            _ => false,
        };
        if refused {
            anyhow!(
                "no Quarry server at {} (start one with `quarry serve`)",
                self.server
            )
        } else {
            anyhow::Error::new(error).context(format!("asking {}", self.server))
        }
    }

    /// Why the server did not do what was asked, from a non-success answer.
    pub fn refusal(&self, answer: &Answer) -> anyhow::Error {
        let message = answer.message();
        match (answer.status, &self.token) {
            (401, None) => anyhow!(
                "the server needs a key ({message}): pass {}",
                self.token_source
            ),
            (401, Some(_)) => anyhow!("the server refused the key ({message})"),
            (status, _) => anyhow!("the server answered {status}: {message}"),
        }
    }

    /// The JSON body of a success answer, else the refusal.
    pub fn success_json(&self, answer: Answer) -> Result<JsonValue> {
        if (200..300).contains(&answer.status) {
            answer.json()
        } else {
            Err(self.refusal(&answer))
        }
    }
}

pub fn tenants(args: TenantsArgs) -> Result<ExitCode> {
    match args.command {
        TenantsCommand::Create(args) => create_tenant(args),
        TenantsCommand::List(args) => list_tenants(args),
        TenantsCommand::Show(args) => show_tenant(args),
        TenantsCommand::Delete(args) => delete_tenant(args),
    }
}

fn create_tenant(args: CreateArgs) -> Result<ExitCode> {
    let client = args.admin.client();
    let quotas = Quotas {
        ingest_bytes_per_second: args.ingest_rate.map(|bytes| bytes as u64),
        ingest_burst_bytes: args.ingest_burst.map(|bytes| bytes as u64),
        stored_bytes: args.stored_bytes.map(|bytes| bytes as u64),
        events_per_request: args.events_per_request,
    };
    let mut request = json!({ "name": args.name, "quotas": quotas });
    if let Some(retention) = &args.retention {
        request["retention"] = retention.as_str().into();
    }
    let answer = client.post(
        "/api/v1/tenants",
        "application/json",
        request.to_string().as_bytes(),
    )?;
    let tenant = client.success_json(answer)?;
    let key = tenant["api_key"]
        .as_str()
        .context("the server's answer has no api_key")?;
    eprintln!(
        "created tenant {}; its API key follows, shown this once (the server keeps only its hash):",
        args.name
    );
    println!("{key}");
    Ok(ExitCode::SUCCESS)
}

fn list_tenants(args: ListArgs) -> Result<ExitCode> {
    let client = args.admin.client();
    let answer = client.get("/api/v1/tenants", &[])?;
    let body = client.success_json(answer)?;
    if args.json {
        println!("{body}");
        return Ok(ExitCode::SUCCESS);
    }
    let mut rows = vec![TENANT_COLUMNS.map(str::to_uppercase).to_vec()];
    for tenant in body["tenants"].as_array().into_iter().flatten() {
        rows.push(tenant_cells(tenant).to_vec());
    }
    let widths: Vec<usize> = (0..TENANT_COLUMNS.len())
        .map(|column| rows.iter().map(|row| row[column].len()).max().unwrap_or(0))
        .collect();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:width$}"))
            .collect();
        println!("{}", cells.join("  ").trim_end());
    }
    Ok(ExitCode::SUCCESS)
}

fn show_tenant(args: ShowArgs) -> Result<ExitCode> {
    let client = args.admin.client();
    let answer = client.get(&format!("/api/v1/tenants/{}", args.name), &[])?;
    let tenant = client.success_json(answer)?;
    if args.json {
        println!("{tenant}");
        return Ok(ExitCode::SUCCESS);
    }
    let created = tenant["created"].as_str().unwrap_or("").to_owned();
    let fields = TENANT_COLUMNS
        .into_iter()
        .zip(tenant_cells(&tenant))
        .chain([("created", created)]);
    for (name, value) in fields {
        println!("{:<10} {value}", format!("{name}:"));
    }
    Ok(ExitCode::SUCCESS)
}

const TENANT_COLUMNS: [&str; 6] = ["name", "events", "blocks", "stored", "retention", "quotas"];

/// A tenant as the server describes it (`admin::describe`), one text per `TENANT_COLUMNS`.
fn tenant_cells(tenant: &JsonValue) -> [String; 6] {
    let count = |key: &str| tenant[key].as_u64().map_or("-".into(), |n| n.to_string());
    let retention = tenant["retention_seconds"]
        .as_u64()
        .map_or("-".into(), format_seconds);
    [
        tenant["name"].as_str().unwrap_or("?").to_owned(),
        count("events"),
        count("blocks"),
        tenant["stored_bytes"]
            .as_u64()
            .map_or("-".into(), format_size),
        retention,
        quota_text(&tenant["quotas"]),
    ]
}

/// `ingest 10.0 MB/s (burst 20.0 MB), stored 50.0 GB, 100000 events/request`, or `-`.
fn quota_text(quotas: &JsonValue) -> String {
    let field = |key: &str| quotas[key].as_u64();
    let mut parts = Vec::new();
    if let Some(rate) = field("ingest_bytes_per_second") {
        let burst = field("ingest_burst_bytes")
            .map(|burst| format!(" (burst {})", format_size(burst)))
            .unwrap_or_default();
        parts.push(format!("ingest {}/s{burst}", format_size(rate)));
    }
    if let Some(stored) = field("stored_bytes") {
        parts.push(format!("stored {}", format_size(stored)));
    }
    if let Some(events) = field("events_per_request") {
        parts.push(format!("{events} events/request"));
    }
    if parts.is_empty() {
        "-".to_owned()
    } else {
        parts.join(", ")
    }
}

/// Seconds in the largest unit that divides them: `30d`, `12h`, `90s`.
fn format_seconds(seconds: u64) -> String {
    for (unit, size) in [("d", 86_400), ("h", 3_600), ("m", 60)] {
        if seconds > 0 && seconds.is_multiple_of(size) {
            return format!("{}{unit}", seconds / size);
        }
    }
    format!("{seconds}s")
}

fn delete_tenant(args: DeleteArgs) -> Result<ExitCode> {
    if !args.yes && !confirm_deletion(&args.name)? {
        eprintln!("tenant {} not deleted", args.name);
        return Ok(ExitCode::from(1));
    }
    let client = args.admin.client();
    let answer = client.delete(&format!("/api/v1/tenants/{}", args.name))?;
    client.success_json(answer)?;
    eprintln!("deleted tenant {} and all its events", args.name);
    Ok(ExitCode::SUCCESS)
}

/// Asks on the terminal for the tenant's name typed back. Without a terminal (a script)
/// nobody can answer, so it refuses: scripts pass --yes.
fn confirm_deletion(name: &str) -> Result<bool> {
    if !std::io::stdin().is_terminal() {
        bail!("refusing to delete tenant {name} without --yes (standard input is not a terminal to confirm on)");
    }
    eprint!("this deletes tenant {name} and all its events, for good; type its name to confirm: ");
    let mut typed = String::new();
    std::io::stdin()
        .read_line(&mut typed)
        .context("reading the confirmation")?;
    Ok(typed.trim() == name)
}

/// How often a request answered 429 or 503 is sent again before `ingest` gives up.
const MAX_RETRIES: u32 = 10;

/// The longest wait between two tries, whatever `Retry-After` says (a stored-bytes quota says
/// 60; an absurd value must not hang the CLI for hours).
const MAX_RETRY_WAIT: Duration = Duration::from_secs(300);

/// One request's worth of consecutive lines of one input.
struct Batch {
    /// Line number in its input of the body's first line (from 1).
    first_line: u64,
    /// Lines in the body, blank ones too: the server numbers every line.
    lines: u64,
    /// Non-blank lines.
    events: u64,
    body: Vec<u8>,
}

/// What the server did with the batches so far.
#[derive(Default)]
struct IngestTally {
    ingested: u64,
    failed: u64,
    /// Bytes sent (decompressed).
    bytes: u64,
    /// `FILE:LINE: reason`, the first `MAX_PRINTED_LINE_ERRORS` of them.
    errors: Vec<String>,
    /// Failed lines not in `errors`.
    unlisted: u64,
}

impl IngestTally {
    /// Adds one reply (`{"ingested", "failed", "errors": [{"line", "reason"}]}`) to the
    /// batch of `name` that starts at `first_line`.
    fn add(&mut self, name: &str, batch: &Batch, reply: &JsonValue) {
        self.ingested += reply["ingested"].as_u64().unwrap_or(0);
        let failed = reply["failed"].as_u64().unwrap_or(0);
        self.failed += failed;
        self.bytes += batch.body.len() as u64;
        let listed = reply["errors"].as_array().map_or(&[][..], Vec::as_slice);
        for error in listed {
            if self.errors.len() as u64 >= MAX_PRINTED_LINE_ERRORS {
                break;
            }
            // The server numbers the lines of a body from 1.
            let line = batch.first_line + error["line"].as_u64().unwrap_or(1).saturating_sub(1);
            let reason = error["reason"].as_str().unwrap_or("rejected");
            self.errors.push(format!("{name}:{line}: {reason}"));
        }
        self.unlisted = self.failed - self.errors.len() as u64;
    }

    /// The error report and the summary, on stderr.
    fn report(&self, seconds: f64) {
        for error in &self.errors {
            eprintln!("{error}");
        }
        if self.unlisted > 0 {
            eprintln!("... and {} more failed lines", self.unlisted);
        }
        let megabytes = self.bytes as f64 / 1e6;
        eprintln!(
            "ingested {} events ({megabytes:.1} MB) in {seconds:.2} s: {:.1} MB/s; {} lines failed",
            self.ingested,
            rate(megabytes, seconds),
            self.failed
        );
    }
}

pub fn ingest(args: IngestArgs) -> Result<ExitCode> {
    let client = args.tenant.client(&args.server.server);
    let path = args.tenant.path("ingest");
    let content_type = if args.text {
        "text/plain; charset=utf-8"
    } else {
        "application/x-ndjson"
    };
    let mut total = Some(0u64);
    for file in &args.files {
        if file.as_os_str() == "-" {
            total = None;
            continue;
        }
        let len = std::fs::metadata(file)
            .with_context(|| format!("{}", file.display()))?
            .len();
        total = total.map(|total| total + len);
    }
    let bar = if std::io::stderr().is_terminal() {
        progress_bar(total)
    } else {
        ProgressBar::hidden()
    };
    let started = Instant::now();
    let mut tally = IngestTally::default();
    let mut send = |name: &str, batch: &Batch| -> Result<()> {
        let reply = send_with_retries(&client, &path, content_type, &batch.body, &bar)
            .with_context(|| {
                format!(
                    "{name} lines {}-{} were not ingested",
                    batch.first_line,
                    batch.first_line + batch.lines - 1
                )
            })?;
        tally.add(name, batch, &reply);
        bar.set_message(format!(
            "{} events, {} failed",
            tally.ingested, tally.failed
        ));
        Ok(())
    };
    let mut sent = Ok(());
    for file in &args.files {
        sent = send_input(file, &args, &bar, &mut send);
        if sent.is_err() {
            break;
        }
    }
    bar.finish_and_clear();
    tally.report(started.elapsed().as_secs_f64());
    sent?;
    Ok(if tally.failed > 0 {
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    })
}

/// Reads one input (`-`: stdin) and hands `send` its lines in batches of `--batch-size`
/// events or `--batch-bytes` bytes, each with its first line's number.
fn send_input(
    file: &Path,
    args: &IngestArgs,
    bar: &ProgressBar,
    send: &mut impl FnMut(&str, &Batch) -> Result<()>,
) -> Result<()> {
    let name = file.display().to_string();
    let raw: Box<dyn Read> = if name == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(std::fs::File::open(file).with_context(|| name.clone())?)
    };
    // The bar counts bytes as stored (compressed), as its total does.
    let raw = BufReader::with_capacity(1 << 20, bar.wrap_read(raw));
    let mut reader = BufReader::with_capacity(
        1 << 20,
        quarry_index::decompressed(file, raw).with_context(|| name.clone())?,
    );
    let mut batch = Batch {
        first_line: 1,
        lines: 0,
        events: 0,
        body: Vec::new(),
    };
    loop {
        let start = batch.body.len();
        let read = reader
            .read_until(b'\n', &mut batch.body)
            .with_context(|| format!("reading {name}"))?;
        if read == 0 {
            break;
        }
        if !batch.body.ends_with(b"\n") {
            batch.body.push(b'\n');
        }
        batch.lines += 1;
        if !batch.body[start..].iter().all(u8::is_ascii_whitespace) {
            batch.events += 1;
        }
        if batch.events >= args.batch_size || batch.body.len() >= args.batch_bytes {
            send(&name, &batch)?;
            batch.first_line += batch.lines;
            batch.lines = 0;
            batch.events = 0;
            batch.body.clear();
        }
    }
    // Blank lines alone hold no event: nothing to send.
    if batch.events > 0 {
        send(&name, &batch)?;
    }
    Ok(())
}

/// Posts one batch; a 429 or 503 is sent again after its `Retry-After` (1 s when it does not
/// say), up to `MAX_RETRIES` times.
fn send_with_retries(
    client: &Client,
    path: &str,
    content_type: &str,
    body: &[u8],
    bar: &ProgressBar,
) -> Result<JsonValue> {
    let mut retries = 0;
    loop {
        let answer = client.post(path, content_type, body)?;
        if !matches!(answer.status, 429 | 503) {
            return client.success_json(answer);
        }
        if retries == MAX_RETRIES {
            return Err(client
                .refusal(&answer)
                .context(format!("gave up after {MAX_RETRIES} retries")));
        }
        retries += 1;
        let wait = Duration::from_secs(answer.retry_after.unwrap_or(1)).min(MAX_RETRY_WAIT);
        bar.suspend(|| {
            eprintln!(
                "the server answered {}: {}; retrying in {} s ({retries}/{MAX_RETRIES})",
                answer.status,
                answer.message(),
                wait.as_secs()
            )
        });
        std::thread::sleep(wait);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retention_reads_in_its_largest_whole_unit() {
        for (seconds, text) in [
            (0, "0s"),
            (59, "59s"),
            (90, "90s"),
            (120, "2m"),
            (7_200, "2h"),
            (30 * 86_400, "30d"),
            (86_400 + 3_600, "25h"),
        ] {
            assert_eq!(format_seconds(seconds), text, "{seconds}");
        }
    }

    #[test]
    fn reply_line_numbers_map_to_input_lines() {
        let batch = Batch {
            first_line: 501,
            lines: 500,
            events: 499,
            body: b"{}\n".repeat(500),
        };
        let reply = json!({"ingested": 498, "failed": 2, "errors": [
            {"line": 1, "reason": "first"}, {"line": 500, "reason": "last"}]});
        let mut tally = IngestTally::default();
        tally.add("f.json", &batch, &reply);
        assert_eq!(tally.errors, ["f.json:501: first", "f.json:1000: last"]);
        assert_eq!((tally.ingested, tally.failed, tally.unlisted), (498, 2, 0));
        // A reply that lists fewer errors than it counts (the server lists 1000 at most).
        tally.add(
            "f.json",
            &batch,
            &json!({"ingested": 0, "failed": 5, "errors": []}),
        );
        assert_eq!((tally.failed, tally.unlisted), (7, 5));
    }
}
