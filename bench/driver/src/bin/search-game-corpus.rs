//! `search-game-corpus`: turns the Wikipedia articles into the search-benchmark-game's corpus
//! shape.
//!
//! ```text
//! search-game-corpus [--articles N] INPUT.json.zst OUTPUT.json.zst
//! ```
//!
//! Reads `{"url","title","body"}` JSON lines (zstd-compressed) and writes one
//! `{"id": url, "text": title + "\n" + body}` line per article, zstd-compressed (level 3), the
//! shape all three engines index in `run-search-game.sh`. `--articles N` keeps the first N only.
//! Prints `{"docs":N,"input_bytes":B,"output_bytes":O}` on stdout (uncompressed sizes).

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use serde::{Deserialize, Serialize};

#[derive(Parser)]
#[command(about = "Wikipedia articles to the search-benchmark-game's {\"id\",\"text\"} corpus")]
struct Args {
    /// Keep only the first N articles
    #[arg(long)]
    articles: Option<usize>,
    /// `{"url","title","body"}` JSON lines, zstd-compressed
    input: PathBuf,
    /// Where the `{"id","text"}` JSON lines go, zstd-compressed
    output: PathBuf,
}

#[derive(Deserialize)]
struct Article<'a> {
    // Borrowed when the JSON string has no escapes, copied otherwise.
    #[serde(borrow)]
    url: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    title: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    body: std::borrow::Cow<'a, str>,
}

#[derive(Serialize)]
struct GameDocument<'a> {
    id: &'a str,
    text: &'a str,
}

/// What goes to `output` for one article line (a line break included).
fn convert(json: &str, text: &mut String, out: &mut Vec<u8>) -> serde_json::Result<()> {
    let article: Article = serde_json::from_str(json)?;
    text.clear();
    text.push_str(&article.title);
    text.push('\n');
    text.push_str(&article.body);
    serde_json::to_writer(
        &mut *out,
        &GameDocument {
            id: &article.url,
            text,
        },
    )?;
    out.push(b'\n');
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let file =
        File::open(&args.input).with_context(|| format!("opening {}", args.input.display()))?;
    let mut lines = BufReader::with_capacity(1 << 20, zstd::Decoder::new(file)?);
    let output = File::create(&args.output)
        .with_context(|| format!("creating {}", args.output.display()))?;
    let mut encoder = zstd::Encoder::new(BufWriter::with_capacity(1 << 20, output), 3)?;
    let (mut line, mut text, mut out) = (String::new(), String::new(), Vec::new());
    let (mut docs, mut input_bytes, mut output_bytes) = (0usize, 0u64, 0u64);
    for line_number in 1.. {
        if args.articles.is_some_and(|limit| docs >= limit) {
            break;
        }
        line.clear();
        let read = lines
            .read_line(&mut line)
            .with_context(|| format!("reading {} line {line_number}", args.input.display()))?;
        if read == 0 {
            break;
        }
        input_bytes += read as u64;
        let json = line.trim_end();
        if json.is_empty() {
            continue;
        }
        out.clear();
        convert(json, &mut text, &mut out)
            .with_context(|| format!("{} line {line_number}", args.input.display()))?;
        encoder.write_all(&out)?;
        output_bytes += out.len() as u64;
        docs += 1;
    }
    // Flushes the last frame, then the buffer.
    encoder
        .finish()?
        .into_inner()
        .map_err(|error| error.into_error())?;
    println!(
        "{}",
        serde_json::json!({"docs": docs, "input_bytes": input_bytes, "output_bytes": output_bytes})
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_an_article() -> anyhow::Result<()> {
        let (mut text, mut out) = (String::new(), Vec::new());
        let line = r#"{"url":"https://en.wikipedia.org/wiki?curid=12","title":"Anarchism","body":"Anarchism is a \"political\" philosophy","extra":1}"#;
        convert(line, &mut text, &mut out)?;
        assert_eq!(
            String::from_utf8(out)?,
            "{\"id\":\"https://en.wikipedia.org/wiki?curid=12\",\"text\":\"Anarchism\\nAnarchism is a \\\"political\\\" philosophy\"}\n"
        );
        assert!(convert(r#"{"url":"u","title":"t"}"#, &mut text, &mut Vec::new()).is_err());
        Ok(())
    }
}
