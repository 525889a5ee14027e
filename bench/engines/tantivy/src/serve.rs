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
//! Lucene syntax over `title` and `body`, terms joined by OR unless marked `+`. Search runs on
//! the calling thread only.

use std::io::{self, BufRead, Write};
use std::path::Path;

use tantivy::collector::{Count, TopDocs};
use tantivy::query::{Query, QueryParser};
use tantivy::{Index, ReloadPolicy, Searcher};

use crate::schema::{self, Fields};

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

pub fn run(index_dir: &Path) -> anyhow::Result<()> {
    let index = Index::open_in_dir(index_dir)?;
    schema::register_tokenizer(&index);
    let fields = Fields::of(&index.schema())?;
    let reader = index
        .reader_builder()
        .reload_policy(ReloadPolicy::Manual)
        .try_into()?;
    let searcher = reader.searcher();
    let parser = QueryParser::for_index(&index, vec![fields.url, fields.title, fields.body]);

    let mut input = io::stdin().lock();
    let mut output = io::stdout().lock();
    let mut request = String::new();
    loop {
        request.clear();
        if input.read_line(&mut request)? == 0 {
            return Ok(());
        }
        let answer = answer(&searcher, &parser, request.trim_end_matches(['\n', '\r']))?;
        writeln!(output, "{answer}")?;
        output.flush()?;
    }
}

fn answer(searcher: &Searcher, parser: &QueryParser, request: &str) -> tantivy::Result<String> {
    let Some((command, query)) = request.split_once('\t') else {
        return Ok("ERROR".to_owned());
    };
    let Some(command) = Command::parse(command) else {
        return Ok("UNSUPPORTED".to_owned());
    };
    let query: Box<dyn Query> = match parser.parse_query(query) {
        Ok(query) => query,
        Err(_) => return Ok("ERROR".to_owned()),
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

    #[test]
    fn answers_requests_over_a_small_index() -> anyhow::Result<()> {
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
}
