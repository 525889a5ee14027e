use crate::cli_client::TenantArgs;
use crate::size::parse_size;
use crate::{DataArgs, StorageArgs};
use anyhow::{Context, Result};
use quarry_format::column::ChunkCache;
use quarry_index::event::format_time;
use quarry_query::aggregation::AggSpec;
use quarry_query::cursor::Cursor;
use quarry_query::field_sort::{SortCursor, SortSpec};
use quarry_query::filter::Optimizations;
use quarry_query::time::{now_nanos, parse_interval, parse_time};
use quarry_query::{HistogramInterval, QueryError, SearchRequest, Searcher, SortOrder};
use quarry_server::response_json;
use quarry_store::{BlockEntry, Catalog, Settings};
use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

#[derive(clap::Args, Debug)]
pub struct SearchArgs {
    #[command(flatten)]
    data: DataArgs,
    #[command(flatten)]
    storage: StorageArgs,
    /// Hits to print (0 for none, e.g. with --histogram or --agg)
    #[arg(long, default_value_t = 10)]
    limit: usize,
    /// Also print the exact number of matches, as a line `{"count": N}`
    #[arg(long)]
    count: bool,
    /// Order of hits: relevance (BM25, best first), time-desc (alias time_desc: newest
    /// first, a tail), time-asc (a head), or FIELD:desc / FIELD:asc (by a field's value:
    /// numbers, then strings; events without the field last)
    #[arg(long, default_value = "relevance", value_parser = sort_spec)]
    sort: SortSpec,
    /// Only events at or after this time: RFC 3339, a date, epoch seconds or ms, or relative
    /// to now (now-15m, now-1d)
    #[arg(long)]
    start: Option<String>,
    /// Only events before this time (same forms as --start)
    #[arg(long)]
    end: Option<String>,
    /// With a time sort, continue after this cursor (the `_cursor` of the last hit printed)
    #[arg(long, value_name = "CURSOR")]
    after: Option<String>,
    /// Print counts per time bucket as `{"histogram": [{"start": RFC3339, "count": N}, ...]}`;
    /// INTERVAL is 30s, 1m, 1h, 1d..., or `auto` for about 100 buckets
    #[arg(long, value_name = "INTERVAL")]
    histogram: Option<String>,
    /// Aggregate over all matches, printed as one line `{"aggregations": {...}}`: count,
    /// terms(field, N), min|max|sum|avg|stats(field), percentiles(field[, p...]) (exact over
    /// up to 65,536 distinct integers, else DDSketch with 1% relative error), cardinality(field) (HyperLogLog++, ~0.8% error). Repeatable; with
    /// --histogram, computed per bucket
    #[arg(long = "agg", value_name = "AGG")]
    aggs: Vec<String>,
    /// Turn an optimization off (answers stay the same; for measuring): time-index,
    /// reverse-search, endpoint-histogram, skipping, range-index, expansion-cache, ngram-index or all.
    /// Repeatable
    #[arg(long, value_name = "OPTIMIZATION")]
    disable: Vec<String>,
    /// Ask this server (`quarry serve`) instead of reading --data:
    /// `GET /api/v1/{tenant}/search`, printed the same way
    #[arg(long, env = "QUARRY_SERVER", value_name = "URL")]
    server: Option<String>,
    #[command(flatten)]
    tenant: TenantArgs,
    /// The query
    query: String,
}

#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    #[command(flatten)]
    data: DataArgs,
    #[command(flatten)]
    storage: StorageArgs,
    /// Also print where the bytes go: by kind of section, and by field (columns, doc values,
    /// norms, and the field's term infos, postings and positions)
    #[arg(long)]
    sizes: bool,
    /// Move damaged blocks to DIR/damaged/ and out of the catalog, after listing what they
    /// hold, so the directory is healthy again (their events are lost from it)
    #[arg(long)]
    repair: bool,
}

#[derive(clap::Args, Debug)]
pub struct BenchServeArgs {
    #[command(flatten)]
    data: DataArgs,
    #[command(flatten)]
    storage: StorageArgs,
    /// Search threads. With 1, each request is answered in turn on the thread that reads
    /// them. With N > 1, requests run on a work-stealing pool of N threads and each answer is
    /// `ID<TAB>answer`, ID being the request's 0-based line number, in completion order
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Answer the log benchmark's requests (TAIL, HEAD, HISTOGRAM, TERMS, PERCENTILES, STATS,
    /// COUNT) in its filter language, as bench/logs/PROTOCOL.md defines them
    #[arg(long)]
    logs: bool,
    /// Append the engine's own time to each answer as `\tNANOS` (always on with --logs), as
    /// the multi-term benchmark's peers do with their --engine-time
    #[arg(long)]
    engine_time: bool,
    /// Turn an optimization off, as `search --disable` (for the ablation benchmark):
    /// time-index, reverse-search, endpoint-histogram, skipping, range-index, expansion-cache,
    /// ngram-index or all
    #[arg(long, value_name = "OPTIMIZATION")]
    disable: Vec<String>,
    /// Memory for decoded column chunks kept across requests, as `serve --cache-size`;
    /// 0 keeps none, so every request decodes what it fetches
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value = "128MB")]
    cache_size: usize,
}

fn open(data: &DataArgs, storage: &StorageArgs) -> Result<Searcher> {
    let store = storage.store(&data.data)?;
    let (settings, entries) = storage
        .metastore()?
        .read_catalog(&data.data, quarry_server::DEFAULT_TENANT)
        .with_context(|| data_dir_context(&data.data))?;
    Ok(Searcher::open_entries(&settings, &entries, &*store))
}

/// Prints a query error with a caret under its position (a byte offset in `text`); exit
/// status 2.
fn report_bad_query(text: &str, message: impl std::fmt::Display, position: usize) -> ExitCode {
    eprintln!("error: {message}");
    eprintln!("  {text}");
    // A position inside a character (from a server) counts that character.
    let column = text
        .char_indices()
        .take_while(|(i, _)| *i < position)
        .count();
    eprintln!("  {}^", " ".repeat(column));
    ExitCode::from(2)
}

fn usage_error(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(2)
}

pub fn search(args: SearchArgs) -> Result<ExitCode> {
    if let Some(server) = &args.server {
        return search_server(server, &args);
    }
    let mut searcher = open(&args.data, &args.storage)?;
    let optimizations = match Optimizations::without(&args.disable) {
        Ok(optimizations) => optimizations,
        Err(message) => return Ok(usage_error(message)),
    };
    searcher.set_optimizations(optimizations);
    let now = now_nanos();
    let mut bounds = (i64::MIN, i64::MAX);
    for (flag, text, slot) in [
        ("--start", &args.start, &mut bounds.0),
        ("--end", &args.end, &mut bounds.1),
    ] {
        if let Some(text) = text {
            match parse_time(text, now) {
                Ok(time) => *slot = time,
                Err(message) => return Ok(usage_error(format!("{flag}: {message}"))),
            }
        }
    }
    // Parsed once here for its errors; parsed again per attempt below, since leaving out a
    // damaged block can change the fields bare words search.
    match searcher.parse(&args.query) {
        Ok(_) => {}
        Err(QueryError::Parse(error)) => {
            return Ok(report_bad_query(
                &args.query,
                format_args!("bad query: {error}"),
                error.position,
            ))
        }
        Err(other) => return Err(other.into()),
    }
    let mut specs = Vec::new();
    for text in &args.aggs {
        match AggSpec::parse(text) {
            Ok(spec) => specs.push(spec),
            Err(message) => return Ok(usage_error(message)),
        }
    }
    let (sort, sort_field) = match &args.sort {
        SortSpec::Order(order) => (*order, None),
        SortSpec::Field(field) => (SortOrder::Relevance, Some(field.clone())),
    };
    let (mut after, mut sort_after) = (None, None);
    if let Some(text) = &args.after {
        let parsed = if sort_field.is_some() {
            SortCursor::parse(text).map(|c| sort_after = Some(c))
        } else {
            Cursor::parse(text).map(|c| after = Some(c))
        };
        if parsed.is_none() {
            return Ok(usage_error(format!("--after: bad cursor {text:?}")));
        }
    }
    if after.is_some() && sort == SortOrder::Relevance {
        return Ok(usage_error(
            "--after needs --sort time-desc, time-asc or FIELD:desc/asc",
        ));
    }
    let histogram = match args.histogram.as_deref() {
        None => None,
        Some("auto") => Some(HistogramInterval::Auto),
        Some(text) => match parse_interval(text) {
            Ok(interval) => Some(HistogramInterval::Fixed(interval)),
            Err(message) => return Ok(usage_error(format!("--histogram: {message}"))),
        },
    };
    let request = SearchRequest {
        query: args.query.clone(),
        ast: None,
        start: bounds.0,
        end: bounds.1,
        sort,
        sort_field,
        sort_after,
        limit: args.limit,
        after,
        count: args.count,
        histogram,
        aggregations: specs,
        tree: Vec::new(),
    };
    let response = searcher.execute(&request)?;
    print_answer(&response_json(&response))
}

fn sort_spec(text: &str) -> Result<SortSpec, String> {
    SortSpec::parse(text)
}

/// `search --server`: the same request as parameters of `GET /api/v1/{tenant}/search`, the
/// answer printed as a local one. The server checks the parameters (400, exit status 2).
fn search_server(server: &str, args: &SearchArgs) -> Result<ExitCode> {
    if !args.disable.is_empty() {
        return Ok(usage_error(
            "--disable works on a local data directory, not with --server",
        ));
    }
    let sort = match &args.sort {
        SortSpec::Order(SortOrder::Relevance) => "relevance".to_owned(),
        SortSpec::Order(SortOrder::TimeDesc) => "time_desc".to_owned(),
        SortSpec::Order(SortOrder::TimeAsc) => "time_asc".to_owned(),
        // `--sort` names one key (`SortSpec::parse`).
        SortSpec::Field(sort) => sort
            .keys
            .iter()
            .map(|key| {
                let direction = if key.descending { "desc" } else { "asc" };
                format!("{}:{direction}", key.field)
            })
            .collect::<Vec<_>>()
            .join(","),
    };
    let mut params = vec![
        ("query", args.query.clone()),
        ("limit", args.limit.to_string()),
        ("sort", sort),
    ];
    if args.count {
        params.push(("count", "true".to_owned()));
    }
    let optional = [
        ("start", &args.start),
        ("end", &args.end),
        ("search_after", &args.after),
        ("histogram", &args.histogram),
    ];
    for (key, value) in optional {
        if let Some(value) = value {
            params.push((key, value.clone()));
        }
    }
    for agg in &args.aggs {
        params.push(("aggs", agg.clone()));
    }
    let client = args.tenant.client(server);
    let answer = client.get(&args.tenant.path("search"), &params)?;
    if answer.status == 400 {
        let position = answer
            .json()
            .ok()
            .and_then(|body| body["position"].as_u64());
        return Ok(match position {
            Some(position) => report_bad_query(&args.query, answer.message(), position as usize),
            None => usage_error(answer.message()),
        });
    }
    print_answer(&client.success_json(answer)?)
}

/// Prints a search answer, the HTTP API's body (`quarry_server::response_json`), as the CLI's
/// JSON lines: one per hit, then the count, then the histogram or aggregations; its warnings on
/// stderr. Exit status 3 when it is partial (damaged blocks left out).
fn print_answer(body: &serde_json::Value) -> Result<ExitCode> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for hit in body["hits"].as_array().into_iter().flatten() {
        writeln!(out, "{hit}")?;
    }
    for key in ["count", "histogram", "aggregations"] {
        if let Some(value) = body.get(key) {
            writeln!(out, "{}", serde_json::json!({ key: value }))?;
        }
    }
    out.flush()?;
    let warnings = body["warnings"].as_array().map_or(&[][..], Vec::as_slice);
    for warning in warnings {
        eprintln!(
            "warning: {}",
            warning["message"].as_str().unwrap_or_default()
        );
    }
    if body["partial"] != true {
        return Ok(ExitCode::SUCCESS);
    }
    let count = |kind: &str| warnings.iter().filter(|w| w["kind"] == kind).count();
    let (damaged, unavailable) = (count("damaged_block"), count("block_unavailable"));
    if damaged > 0 {
        eprintln!(
            "warning: the answer is partial: {damaged} damaged block(s) left out (`quarry check` lists them, `quarry check --repair` moves them aside)"
        );
    }
    if unavailable > 0 {
        eprintln!(
            "warning: the answer is partial: {unavailable} block(s) could not be read now (not damaged: try again)"
        );
    }
    Ok(ExitCode::from(3))
}

pub fn check(args: CheckArgs) -> Result<ExitCode> {
    let dir = &args.data.data;
    let (_, entries) = args
        .storage
        .metastore()?
        .read_catalog(dir, quarry_server::DEFAULT_TENANT)
        .with_context(|| data_dir_context(dir))?;
    let mut damaged: Vec<(&BlockEntry, String)> = Vec::new();
    let mut readers = Vec::new();
    let store = args.storage.store(dir)?;
    for entry in &entries {
        let path = store.location(entry.id);
        match store
            .open(entry)
            .and_then(|block| block.verify().map(|()| block))
        {
            Ok(block) => {
                println!("ok {} ({} events)", path.display(), block.doc_count());
                readers.push(block);
            }
            Err(error) => {
                println!("FAILED {error}");
                damaged.push((entry, error.to_string()));
            }
        }
    }
    if args.sizes {
        crate::cli_sizes::print_sizes(&readers)?;
    }
    println!("{} blocks checked, {} failed", entries.len(), damaged.len());
    if damaged.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    let lost_events: u64 = damaged.iter().map(|(entry, _)| entry.docs).sum();
    if !args.repair {
        println!(
            "the damaged blocks hold {lost_events} events; searches leave them out; `quarry check --repair` moves them aside"
        );
        return Ok(ExitCode::from(1));
    }
    drop(readers);
    args.storage.require_local_metastore("check --repair")?;
    anyhow::ensure!(
        args.storage
            .storage
            .as_deref()
            .is_none_or(|url| url == "local"),
        "check --repair sets damaged block files aside in the data directory; with blocks in \
         object storage it is not supported yet (a block that failed to read over the network \
         may be whole)"
    );
    let mut catalog =
        Catalog::open_or_create(dir, Settings::default()).with_context(|| data_dir_context(dir))?;
    let ids: Vec<u64> = damaged.iter().map(|(entry, _)| entry.id).collect();
    for (entry, _) in &damaged {
        println!(
            "losing block {} ({} events from {} to {})",
            entry.id,
            entry.docs,
            format_time(entry.time_min),
            format_time(entry.time_max)
        );
    }
    for (id, moved) in catalog.set_aside_blocks(&ids)? {
        match moved {
            Some(path) => println!("moved block {id} to {}", path.display()),
            None => println!("dropped block {id} (its file was missing)"),
        }
    }
    println!(
        "repaired: {} damaged block(s) removed from the catalog, {lost_events} events lost; re-index their sources into a new data directory to recover them",
        ids.len()
    );
    Ok(ExitCode::SUCCESS)
}

fn data_dir_context(dir: &std::path::Path) -> String {
    if dir.join("catalog.json").exists() {
        format!("opening data directory {}", dir.display())
    } else {
        format!(
            "no data directory at {} (create one with `quarry index --data {} FILE`)",
            dir.display(),
            dir.display()
        )
    }
}

/// The search-benchmark-game protocol: `COMMAND\tquery` in, one line out per query.
pub fn bench_serve(args: BenchServeArgs) -> Result<ExitCode> {
    anyhow::ensure!(args.threads >= 1, "--threads must be at least 1");
    let cache = (args.cache_size > 0).then(|| Arc::new(ChunkCache::new(args.cache_size as u64)));
    let mut searcher = open(&args.data, &args.storage)?.with_chunk_cache(cache);
    let optimizations = Optimizations::without(&args.disable).map_err(anyhow::Error::msg)?;
    searcher.set_optimizations(optimizations);
    if args.threads > 1 {
        return bench_serve_pool(&searcher, args.threads, args.logs);
    }
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut bytes = Vec::new();
    let mut input = stdin.lock();
    loop {
        bytes.clear();
        if input.read_until(b'\n', &mut bytes)? == 0 {
            break;
        }
        let started = Instant::now();
        let answer = answer_request(&searcher, &bytes, args.logs);
        if args.logs || args.engine_time {
            // PROTOCOL.md: the engine's own time, so the driver can separate it from the pipe's.
            writeln!(out, "{answer}\t{}", started.elapsed().as_nanos())?;
        } else {
            writeln!(out, "{answer}")?;
        }
        out.flush()?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `bench-serve --threads N`, N > 1, for throughput: this thread only reads request lines and
/// hands each to a work-stealing pool of `threads` searchers (rayon; the `Searcher` is shared,
/// it is `Sync`). Each answer is written as `ID\tanswer`, ID the request's 0-based line number,
/// under stdout's lock and flushed as soon as it is ready, so answers come in completion order.
fn bench_serve_pool(searcher: &Searcher, threads: usize, logs: bool) -> Result<ExitCode> {
    use std::sync::{Mutex, PoisonError};
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|index| format!("bench-search-{index}"))
        .build()
        .context("starting the search threads")?;
    let stdout = std::io::stdout();
    // The first failed write (the reader went away): reading stops and it is returned.
    let write_error: Mutex<Option<std::io::Error>> = Mutex::new(None);
    let failed = || {
        write_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    };
    let mut input = std::io::stdin().lock();
    // In place: the reading loop stays on this thread, so all `threads` pool threads search;
    // the scope returns once every spawned request is answered.
    pool.in_place_scope(|scope| -> Result<()> {
        for id in 0usize.. {
            let mut bytes = Vec::new();
            if input.read_until(b'\n', &mut bytes)? == 0 || failed() {
                break;
            }
            let (stdout, write_error) = (&stdout, &write_error);
            scope.spawn(move |_| {
                let reply = format!("{id}\t{}\n", answer_request(searcher, &bytes, logs));
                let mut out = stdout.lock();
                if let Err(error) = out.write_all(reply.as_bytes()).and_then(|()| out.flush()) {
                    write_error
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .get_or_insert(error);
                }
            });
        }
        Ok(())
    })?;
    match write_error
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner)
    {
        Some(error) => Err(error).context("writing an answer"),
        None => Ok(ExitCode::SUCCESS),
    }
}

/// The answer to one request line, line break included or not.
fn answer_request(searcher: &Searcher, bytes: &[u8], logs: bool) -> String {
    // Real query logs hold stray non-UTF-8 bytes (the TREC set does); they become U+FFFD.
    let line = String::from_utf8_lossy(bytes);
    let line = line.trim_end_matches(['\n', '\r']);
    let (command, text) = line.split_once('\t').unwrap_or((line, ""));
    if logs {
        return crate::bench_logs::answer(searcher, command, text)
            .unwrap_or_else(|| "UNSUPPORTED".to_owned());
    }
    answer(searcher, command, text)
}

fn answer(searcher: &Searcher, command: &str, text: &str) -> String {
    let (k, count) = match command {
        "COUNT" => (0, true),
        "TOP_10" => (10, false),
        "TOP_100" => (100, false),
        "TOP_1000" => (1000, false),
        "TOP_10_COUNT" => (10, true),
        "TOP_100_COUNT" => (100, true),
        "TOP_1000_COUNT" => (1000, true),
        _ => return "UNSUPPORTED".to_owned(),
    };
    let query = match searcher.parse(text) {
        Ok(query) => query,
        Err(_) => return "ERROR".to_owned(),
    };
    let result = (|| -> Result<String, QueryError> {
        // The top k is computed even when only the count is printed (TOP_10_COUNT).
        match (k, count) {
            (0, _) => Ok(searcher.count(&query)?.to_string()),
            (k, true) => {
                let (hits, count) = searcher.top_k_count(&query, k)?;
                std::hint::black_box(&hits);
                Ok(count.to_string())
            }
            (k, false) => {
                std::hint::black_box(searcher.top_k(&query, k)?);
                Ok("1".to_owned())
            }
        }
    })();
    result.unwrap_or_else(|_| "ERROR".to_owned())
}
