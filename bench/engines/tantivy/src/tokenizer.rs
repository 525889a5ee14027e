//! A tantivy [`Tokenizer`] that runs Quarry's analyzer.
//!
//! Both engines must index the same terms at the same positions, or the benchmark compares
//! analyzers instead of engines (and COUNT answers could not be compared). Quarry's analyzer
//! reports positions but not byte offsets; tantivy only needs offsets for highlighting, which the
//! benchmark never does, so every token gets the offsets `0..0`.

use quarry_index::analysis::Analyzer;
use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

/// The name the tokenizer is registered under, and that the schema's text fields refer to.
pub const TOKENIZER_NAME: &str = "quarry";

#[derive(Clone, Default)]
pub struct QuarryTokenizer {
    analyzer: Analyzer,
    /// Token buffers reused from one text to the next; only the first `len` of a stream are live.
    tokens: Vec<Token>,
}

impl QuarryTokenizer {
    pub fn new(analyzer: Analyzer) -> Self {
        QuarryTokenizer {
            analyzer,
            tokens: Vec::new(),
        }
    }
}

impl Tokenizer for QuarryTokenizer {
    type TokenStream<'a> = QuarryTokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> QuarryTokenStream<'a> {
        let tokens = &mut self.tokens;
        let mut len = 0;
        self.analyzer.tokenize(text, 0, |position, term| {
            if len == tokens.len() {
                tokens.push(Token::default());
            }
            let token = &mut tokens[len];
            token.position = position as usize;
            token.text.clear();
            token.text.push_str(term);
            len += 1;
        });
        QuarryTokenStream {
            tokens: &mut tokens[..len],
            next: 0,
        }
    }
}

pub struct QuarryTokenStream<'a> {
    tokens: &'a mut [Token],
    /// Index of the token the next `advance` moves to; the current token is the one before it.
    next: usize,
}

impl TokenStream for QuarryTokenStream<'_> {
    fn advance(&mut self) -> bool {
        if self.next < self.tokens.len() {
            self.next += 1;
            true
        } else {
            false
        }
    }

    // `token` and `token_mut` are only called after `advance` returned true (the TokenStream
    // contract tantivy follows), so `next >= 1` and the index is in bounds.
    fn token(&self) -> &Token {
        &self.tokens[self.next - 1]
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.tokens[self.next - 1]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(tokenizer: &mut QuarryTokenizer, text: &str) -> Vec<(usize, String)> {
        let mut out = Vec::new();
        let mut stream = tokenizer.token_stream(text);
        while let Some(token) = stream.next() {
            out.push((token.position, token.text.clone()));
        }
        out
    }

    #[test]
    fn yields_the_analyzer_tokens_and_positions() {
        let mut tokenizer = QuarryTokenizer::new(Analyzer::new(["the".to_owned()]));
        let texts = [
            "The QUICK brown fox, don't stop! 3.14",
            "a",
            "",
            "Café naïve – déjà vu 东京",
        ];
        for text in texts {
            let expected: Vec<(usize, String)> = Analyzer::new(["the".to_owned()])
                .tokens(text)
                .into_iter()
                .map(|(position, token)| (position as usize, token))
                .collect();
            // Run twice: the second run reuses the buffers of the first.
            assert_eq!(stream(&mut tokenizer, text), expected, "{text:?}");
            assert_eq!(stream(&mut tokenizer, text), expected, "{text:?}");
        }
        // A stop word leaves a gap in positions.
        assert_eq!(
            stream(&mut tokenizer, "the fox"),
            vec![(1, "fox".to_owned())]
        );
    }
}
