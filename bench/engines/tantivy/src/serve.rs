//! `tantivy-bench serve`: answers search requests on stdin, one line each, in the protocol of the
//! search-benchmark-game (quickwit-oss/search-benchmark-game).
//!
//! A request is `COMMAND\tquery`; the answer is one line, flushed at once:
//!
//! | command          | work                                   | answer        |
//! |------------------|----------------------------------------|---------------|
//! | `COUNT`          | count the matches                      | the count     |
//! | `TOP_k`          | the k best matches by BM25             | `1`           |
//! | `TOP_k_COUNT`    | the k best matches and the count       | the count     |
//! | anything else    | none                                   | `UNSUPPORTED` |
//!
//! A query the parser rejects, or a request with no tab, is answered `ERROR`. Queries are in
//! Lucene syntax over `url`, `title` and `body` (over `text` in an index of the game's schema,
//! [`schema::searched_fields`]), terms joined by OR unless marked `+`.
//!
//! With one thread (the default, used for latency), each request is searched on the thread that
//! reads it, one at a time. With `--threads N`, N > 1 (for throughput), the reading thread hands
//! each request to a work-stealing pool of N search threads (rayon) and every answer line becomes
//! `ID\tanswer`, ID the request's 0-based line number, written as soon as it is ready: answers
//! come in completion order, not request order.

use std::io::{self, BufRead, Write};
use std::path::Path;
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use anyhow::Context;
use quarry_index::analysis::Analyzer;

use tantivy::collector::{Count, TopDocs};
use tantivy::query::{Query, QueryParser};
use tantivy::{Index, ReloadPolicy, Searcher};

use crate::multiterm;
use crate::schema::{self, Fields};

/// How requests are read and answered.
#[derive(Clone, Copy, Debug, Default)]
pub struct ServeOptions {
    /// Read queries with [`multiterm::build`] (fuzzy, regex, leading wildcards, slop, string
    /// ranges) instead of tantivy's `QueryParser`.
    pub multiterm: bool,
    /// End each answer with `<TAB>NANOS`, the time spent on the request from just after it was
    /// read to just after its answer was formatted (bench/logs/PROTOCOL.md, "Engine time").
    /// One search thread only: the pool's `ID<TAB>answer` lines carry none.
    pub engine_time: bool,
}

/// What turns a query text into a tantivy query.
enum Reader {
    Tantivy(QueryParser),
    Multiterm(Fields, Analyzer),
}

impl Reader {
    fn parse(&self, text: &str) -> Option<Box<dyn Query>> {
        match self {
            Reader::Tantivy(parser) => parser.parse_query(text).ok(),
            Reader::Multiterm(fields, analyzer) => multiterm::build(text, fields, analyzer).ok(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Command {
    Count,
    Top { k: usize, count: bool },
}

impl Command {
    fn parse(command: &str) -> Option<Command> {
        if command == "COUNT" {
            return Some(Command::Count);
        }
        let rest = command.strip_prefix("TOP_")?;
        let (k, count) = match rest.strip_suffix("_COUNT") {
            Some(k) => (k, true),
            None => (rest, false),
        };
        // Only plain decimal digits: `usize::from_str` would also take a leading `+`.
        if k.is_empty() || !k.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        match k.parse() {
            Ok(k) if k > 0 => Some(Command::Top { k, count }),
            _ => None,
        }
    }
}

pub fn run(index_dir: &Path, threads: usize, options: ServeOptions) -> anyhow::Result<()> {
    anyhow::ensure!(threads >= 1, "--threads must be at least 1");
    let index = Index::open_in_dir(index_dir)?;
    schema::register_tokenizer(&index);
    let index_schema = index.schema();
    let reader = index
        .reader_builder()
        .reload_policy(ReloadPolicy::Manual)
        .try_into()?;
    let searcher = reader.searcher();
    let parser = if options.multiterm {
        let fields = Fields::of(&index_schema)
            .context("--multiterm reads the wiki schema's url, title and body")?;
        Reader::Multiterm(fields, Analyzer::default())
    } else {
        Reader::Tantivy(QueryParser::for_index(
            &index,
            schema::searched_fields(&index_schema)?,
        ))
    };

    let mut input = io::stdin().lock();
    if threads > 1 {
        return serve_pool(&searcher, &parser, threads, input, io::stdout());
    }
    let mut output = io::stdout().lock();
    let mut request = String::new();
    loop {
        request.clear();
        if input.read_line(&mut request)? == 0 {
            return Ok(());
        }
        let started = Instant::now();
        let answer = answer(&searcher, &parser, request.trim_end_matches(['\n', '\r']))?;
        if options.engine_time {
            writeln!(output, "{answer}\t{}", started.elapsed().as_nanos())?;
        } else {
            writeln!(output, "{answer}")?;
        }
        output.flush()?;
    }
}

/// Reads requests from `input` on this thread and answers them on a pool of `threads` search
/// threads, each answer written to `output` as `ID\tanswer` under a lock and flushed. Returns
/// once every request read is answered; the first search or write error stops the reading and
/// is returned.
fn serve_pool(
    searcher: &Searcher,
    parser: &Reader,
    threads: usize,
    mut input: impl BufRead,
    output: impl Write + Send,
) -> anyhow::Result<()> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|index| format!("search-{index}"))
        .build()?;
    let output = Mutex::new(output);
    let failure: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    let failed = || {
        failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    };
    // In place: the reading loop stays on this thread, so all `threads` pool threads search;
    // the scope returns once every spawned request is answered.
    pool.in_place_scope(|scope| -> anyhow::Result<()> {
        for id in 0usize.. {
            let mut request = String::new();
            if input.read_line(&mut request)? == 0 || failed() {
                return Ok(());
            }
            let (output, failure) = (&output, &failure);
            scope.spawn(move |_| {
                let written = answer(searcher, parser, request.trim_end_matches(['\n', '\r']))
                    .map_err(anyhow::Error::from)
                    .and_then(|answer| {
                        let mut output = output.lock().unwrap_or_else(PoisonError::into_inner);
                        writeln!(output, "{id}\t{answer}")?;
                        output.flush()?;
                        Ok(())
                    });
                if let Err(error) = written {
                    failure
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .get_or_insert(error);
                }
            });
        }
        Ok(())
    })?;
    match failure.into_inner().unwrap_or_else(PoisonError::into_inner) {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

fn answer(searcher: &Searcher, parser: &Reader, request: &str) -> tantivy::Result<String> {
    let Some((command, query)) = request.split_once('\t') else {
        return Ok("ERROR".to_owned());
    };
    let Some(command) = Command::parse(command) else {
        return Ok("UNSUPPORTED".to_owned());
    };
    let Some(query) = parser.parse(query) else {
        return Ok("ERROR".to_owned());
    };
    Ok(match command {
        Command::Count => searcher.search(&query, &Count)?.to_string(),
        Command::Top { k, count: false } => {
            let top = searcher.search(&query, &TopDocs::with_limit(k).order_by_score())?;
            // The hits are computed; the protocol only wants proof of work, not the documents.
            std::hint::black_box(top);
            "1".to_owned()
        }
        Command::Top { k, count: true } => {
            let (top, count) =
                searcher.search(&query, &(TopDocs::with_limit(k).order_by_score(), Count))?;
            std::hint::black_box(top);
            count.to_string()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::IndexWriter;
    use tantivy::TantivyDocument;

    #[test]
    fn parses_commands() {
        let cases: &[(&str, Option<Command>)] = &[
            ("COUNT", Some(Command::Count)),
            (
                "TOP_10",
                Some(Command::Top {
                    k: 10,
                    count: false,
                }),
            ),
            (
                "TOP_1000",
                Some(Command::Top {
                    k: 1000,
                    count: false,
                }),
            ),
            (
                "TOP_100_COUNT",
                Some(Command::Top {
                    k: 100,
                    count: true,
                }),
            ),
            ("TOP_0", None),
            ("TOP_", None),
            ("TOP_+5", None),
            ("TOP__COUNT", None),
            ("top_10", None),
            ("COUNTS", None),
            ("", None),
        ];
        for (text, expected) in cases {
            assert_eq!(Command::parse(text), *expected, "{text:?}");
        }
    }

    /// Three articles in memory, and a parser over their fields.
    fn small_index() -> anyhow::Result<(Searcher, Reader)> {
        let (tantivy_schema, fields) = schema::build();
        let index = Index::create_in_ram(tantivy_schema);
        schema::register_tokenizer(&index);
        let mut writer: IndexWriter = index.writer_with_num_threads(1, 15_000_000)?;
        for (url, title, body) in [
            ("u1", "Quick Fox", "the quick brown fox jumps"),
            ("u2", "Lazy dog", "the lazy dog sleeps; a fox watches"),
            ("u3", "Nothing", "unrelated text, don't look"),
        ] {
            let mut document = TantivyDocument::new();
            document.add_text(fields.url, url);
            document.add_text(fields.title, title);
            document.add_text(fields.body, body);
            writer.add_document(document)?;
        }
        writer.commit()?;
        let searcher = index.reader()?.searcher();
        let parser = QueryParser::for_index(&index, vec![fields.url, fields.title, fields.body]);
        Ok((searcher, Reader::Tantivy(parser)))
    }

    #[test]
    fn answers_requests_over_a_small_index() -> anyhow::Result<()> {
        let (searcher, parser) = small_index()?;
        let cases = [
            ("COUNT\tfox", "2"),
            ("COUNT\tFOX dog", "2"),
            ("COUNT\t+fox +dog", "1"),
            ("COUNT\tfox -lazy", "1"),
            ("COUNT\t\"quick brown\"", "1"),
            ("COUNT\t\"brown quick\"", "0"),
            ("COUNT\t\"don't look\"", "1"),
            // tantivy's grammar reads a quote as the start of a phrase, even inside a word.
            ("COUNT\tdon't", "ERROR"),
            ("TOP_10\tfox", "1"),
            ("TOP_10_COUNT\tfox", "2"),
            ("COUNT\t\"unbalanced", "ERROR"),
            ("no tab", "ERROR"),
            ("SORT\tfox", "UNSUPPORTED"),
        ];
        for (request, expected) in cases {
            assert_eq!(
                answer(&searcher, &parser, request)?,
                expected,
                "{request:?}"
            );
        }
        Ok(())
    }

    /// The game's schema: `id` stored and not searched, `text` searched; the query shapes of
    /// bench/game/queries.tsv.
    #[test]
    fn answers_requests_over_a_game_index() -> anyhow::Result<()> {
        let (tantivy_schema, fields) = schema::build_game();
        let index = Index::create_in_ram(tantivy_schema);
        schema::register_tokenizer(&index);
        let mut writer: IndexWriter = index.writer_with_num_threads(1, 15_000_000)?;
        for (id, text) in [
            ("u1", "Hamlet\nTo be, or not to be, that is the question"),
            (
                "u2",
                "The Who\nThe Who are an English rock band from the UK",
            ),
            ("u3", "Doctor Who\nA programme about the Who, from the UK"),
        ] {
            let mut document = TantivyDocument::new();
            document.add_text(fields.id, id);
            document.add_text(fields.text, text);
            writer.add_document(document)?;
        }
        writer.commit()?;
        let searcher = index.reader()?.searcher();
        let parser = QueryParser::for_index(&index, schema::searched_fields(&index.schema())?);
        let parser = Reader::Tantivy(parser);
        let cases = [
            ("COUNT\tthe", "3"),
            ("COUNT\t+who +uk", "2"),
            ("COUNT\tband hamlet", "2"),
            ("COUNT\t+uk -english", "1"),
            ("COUNT\t\"to be or not to be\"", "1"),
            ("COUNT\t\"the who\"", "2"),
            ("COUNT\t+\"the who\" +uk", "2"),
            ("COUNT\t+\"the who\" +band", "1"),
            // The title and the body are one text: a phrase may span them.
            ("COUNT\t\"hamlet to be\"", "1"),
            // `id` is stored, not indexed: bare words do not search it.
            ("COUNT\tu1", "0"),
            ("TOP_10_COUNT\t\"the who\"", "2"),
        ];
        for (request, expected) in cases {
            assert_eq!(
                answer(&searcher, &parser, request)?,
                expected,
                "{request:?}"
            );
        }
        Ok(())
    }

    #[test]
    fn multiterm_reader_answers_patterns() -> anyhow::Result<()> {
        let (searcher, _) = small_index()?;
        let fields = Fields::of(searcher.schema())?;
        let reader = Reader::Multiterm(fields, Analyzer::default());
        let cases = [
            ("COUNT\tqui*", "1"),
            ("COUNT\t*ox", "2"),
            ("COUNT\tf?x", "2"),
            ("COUNT\t*az*", "1"),
            ("COUNT\tfxo~1", "2"),
            ("COUNT\tfxo~0", "0"),
            ("COUNT\tlzay~1", "1"),
            ("COUNT\tsleepz~2", "1"),
            ("COUNT\t/sl(e+)ps/", "1"),
            ("COUNT\t\"quick fox\"~1", "1"),
            // Title terms: dog, fox, lazy, nothing, quick.
            ("COUNT\ttitle:[lazy TO quick]", "3"),
            ("COUNT\ttitle:{lazy TO quick}", "1"),
            ("COUNT\t+fo* -lazy", "1"),
            ("COUNT\tnope:x", "ERROR"),
            ("COUNT\tx~3", "ERROR"),
        ];
        for (request, expected) in cases {
            assert_eq!(
                answer(&searcher, &reader, request)?,
                expected,
                "{request:?}"
            );
        }
        Ok(())
    }

    /// Every request answered once, tagged with its line number, whatever the order.
    #[test]
    fn pool_tags_each_answer_with_its_request_line() -> anyhow::Result<()> {
        let (searcher, parser) = small_index()?;
        let kinds = [
            ("COUNT\tfox", "2"),
            ("COUNT\t+fox +dog", "1"),
            ("TOP_10\tfox", "1"),
            ("no tab", "ERROR"),
            ("SORT\tfox", "UNSUPPORTED"),
        ];
        let requests: Vec<(&str, &str)> = (0..200).map(|i| kinds[i % kinds.len()]).collect();
        let input: String = requests.iter().map(|(r, _)| format!("{r}\n")).collect();
        let mut output = Vec::new();
        serve_pool(&searcher, &parser, 3, input.as_bytes(), &mut output)?;
        let mut answers = vec![None; requests.len()];
        for line in String::from_utf8(output)?.lines() {
            let (id, answer) = line.split_once('\t').expect("an ID, a tab, an answer");
            let id: usize = id.parse()?;
            assert!(answers[id].is_none(), "request {id} answered twice");
            answers[id] = Some(answer.to_owned());
        }
        for (id, (request, expected)) in requests.iter().enumerate() {
            assert_eq!(answers[id].as_deref(), Some(*expected), "{id}: {request:?}");
        }
        Ok(())
    }
}
