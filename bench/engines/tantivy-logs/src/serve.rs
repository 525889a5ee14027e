//! `tantivy-logs serve`: answers the log protocol (bench/logs/PROTOCOL.md) on stdin, one
//! flushed line per request, searching on the calling thread. Each answer line ends with
//! `<TAB>NANOS`, the engine time: from just after the request line was read to just after the
//! answer was formatted, by `Instant` (monotonic).
//!
//! Each request is done the idiomatic tantivy way:
//!
//! | request | tantivy |
//! |---|---|
//! | `COUNT` | the `Count` collector |
//! | `TAIL`, `HEAD` | `TopDocs::with_limit(K).order_by_fast_field::<DateTime>("_time", Desc / Asc)` |
//! | `TAILEV` | TAIL's collector, then `Searcher::doc` for each hit (the stored document, from the LZ4 block cache of each segment's doc store), written as a JSON object into one reused buffer, then digested |
//! | `HISTOGRAM` | a `date_histogram` aggregation on `_time`, `fixed_interval` `"{SECONDS}s"`, `min_doc_count` 1 |
//! | `TERMS` | a `terms` aggregation, `size` K, ordered by count (ties by value: tantivy 0.27 breaks them by key), `segment_size` 2^24 so every segment reports every value and the counts are exact |
//! | `PERCENTILES` | a `percentiles` aggregation, percents 50, 95, 99: tantivy's DDSketch, which returns the value of 0-based rank `floor(q * (n - 1))` within about 1 % |
//! | `STATS` | a `stats` aggregation |
//!
//! Aggregations run with limits far above tantivy's defaults (65,000 buckets, 500 MB): a
//! minute histogram over a month of events has 43,200 buckets, and the benchmark measures
//! speed, not the guard rails.

use std::cell::RefCell;
use std::io::{self, BufRead, Write};
use std::path::Path;

use anyhow::{bail, Context};
use logs_driver::answer::FieldValue;
use logs_driver::answer::{self, HistogramAnswer};
use logs_driver::protocol::{Request, RequestError};
use logs_driver::schema::TIME;
use logs_driver::time::format_rfc3339_millis;
use serde_json::json;
use tantivy::aggregation::agg_req::Aggregations;
use tantivy::aggregation::agg_result::{
    AggregationResult, AggregationResults, BucketEntries, BucketResult, MetricResult,
};
use tantivy::aggregation::metric::PercentileValues;
use tantivy::aggregation::{AggContextParams, AggregationCollector, AggregationLimitsGuard, Key};
use tantivy::collector::{Count, TopDocs};
use tantivy::query::Query;
use tantivy::schema::{Field, Schema, Value};
use tantivy::{DateTime, DocAddress, Index, Order, ReloadPolicy, Searcher, TantivyDocument};

use crate::query;
use crate::schema::{self, Fields};

/// Values per segment a terms aggregation reports before merging: above any keyword field's
/// cardinality here, so no value is cut at the segment level and counts are exact.
const TERMS_SEGMENT_SIZE: u32 = 1 << 24;
const AGGREGATION_MEMORY_LIMIT: u64 = 8 << 30;
const AGGREGATION_BUCKET_LIMIT: u32 = 1 << 26;

pub struct Server {
    index: Index,
    schema: Schema,
    fields: Fields,
    time: Field,
    searcher: Searcher,
    /// The JSON of the event being returned, reused from event to event and request to request
    /// as a server reuses its response buffer.
    event_json: RefCell<Vec<u8>>,
}

impl Server {
    pub fn open(index_dir: &Path) -> anyhow::Result<Server> {
        let index = Index::open_in_dir(index_dir)
            .with_context(|| format!("opening the index in {}", index_dir.display()))?;
        Server::new(index)
    }

    pub fn new(index: Index) -> anyhow::Result<Server> {
        schema::register_tokenizers(&index);
        let schema = index.schema();
        let fields = Fields::of(&schema)?;
        let time = fields.get(TIME).context("no _time field")?;
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        let searcher = reader.searcher();
        Ok(Server {
            index,
            schema,
            fields,
            time,
            searcher,
            event_json: RefCell::new(Vec::new()),
        })
    }

    /// Answers every request line of `input` on `output`, each answer followed by its engine
    /// time (`ANSWER<TAB>NANOS`), flushing after each.
    pub fn serve(&self, input: impl BufRead, output: impl Write) -> anyhow::Result<()> {
        Ok(logs_driver::protocol::serve_lines(input, output, |line| {
            self.answer(line)
        })?)
    }

    /// The answer to one request line (without the engine time).
    pub fn answer(&self, line: &str) -> String {
        let request = match Request::parse(line) {
            Ok(request) => request,
            Err(RequestError::Unsupported { .. }) => return answer::UNSUPPORTED.to_owned(),
            Err(_) => return answer::ERROR.to_owned(),
        };
        match self.execute(&request) {
            Ok(answer) => answer,
            Err(error) => {
                eprintln!("tantivy-logs: {line:?}: {error:#}");
                answer::ERROR.to_owned()
            }
        }
    }

    fn execute(&self, request: &Request) -> anyhow::Result<String> {
        let query = query::build(&self.index, &self.fields, request.filter())?;
        Ok(match request {
            Request::Count(_) => self.searcher.search(&query, &Count)?.to_string(),
            Request::Tail { k, .. } => self.top(&query, *k, Order::Desc)?,
            Request::TailEvents { k, .. } => self.tail_events(&query, *k)?,
            Request::Head { k, .. } => self.top(&query, *k, Order::Asc)?,
            Request::Histogram { seconds, .. } => {
                let results = self.aggregate(
                    &query,
                    json!({"date_histogram": {
                        "field": TIME,
                        "fixed_interval": format!("{seconds}s"),
                        "min_doc_count": 1,
                    }}),
                )?;
                let Some(AggregationResult::BucketResult(BucketResult::Histogram { buckets })) =
                    results.0.get(AGGREGATION)
                else {
                    bail!("unexpected date_histogram result");
                };
                let buckets = match buckets {
                    BucketEntries::Vec(buckets) => buckets.iter().collect::<Vec<_>>(),
                    BucketEntries::HashMap(buckets) => buckets.values().collect(),
                };
                let mut histogram = HistogramAnswer::new(*seconds);
                for bucket in buckets {
                    // Date histogram keys are bucket starts in milliseconds, whole numbers.
                    let Key::F64(start_ms) = bucket.key else {
                        bail!("unexpected date_histogram key {:?}", bucket.key);
                    };
                    let bucket_index = HistogramAnswer::bucket_of(start_ms as i64, *seconds);
                    histogram.add_bucket(bucket_index, bucket.doc_count);
                }
                histogram.answer()
            }
            Request::Terms { field, k, .. } => {
                let results = self.aggregate(
                    &query,
                    json!({"terms": {
                        "field": field,
                        "size": k,
                        "segment_size": TERMS_SEGMENT_SIZE,
                        "order": {"_count": "desc"},
                    }}),
                )?;
                let Some(AggregationResult::BucketResult(BucketResult::Terms { buckets, .. })) =
                    results.0.get(AGGREGATION)
                else {
                    bail!("unexpected terms result");
                };
                let counts = buckets
                    .iter()
                    .map(|bucket| match &bucket.key {
                        Key::Str(value) => Ok((value.clone(), bucket.doc_count)),
                        other => bail!("unexpected terms key {other:?}"),
                    })
                    .collect::<anyhow::Result<Vec<_>>>()?;
                // Already in protocol order; `terms` sorts again, which changes nothing.
                answer::terms(counts, *k)
            }
            Request::Percentiles { field, .. } => {
                let results = self.aggregate(
                    &query,
                    json!({"percentiles": {
                        "field": field,
                        "percents": [50.0, 95.0, 99.0],
                        "keyed": false,
                    }}),
                )?;
                let Some(AggregationResult::MetricResult(MetricResult::Percentiles(result))) =
                    results.0.get(AGGREGATION)
                else {
                    bail!("unexpected percentiles result");
                };
                let PercentileValues::Vec(entries) = &result.values else {
                    bail!("unexpected keyed percentiles");
                };
                let values: Vec<f64> = entries.iter().map(|entry| entry.value).collect();
                // NaN when no match has the field.
                answer::percentiles(match values[..] {
                    [p50, p95, p99] if !p50.is_nan() => Some([p50, p95, p99]),
                    _ => None,
                })
            }
            Request::Stats { field, .. } => {
                let results = self.aggregate(&query, json!({"stats": {"field": field}}))?;
                let Some(AggregationResult::MetricResult(MetricResult::Stats(stats))) =
                    results.0.get(AGGREGATION)
                else {
                    bail!("unexpected stats result");
                };
                // Integer fields: min, max and sum are whole numbers in the f64s (sums below
                // 2^53 are exact).
                answer::stats(
                    stats.count,
                    stats.min.unwrap_or(0.0) as i64,
                    stats.max.unwrap_or(0.0) as i64,
                    stats.sum as i64,
                )
            }
        })
    }

    /// TAIL (`Desc`) or HEAD (`Asc`): the `_time` of the `k` newest or oldest matches.
    fn top(&self, query: &dyn Query, k: usize, order: Order) -> anyhow::Result<String> {
        let collector = TopDocs::with_limit(k).order_by_fast_field::<DateTime>(TIME, order);
        let hits = self.searcher.search(query, &collector)?;
        // Every event has a `_time`; a hit without one would be a corrupt column.
        let times = hits
            .iter()
            .map(|(time, _)| time.map(DateTime::into_timestamp_millis))
            .collect::<Option<Vec<i64>>>()
            .context("a hit without _time")?;
        Ok(answer::top(times))
    }

    /// TAILEV: the `k` newest matches, each event fetched from the document store and written
    /// as JSON, answered `n first last digest`.
    fn tail_events(&self, query: &dyn Query, k: usize) -> anyhow::Result<String> {
        let collector = TopDocs::with_limit(k).order_by_fast_field::<DateTime>(TIME, Order::Desc);
        let hits = self.searcher.search(query, &collector)?;
        let hits: Vec<(i64, DocAddress)> = hits
            .into_iter()
            .map(|(time, address)| Some((time?.into_timestamp_millis(), address)))
            .collect::<Option<_>>()
            .context("a hit without _time")?;
        let (Some(&(first, _)), Some(&(last, _))) = (hits.first(), hits.last()) else {
            return Ok(answer::tail_events(0, 0, 0, 0));
        };
        let mut json = self.event_json.borrow_mut();
        let mut digest = 0u64;
        for &(time, address) in &hits {
            let document: TantivyDocument = self.searcher.doc(address)?;
            let event_digest = self.write_event(&document, &mut json)?;
            // Which events of the last millisecond make the cut is the engine's choice.
            if time > last {
                digest = digest.wrapping_add(event_digest);
            }
        }
        Ok(answer::tail_events(hits.len(), first, last, digest))
    }

    /// Writes a stored document as one JSON object (`_time` in RFC 3339) into `out`, replacing
    /// what it held, and returns its TAILEV digest.
    fn write_event(&self, document: &TantivyDocument, out: &mut Vec<u8>) -> anyhow::Result<u64> {
        out.clear();
        out.push(b'{');
        let mut digest = 0u64;
        for (index, (field, value)) in document.field_values().enumerate() {
            if index > 0 {
                out.push(b',');
            }
            serde_json::to_writer(&mut *out, self.schema.get_field_name(field))?;
            out.push(b':');
            if field == self.time {
                let time = value.as_datetime().context("_time is not a date")?;
                out.push(b'"');
                format_rfc3339_millis(time.into_timestamp_millis(), out);
                out.push(b'"');
            } else if let Some(text) = value.as_str() {
                serde_json::to_writer(&mut *out, text)?;
                digest = digest.wrapping_add(answer::field_digest(FieldValue::Str(text)));
            } else if let Some(number) = value.as_i64() {
                serde_json::to_writer(&mut *out, &number)?;
                digest = digest.wrapping_add(answer::field_digest(FieldValue::Integer(number)));
            } else {
                bail!(
                    "unexpected stored value in {}",
                    self.schema.get_field_name(field)
                );
            }
        }
        out.push(b'}');
        Ok(digest)
    }

    /// Runs one aggregation, named [`AGGREGATION`], over the matches of `query`.
    fn aggregate(
        &self,
        query: &dyn Query,
        aggregation: serde_json::Value,
    ) -> anyhow::Result<AggregationResults> {
        let request: Aggregations = serde_json::from_value(json!({ AGGREGATION: aggregation }))?;
        let collector = AggregationCollector::from_aggs(
            request,
            AggContextParams::new(
                AggregationLimitsGuard::new(
                    Some(AGGREGATION_MEMORY_LIMIT),
                    Some(AGGREGATION_BUCKET_LIMIT),
                ),
                self.index.tokenizers().clone(),
            ),
        );
        Ok(self.searcher.search(query, &collector)?)
    }
}

const AGGREGATION: &str = "a";

pub fn run(index_dir: &Path) -> anyhow::Result<()> {
    let server = Server::open(index_dir)?;
    server.serve(io::stdin().lock(), io::stdout().lock())
}

#[cfg(test)]
mod tests {
    use super::*;
    use logs_driver::time::parse_rfc3339_millis;
    use tantivy::indexer::IndexWriterOptions;
    use tantivy::{IndexWriter, TantivyDocument};

    /// Six events over three minutes, two segments (committed in two batches), index sorted.
    fn small_index() -> anyhow::Result<Index> {
        let index = Index::builder()
            .schema(schema::build())
            .settings(schema::settings())
            .create_in_ram()?;
        schema::register_tokenizers(&index);
        let fields = Fields::of(&index.schema())?;
        let field = |name| fields.get(name).expect("schema field");
        let mut writer: IndexWriter = index.writer_with_options(
            IndexWriterOptions::builder()
                .num_worker_threads(1)
                .memory_budget_per_thread(15_000_000)
                .build(),
        )?;
        type Event<'a> = (
            &'a str,
            &'a str,
            &'a str,
            &'a str,
            Option<(i64, i64, &'a str)>,
        );
        let batches: [&[Event]; 2] = [
            &[
                // time, service, level, message, (status, latency_ms, client_ip)
                (
                    "2026-11-01T00:00:10.000Z",
                    "nginx",
                    "INFO",
                    "GET /api/login done",
                    Some((200, 10, "10.0.0.1")),
                ),
                (
                    "2026-11-01T00:00:59.999Z",
                    "nginx",
                    "ERROR",
                    "upstream error timeout",
                    Some((503, 3000, "10.0.0.2")),
                ),
                (
                    "2026-11-01T00:01:00.000Z",
                    "hdfs",
                    "WARN",
                    "Receiving block blk_1 src",
                    None,
                ),
            ],
            &[
                (
                    "2026-11-01T00:02:30.500Z",
                    "nginx",
                    "ERROR",
                    "Error again",
                    Some((503, 1500, "10.0.0.2")),
                ),
                (
                    "2026-11-01T00:02:31.000Z",
                    "NGINX",
                    "INFO",
                    "fine",
                    Some((200, 20, "10.0.0.1")),
                ),
                (
                    "2026-11-01T00:00:05.000Z",
                    "hdfs",
                    "ERROR",
                    "disk error",
                    None,
                ),
            ],
        ];
        for batch in batches {
            for (time, service, level, message, request) in batch {
                let mut document = TantivyDocument::new();
                let millis = parse_rfc3339_millis(time).expect("test timestamps are valid");
                document.add_date(field(TIME), DateTime::from_timestamp_millis(millis));
                document.add_text(field("service"), service);
                document.add_text(field("level"), level);
                document.add_text(field("message"), message);
                if let Some((status, latency_ms, client_ip)) = request {
                    document.add_i64(field("status"), *status);
                    document.add_i64(field("latency_ms"), *latency_ms);
                    document.add_text(field("client_ip"), client_ip);
                    document.add_text(field("path"), "/api/login");
                }
                writer.add_document(document)?;
            }
            writer.commit()?;
        }
        writer.wait_merging_threads()?;
        Ok(index)
    }

    #[test]
    fn answers_requests() -> anyhow::Result<()> {
        let server = Server::new(small_index()?)?;
        let t = |text| parse_rfc3339_millis(text).expect("valid");
        let t0 = t("2026-11-01T00:00:00Z");
        let minute = t0 / 60_000;
        let cases: Vec<(String, String)> = vec![
            ("COUNT\t*".into(), "6".into()),
            ("COUNT\terror".into(), "3".into()),
            ("COUNT\tERROR".into(), "3".into()),
            ("COUNT\tlevel:error".into(), "3".into()),
            ("COUNT\tservice:nginx".into(), "4".into()),
            ("COUNT\tservice:nginx AND status:503".into(), "2".into()),
            ("COUNT\tpath:login".into(), "4".into()),
            ("COUNT\tpath:/api/login".into(), "4".into()),
            ("COUNT\tlatency_ms:[1000 TO 30000]".into(), "2".into()),
            ("COUNT\tblk_1".into(), "1".into()),
            ("COUNT\tnothing".into(), "0".into()),
            (
                format!("COUNT\t_time:[{} TO {}]", t0, t0 + 60_000),
                "4".into(),
            ),
            (
                format!("COUNT\t_time:{}", t("2026-11-01T00:02:30.500Z")),
                "1".into(),
            ),
            (
                "TAIL\t2\terror".into(),
                format!(
                    "2 {} {}",
                    t("2026-11-01T00:02:30.500Z"),
                    t("2026-11-01T00:00:59.999Z")
                ),
            ),
            (
                "HEAD\t10\terror".into(),
                format!(
                    "3 {} {}",
                    t("2026-11-01T00:00:05Z"),
                    t("2026-11-01T00:02:30.500Z")
                ),
            ),
            ("TAIL\t5\tnothing".into(), "0".into()),
            // TAILEV digests (answer::field_digest) leave out the events of the last
            // millisecond. 00:02:30.500: nginx 6, ERROR 6, "Error again" 12, 503 504,
            // 1500 1501, 10.0.0.2 9, /api/login 11.
            (
                "TAILEV\t2\terror".into(),
                format!(
                    "2 {} {} 2049",
                    t("2026-11-01T00:02:30.500Z"),
                    t("2026-11-01T00:00:59.999Z")
                ),
            ),
            // + 00:00:59.999: 6 + 6 + "upstream error timeout" 23 + 504 + 3000 3001 + 9 + 11.
            (
                "TAILEV\t10\terror".into(),
                format!(
                    "3 {} {} {}",
                    t("2026-11-01T00:02:30.500Z"),
                    t("2026-11-01T00:00:05Z"),
                    2049 + 3560
                ),
            ),
            ("TAILEV\t5\tnothing".into(), "0".into()),
            ("TAILEV\t0\t*".into(), "ERROR".into()),
            (
                "HISTOGRAM\t60\t*".into(),
                // Buckets: minute 0 (3 events), 1 (1), 2 (2).
                format!(
                    "3 6 {}",
                    (minute * 60 * 3 + (minute + 1) * 60 + (minute + 2) * 60 * 2)
                ),
            ),
            ("HISTOGRAM\t3600\tnothing".into(), "0 0 0".into()),
            (
                "TERMS\tclient_ip\t10\t*".into(),
                "10.0.0.1=2 10.0.0.2=2".into(),
            ),
            ("TERMS\tlevel\t1\t*".into(), "error=3".into()),
            ("TERMS\tservice\t5\t*".into(), "nginx=4 hdfs=2".into()),
            ("TERMS\tclient_ip\t5\tnothing".into(), "".into()),
            ("STATS\tlatency_ms\t*".into(), "4 10 3000 4530".into()),
            ("STATS\tlatency_ms\tservice:hdfs".into(), "0".into()),
            ("PERCENTILES\tlatency_ms\tservice:hdfs".into(), "0".into()),
            ("TOP_10\terror".into(), "UNSUPPORTED".into()),
            ("COUNT\tbad:field".into(), "ERROR".into()),
            ("TAIL\t0\t*".into(), "ERROR".into()),
        ];
        for (request, expected) in cases {
            assert_eq!(server.answer(&request), expected, "{request:?}");
        }
        // DDSketch takes the value of rank floor(q * (n - 1)) (0-based), here rank 0 of
        // [1500, 3000] for all three, and returns it within its relative error.
        let percentiles = server.answer("PERCENTILES\tlatency_ms\tstatus:503");
        let values: Vec<f64> = percentiles
            .split(' ')
            .map(|v| v.parse().expect("numbers"))
            .collect();
        for (got, exact) in values.iter().zip([1500.0, 1500.0, 1500.0]) {
            assert!((got - exact).abs() <= exact * 0.02, "{percentiles}");
        }
        Ok(())
    }

    #[test]
    fn writes_events_as_json() -> anyhow::Result<()> {
        let server = Server::new(small_index()?)?;
        assert!(server.answer("TAILEV\t1\tfine").starts_with("1 "));
        let json = server.event_json.borrow();
        let event: serde_json::Value = serde_json::from_slice(&json)?;
        assert_eq!(
            event,
            json!({
                "_time": "2026-11-01T00:02:31.000Z",
                "service": "NGINX",
                "level": "INFO",
                "message": "fine",
                "status": 200,
                "latency_ms": 20,
                "client_ip": "10.0.0.1",
                "path": "/api/login",
            })
        );
        Ok(())
    }

    #[test]
    fn serves_lines() -> anyhow::Result<()> {
        let server = Server::new(small_index()?)?;
        let mut output = Vec::new();
        server.serve(
            &b"COUNT\t*\nNOPE\r\nCOUNT\twarn\nCOUNT\t\xff\nCOUNT\tfine"[..],
            &mut output,
        )?;
        // Every answer line ends with an engine time.
        let output = String::from_utf8(output)?;
        let lines: Vec<(&str, Option<u64>)> = output
            .lines()
            .map(|line| {
                let (answer, nanos) = answer::split_engine_time(line);
                assert!(nanos.is_some(), "no engine time in {line:?}");
                (answer, nanos)
            })
            .collect();
        let answers: Vec<&str> = lines.iter().map(|(answer, _)| *answer).collect();
        assert_eq!(answers, ["6", "UNSUPPORTED", "0", "0", "1"]);
        Ok(())
    }
}
