//! Answers files: what `search-driver --answers FILE` writes after a latency run, one
//! `answer\tquery` line per query of the timed pass, in query order, so `diff` and `paste` show
//! where engines differ. A throughput run given the same file checks its answers against it.

use anyhow::{bail, Context};

/// The file's text for `answers[i]` to `queries[i]`.
pub fn format(answers: &[String], queries: &[String]) -> String {
    let mut text = String::new();
    for (answer, query) in answers.iter().zip(queries) {
        text.push_str(answer);
        text.push('\t');
        text.push_str(query);
        text.push('\n');
    }
    text
}

/// Checks that `answers` to `queries` are those of the answers file `text`: an error names the
/// number of differing answers and the first few.
pub fn compare(answers: &[String], queries: &[String], text: &str) -> anyhow::Result<()> {
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() != queries.len() {
        bail!(
            "the answers file has {} answers for {} queries",
            lines.len(),
            queries.len()
        );
    }
    let mut differing = Vec::new();
    for (number, ((line, answer), query)) in lines.iter().zip(answers).zip(queries).enumerate() {
        // An answer never holds a tab, a query may: the first tab separates them.
        let (expected, expected_query) = line
            .split_once('\t')
            .with_context(|| format!("line {} of the answers file has no tab", number + 1))?;
        if expected_query != query {
            bail!(
                "line {} of the answers file is for {expected_query:?}, not {query:?} \
                 (another --limit or --transform?)",
                number + 1
            );
        }
        if expected != answer {
            differing.push(format!("{query:?}: {answer}, was {expected}"));
        }
    }
    if !differing.is_empty() {
        bail!(
            "{} of {} answers differ from the answers file, e.g. {}",
            differing.len(),
            queries.len(),
            differing[..differing.len().min(3)].join("; ")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|&item| item.to_owned()).collect()
    }

    #[test]
    fn formats_one_line_per_query() {
        let text = format(&strings(&["5", "ERROR"]), &strings(&["a b", "\"c"]));
        assert_eq!(text, "5\ta b\nERROR\t\"c\n");
    }

    #[test]
    fn compares_with_an_answers_file() {
        let queries = strings(&["a b", "c"]);
        let file = "5\ta b\nERROR\tc\n";
        let cases: &[(&[&str], &str, Result<(), &str>)] = &[
            (&["5", "ERROR"], file, Ok(())),
            (
                &["4", "ERROR"],
                file,
                Err("1 of 2 answers differ from the answers file, e.g. \"a b\": 4, was 5"),
            ),
            (&["5", "ERROR"], "5\ta b\n", Err("the answers file has 1 answers for 2 queries")),
            (
                &["5", "ERROR"],
                "5\ta b\nERROR\td\n",
                Err("line 2 of the answers file is for \"d\", not \"c\" (another --limit or --transform?)"),
            ),
            (&["5", "ERROR"], "5\ta b\nERROR\n", Err("line 2 of the answers file has no tab")),
        ];
        for (answers, text, expected) in cases {
            let got = compare(&strings(answers), &queries, text).map_err(|error| error.to_string());
            assert_eq!(got, expected.map_err(str::to_owned), "{answers:?} {text:?}");
        }
    }
}
