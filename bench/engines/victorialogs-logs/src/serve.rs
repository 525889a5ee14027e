//! `victorialogs-logs serve`: answers the log protocol (bench/logs/PROTOCOL.md) on stdin, one
//! flushed line per request, by sending each request to a victoria-logs server as one LogsQL
//! query over HTTP (one keep-alive connection) and reading its answer.
//!
//! | request | HTTP API and LogsQL (`Q` the query's filter, [`crate::logsql`]) |
//! |---|---|
//! | `COUNT` | `/select/logsql/query`: `Q \| stats count() n` |
//! | `TAIL K` | `/select/logsql/query`: `Q \| sort by (_time desc) limit K \| fields _time`, the shape VictoriaLogs runs with its "last N" optimization (narrowing the time range by bisection) |
//! | `TAILEV K` | `/select/logsql/query`: `Q \| sort by (_time desc) limit K`, every field of each event, as VictoriaLogs returns them (with its `_stream` and `_stream_id`) |
//! | `HEAD K` | `/select/logsql/query`: `Q \| sort by (_time) limit K \| fields _time` (no "first N" optimization: a top-K sort over every match) |
//! | `HISTOGRAM S` | `/select/logsql/hits`, `query=Q`, `step=Ss`: counts per bucket aligned to multiples of the step since the epoch (offset 0); empty buckets come back as zeros and are skipped |
//! | `TERMS F K` | `/select/logsql/query`: `Q AND F:* \| format "<lc:F>" as F \| stats by (F) count() n \| sort by (n desc, F) limit K`: values lowercased, as the peers index them |
//! | `PERCENTILES F` | `/select/logsql/query`: `Q AND F:* \| stats count() n, quantile(0.5, F) p50, quantile(0.95, F) p95, quantile(0.99, F) p99` |
//! | `STATS F` | `/select/logsql/query`: `Q AND F:* \| stats count() n, min(F) lo, max(F) hi, sum(F) total` |
//!
//! `F:*` keeps the events that have the field (VictoriaLogs' stats functions take a missing
//! field as an empty value; `quantile` would count it). `quantile` is VictoriaLogs' estimate:
//! each worker keeps a random sample (reservoir) of at most 10,000 values, the samples are
//! concatenated and sorted, and the answer is the value at rank `floor(q * n)` of the result.
//! Once a worker sees more than 10,000 values the answer changes from pass to pass, and it can
//! miss the exact value by more than the driver's tolerance (2 %, or 1).
//!
//! TAILEV: VictoriaLogs fetches each event from its column files and writes it as a JSON
//! object (`_time` in RFC 3339) into its response, as a server does; the adapter reads each
//! object (strings borrowed from the response unless they hold escapes) into the TAILEV digest,
//! leaving out `_time` and VictoriaLogs' own `_stream` and `_stream_id` (`_msg` is `message`).
//! VictoriaLogs does not store empty values, so an event field holding `""` would be missing
//! from its answer (the generated events have none).
//!
//! Each answer line ends with `<TAB>NANOS`: the time from just after the request line was read
//! to just after the answer was formatted (`Instant`, monotonic), as in the other adapters.
//! Here that span holds the HTTP exchange with the server on 127.0.0.1 (writing the request,
//! VictoriaLogs parsing and running it, writing its response, reading and decoding it), which
//! the in-process engines do not pay. VictoriaLogs' own `VL-Request-Duration-Seconds` header is
//! in whole milliseconds, too coarse for these queries.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::io::{self, BufRead, Write};

use anyhow::{bail, Context};
use logs_driver::answer::{self, FieldValue, HistogramAnswer};
use logs_driver::http::Connection;
use logs_driver::protocol::{Request, RequestError};
use logs_driver::schema::TIME;
use logs_driver::time::parse_rfc3339_millis;
use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use crate::logsql::{self, Unsupported};
use crate::server::Server;

/// One HTTP call to VictoriaLogs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    /// `/select/logsql/query` or `/select/logsql/hits`.
    pub path: &'static str,
    pub query: String,
    /// `step` of `/select/logsql/hits`.
    pub step: Option<String>,
}

impl Call {
    fn query(query: String) -> Call {
        Call {
            path: "/select/logsql/query",
            query,
            step: None,
        }
    }

    /// The `application/x-www-form-urlencoded` body.
    pub fn form(&self) -> String {
        let mut form = format!("query={}", form_encode(&self.query));
        if let Some(step) = &self.step {
            form.push_str("&step=");
            form.push_str(&form_encode(step));
        }
        form
    }
}

/// Percent-encodes `text` for a form value (everything but `A-Z a-z 0-9 - _ . ~`).
pub fn form_encode(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len() * 3);
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-_.~".contains(&byte) {
            encoded.push(byte as char);
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

/// The HTTP call that answers `request`.
pub fn plan(request: &Request) -> Result<Call, Unsupported> {
    let q = || logsql::filter(request.filter());
    Ok(match request {
        Request::Count(_) => Call::query(format!("{} | stats count() n", q()?)),
        Request::Tail { k, .. } => Call::query(format!(
            "{} | sort by (_time desc) limit {k} | fields _time",
            q()?
        )),
        Request::TailEvents { k, .. } => {
            Call::query(format!("{} | sort by (_time desc) limit {k}", q()?))
        }
        Request::Head { k, .. } => Call::query(format!(
            "{} | sort by (_time) limit {k} | fields _time",
            q()?
        )),
        Request::Histogram { seconds, .. } => Call {
            path: "/select/logsql/hits",
            query: q()?,
            step: Some(format!("{seconds}s")),
        },
        Request::Terms { field, k, filter } => {
            let q = logsql::filter_with_field(filter, field)?;
            let f = logsql::field_name(field);
            Call::query(format!(
                "{q} | format \"<lc:{f}>\" as {f} | stats by ({f}) count() n | sort by (n desc, {f}) limit {k}"
            ))
        }
        Request::Percentiles { field, filter } => {
            let q = logsql::filter_with_field(filter, field)?;
            let f = logsql::field_name(field);
            Call::query(format!(
                "{q} | stats count() n, quantile(0.5, {f}) p50, quantile(0.95, {f}) p95, quantile(0.99, {f}) p99"
            ))
        }
        Request::Stats { field, filter } => {
            let q = logsql::filter_with_field(filter, field)?;
            let f = logsql::field_name(field);
            Call::query(format!(
                "{q} | stats count() n, min({f}) lo, max({f}) hi, sum({f}) total"
            ))
        }
    })
}

/// The protocol answer to `request` from the body VictoriaLogs answered its [`plan`] with.
pub fn answer_of(request: &Request, body: &[u8]) -> anyhow::Result<String> {
    Ok(match request {
        Request::Count(_) => {
            let row = single_row(body)?;
            integer(&row, "n")?.to_string()
        }
        Request::Tail { .. } | Request::Head { .. } => {
            let mut times = Vec::new();
            for line in lines(body) {
                times.push(Row::parse(line)?.time()?);
            }
            answer::top(times)
        }
        Request::TailEvents { .. } => {
            let mut events = Vec::new();
            for line in lines(body) {
                let row = Row::parse(line)?;
                events.push((row.time()?, row.digest));
            }
            let (Some(&(first, _)), Some(&(last, _))) = (events.first(), events.last()) else {
                return Ok(answer::tail_events(0, 0, 0, 0));
            };
            // Which events of the last millisecond make the cut is the engine's choice.
            let digest = events
                .iter()
                .filter(|(time, _)| *time > last)
                .fold(0u64, |sum, (_, digest)| sum.wrapping_add(*digest));
            answer::tail_events(events.len(), first, last, digest)
        }
        Request::Histogram { seconds, .. } => {
            let hits: Hits = serde_json::from_slice(body).context("reading the hits")?;
            let mut histogram = HistogramAnswer::new(*seconds);
            for series in &hits.hits {
                if series.timestamps.len() != series.values.len() {
                    bail!(
                        "hits: {} timestamps, {} values",
                        series.timestamps.len(),
                        series.values.len()
                    );
                }
                for (timestamp, count) in series.timestamps.iter().zip(&series.values) {
                    let millis = parse_rfc3339_millis(timestamp)
                        .with_context(|| format!("hits: bad timestamp {timestamp:?}"))?;
                    histogram.add_bucket(HistogramAnswer::bucket_of(millis, *seconds), *count);
                }
            }
            histogram.answer()
        }
        Request::Terms { field, k, .. } => {
            let mut counts = Vec::new();
            for line in lines(body) {
                let mut row: StatsRow =
                    serde_json::from_slice(line).context("reading a stats row")?;
                let count = u64::try_from(integer(&row, "n")?)?;
                let value = row
                    .remove(logsql::field_name(field))
                    .with_context(|| format!("a stats row without {field}"))?;
                counts.push((value, count));
            }
            answer::terms(counts, *k)
        }
        Request::Percentiles { .. } => {
            let row = single_row(body)?;
            if integer(&row, "n")? == 0 {
                return Ok(answer::percentiles(None));
            }
            answer::percentiles(Some([
                number(&row, "p50")?,
                number(&row, "p95")?,
                number(&row, "p99")?,
            ]))
        }
        Request::Stats { .. } => {
            let row = single_row(body)?;
            let count = integer(&row, "n")?;
            if count == 0 {
                return Ok(answer::stats(0, 0, 0, 0));
            }
            // Integer fields: min and max come back as integers, the sum as a float64
            // (exact below 2^53).
            answer::stats(
                u64::try_from(count)?,
                integer(&row, "lo")?,
                integer(&row, "hi")?,
                number(&row, "total")? as i64,
            )
        }
    })
}

/// The non-empty lines of a JSON-lines body.
fn lines(body: &[u8]) -> impl Iterator<Item = &[u8]> {
    body.split(|&b| b == b'\n')
        .filter(|line| !line.iter().all(u8::is_ascii_whitespace))
}

/// A row of a `stats` pipe: its `by` fields and results, every value a string.
type StatsRow = HashMap<String, String>;

/// The one row a `stats` pipe without `by` answers.
fn single_row(body: &[u8]) -> anyhow::Result<StatsRow> {
    let mut rows = lines(body);
    let row = rows.next().context("no stats row in the answer")?;
    if rows.next().is_some() {
        bail!("several stats rows in the answer");
    }
    serde_json::from_slice(row).context("reading a stats row")
}

fn value<'a>(row: &'a StatsRow, name: &str) -> anyhow::Result<&'a str> {
    row.get(name)
        .map(String::as_str)
        .with_context(|| format!("no {name} in the stats row"))
}

fn integer(row: &StatsRow, name: &str) -> anyhow::Result<i64> {
    let text = value(row, name)?;
    text.parse()
        .with_context(|| format!("{name} is not an integer: {text:?}"))
}

fn number(row: &StatsRow, name: &str) -> anyhow::Result<f64> {
    let text = value(row, name)?;
    text.parse()
        .with_context(|| format!("{name} is not a number: {text:?}"))
}

/// `/select/logsql/hits`: `{"hits": [{"fields": {}, "timestamps": [...], "values": [...]}]}`.
#[derive(Deserialize)]
struct Hits {
    hits: Vec<HitsSeries>,
}

#[derive(Deserialize)]
struct HitsSeries {
    timestamps: Vec<String>,
    values: Vec<u64>,
}

/// A string of a JSON object, borrowed from the response unless it holds escapes.
#[derive(Deserialize)]
struct Text<'a>(#[serde(borrow)] Cow<'a, str>);

/// One returned event: its `_time` text and its TAILEV digest, read without building a map.
struct Row<'a> {
    time: Option<Cow<'a, str>>,
    digest: u64,
}

impl<'a> Row<'a> {
    fn parse(line: &'a [u8]) -> anyhow::Result<Row<'a>> {
        serde_json::from_slice(line).context("reading an event")
    }

    fn time(&self) -> anyhow::Result<i64> {
        let text = self.time.as_deref().context("an event without _time")?;
        parse_rfc3339_millis(text).with_context(|| format!("bad _time {text:?}"))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Row<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Row<'a>, D::Error> {
        deserializer.deserialize_map(RowVisitor)
    }
}

struct RowVisitor;

impl<'de> Visitor<'de> for RowVisitor {
    type Value = Row<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an event: a JSON object of strings")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Row<'de>, A::Error> {
        let mut row = Row {
            time: None,
            digest: 0,
        };
        while let Some(Text(name)) = map.next_key::<Text<'de>>()? {
            let Text(value) = map.next_value::<Text<'de>>()?;
            match &*name {
                TIME => row.time = Some(value),
                // VictoriaLogs' own fields, not the event's.
                "_stream" | "_stream_id" => {}
                name if logsql::is_integer_field(name) => {
                    let number: i64 = value.parse().map_err(|_| {
                        de::Error::custom(format!("{name} is not an integer: {value:?}"))
                    })?;
                    row.digest = row
                        .digest
                        .wrapping_add(answer::field_digest(FieldValue::Integer(number)));
                }
                _ => {
                    row.digest = row
                        .digest
                        .wrapping_add(answer::field_digest(FieldValue::Str(&value)));
                }
            }
        }
        Ok(row)
    }
}

/// The adapter: a connection to the server and the protocol loop.
pub struct Adapter {
    connection: Connection,
}

impl Adapter {
    pub fn new(server: &Server) -> Adapter {
        Adapter {
            connection: Connection::new(server.addr),
        }
    }

    /// Answers every request line of `input` on `output`, each answer followed by its time
    /// (`ANSWER<TAB>NANOS`), flushing after each.
    pub fn serve(&mut self, input: impl BufRead, output: impl Write) -> anyhow::Result<()> {
        Ok(logs_driver::protocol::serve_lines(input, output, |line| {
            self.answer(line)
        })?)
    }

    /// The answer to one request line (without the time).
    pub fn answer(&mut self, line: &str) -> String {
        let request = match Request::parse(line) {
            Ok(request) => request,
            Err(RequestError::Unsupported { .. }) => return answer::UNSUPPORTED.to_owned(),
            Err(_) => return answer::ERROR.to_owned(),
        };
        let call = match plan(&request) {
            Ok(call) => call,
            Err(Unsupported(reason)) => {
                eprintln!("victorialogs-logs: {line:?}: UNSUPPORTED: {reason}");
                return answer::UNSUPPORTED.to_owned();
            }
        };
        match self.execute(&request, &call) {
            Ok(answer) => answer,
            Err(error) => {
                eprintln!("victorialogs-logs: {line:?} ({}): {error:#}", call.query);
                answer::ERROR.to_owned()
            }
        }
    }

    fn execute(&mut self, request: &Request, call: &Call) -> anyhow::Result<String> {
        let response = self
            .connection
            .post(
                call.path,
                "application/x-www-form-urlencoded",
                call.form().as_bytes(),
            )
            .with_context(|| format!("POST {}", call.path))?;
        if response.status != 200 {
            bail!(
                "HTTP {}: {}",
                response.status,
                String::from_utf8_lossy(&response.body).trim()
            );
        }
        answer_of(request, &response.body)
    }
}

pub fn run(server: Server) -> anyhow::Result<()> {
    let mut adapter = Adapter::new(&server);
    let served = adapter.serve(io::stdin().lock(), io::stdout().lock());
    let stopped = server.stop();
    served?;
    stopped
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(line: &str) -> Request {
        Request::parse(line).expect("a valid request")
    }

    fn query_of(line: &str) -> Option<String> {
        plan(&request(line)).ok().map(|call| call.query)
    }

    #[test]
    fn plans_requests() {
        let cases: &[(&str, Option<&str>)] = &[
            ("COUNT\tfailed", Some(r#"_msg:i("failed") | stats count() n"#)),
            (
                "TAIL\t100\tservice:nginx AND status:503",
                Some(r#"{service=~"(?i)nginx"} AND status:="503" | sort by (_time desc) limit 100 | fields _time"#),
            ),
            (
                "TAILEV\t100\tfailed",
                Some(r#"_msg:i("failed") | sort by (_time desc) limit 100"#),
            ),
            (
                "HEAD\t100\t*",
                Some("* | sort by (_time) limit 100 | fields _time"),
            ),
            (
                "TERMS\tclient_ip\t10\tpath:login",
                Some(r#"path:i("login") AND client_ip:* | format "<lc:client_ip>" as client_ip | stats by (client_ip) count() n | sort by (n desc, client_ip) limit 10"#),
            ),
            (
                "PERCENTILES\tlatency_ms\tservice:nginx",
                Some(r#"{service=~"(?i)nginx"} AND latency_ms:* | stats count() n, quantile(0.5, latency_ms) p50, quantile(0.95, latency_ms) p95, quantile(0.99, latency_ms) p99"#),
            ),
            (
                "STATS\tlatency_ms\t*",
                Some("latency_ms:* | stats count() n, min(latency_ms) lo, max(latency_ms) hi, sum(latency_ms) total"),
            ),
            ("COUNT\ttimout~1", None),
        ];
        for (line, expected) in cases {
            assert_eq!(query_of(line).as_deref(), *expected, "{line:?}");
        }
        let histogram = plan(&request("HISTOGRAM\t60\t*")).unwrap();
        assert_eq!(histogram.path, "/select/logsql/hits");
        assert_eq!(histogram.form(), "query=%2A&step=60s");
    }

    #[test]
    fn encodes_forms() {
        assert_eq!(form_encode("a b|c=\"d\"é"), "a%20b%7Cc%3D%22d%22%C3%A9");
        assert_eq!(form_encode("A-z_0.9~"), "A-z_0.9~");
    }

    #[test]
    fn reads_answers() {
        let answer = |line: &str, body: &str| answer_of(&request(line), body.as_bytes()).unwrap();
        assert_eq!(answer("COUNT\t*", "{\"n\":\"1234\"}\n"), "1234");
        assert_eq!(answer("COUNT\tnothing", "{\"n\":\"0\"}\n"), "0");
        let tail = concat!(
            "{\"_time\":\"2026-11-01T00:02:30.5Z\"}\n",
            "{\"_time\":\"2026-11-01T00:00:59.999Z\"}\n",
        );
        let t = |text| parse_rfc3339_millis(text).unwrap();
        assert_eq!(
            answer("TAIL\t2\terror", tail),
            format!(
                "2 {} {}",
                t("2026-11-01T00:02:30.500Z"),
                t("2026-11-01T00:00:59.999Z")
            )
        );
        assert_eq!(answer("TAIL\t2\terror", ""), "0");
        // The tantivy adapter's TAILEV case: 00:02:30.500 counts (nginx 6, ERROR 6, "Error
        // again" 12, 503 504, 1500 1501, 10.0.0.2 9, /api/login 11), the last event not.
        let events = concat!(
            "{\"_msg\":\"Error again\",\"_stream\":\"{host=\\\"h\\\",service=\\\"nginx\\\"}\",",
            "\"_stream_id\":\"0000\",\"_time\":\"2026-11-01T00:02:30.5Z\",\"client_ip\":\"10.0.0.2\",",
            "\"latency_ms\":\"1500\",\"level\":\"ERROR\",\"path\":\"/api/login\",\"service\":\"nginx\",",
            "\"status\":\"503\"}\n",
            "{\"_msg\":\"upstream \\\"error\\\"\",\"_time\":\"2026-11-01T00:00:59.999Z\",\"service\":\"nginx\"}\n",
        );
        assert_eq!(
            answer("TAILEV\t2\terror", events),
            format!(
                "2 {} {} 2049",
                t("2026-11-01T00:02:30.500Z"),
                t("2026-11-01T00:00:59.999Z")
            )
        );
        let hits = r#"{"hits":[{"fields":{},"timestamps":["1970-01-01T00:00:00Z","1970-01-01T00:01:00Z","1970-01-01T00:02:00Z"],"values":[3,0,2],"total":5}]}"#;
        assert_eq!(answer("HISTOGRAM\t60\t*", hits), format!("2 5 {}", 120 * 2));
        assert_eq!(answer("HISTOGRAM\t60\tnothing", r#"{"hits":[]}"#), "0 0 0");
        let terms =
            "{\"client_ip\":\"10.0.0.1\",\"n\":\"2\"}\n{\"client_ip\":\"10.0.0.2\",\"n\":\"3\"}\n";
        assert_eq!(
            answer("TERMS\tclient_ip\t5\t*", terms),
            "10.0.0.2=3 10.0.0.1=2"
        );
        assert_eq!(answer("TERMS\tclient_ip\t5\tnothing", ""), "");
        assert_eq!(
            answer(
                "PERCENTILES\tlatency_ms\t*",
                r#"{"n":"4","p50":"10","p95":"2999.6","p99":"3000"}"#
            ),
            "10 3000 3000"
        );
        assert_eq!(
            answer(
                "PERCENTILES\tlatency_ms\tnothing",
                r#"{"n":"0","p50":"","p95":"","p99":""}"#
            ),
            "0"
        );
        assert_eq!(
            answer(
                "STATS\tlatency_ms\t*",
                r#"{"n":"4","lo":"10","hi":"3000","total":"4530"}"#
            ),
            "4 10 3000 4530"
        );
        assert_eq!(
            answer(
                "STATS\tlatency_ms\tnothing",
                r#"{"n":"0","lo":"","hi":"","total":"NaN"}"#
            ),
            "0"
        );
        assert!(answer_of(&request("COUNT\t*"), b"{\"n\":\"x\"}").is_err());
        assert!(answer_of(&request("TAIL\t1\t*"), b"{\"_time\":\"yesterday\"}").is_err());
    }
}
