//! Analysis: text to tokens, close to Lucene's `StandardAnalyzer`.
//!
//! Rules:
//! - Words are found by the Unicode word-boundary rules of UAX #29 (as Lucene's
//!   StandardTokenizer does): `don't`, `3.14`, `foo_bar` and `a.b.c` stay whole; punctuation and
//!   whitespace separate words; a segment becomes a token only if it holds a letter or digit.
//! - Tokens are lowercased (Unicode lowercase; ASCII fast path).
//! - Tokens longer than `MAX_TOKEN_LEN` bytes are dropped (they are blobs nobody types).
//! - No stop words by default; a configured stop list drops those tokens after lowercasing.
//! - Other tokenizers, for mapped fields (`Analyzer::with_tokenizer`): `Whitespace` cuts at
//!   whitespace only and keeps case; `Keyword` keeps the whole value as one token (an empty
//!   or over-long value gives none).
//! - Each token's position is its index among all words of the value, so dropping stop words or
//!   long tokens leaves gaps (as Lucene's position increments do) and phrases stay exact.
//!
//! ASCII whitespace always separates words under UAX #29, so text is cut at ASCII whitespace
//! into pieces; an all-ASCII piece goes through a hand-written scanner of the UAX #29 rules for
//! ASCII (WB5–WB13b; property-tested against the `unicode-segmentation` crate), any other piece
//! through `unicode-segmentation`. The fast path matters: most log and wiki text is ASCII.

use hashbrown::HashSet;
use quarry_format::limits::MAX_TOKEN_LEN;
use unicode_segmentation::UnicodeSegmentation;

#[derive(Debug, Clone, Default)]
pub struct Analyzer {
    stop_words: HashSet<String>,
    tokenizer: Tokenizer,
}

/// How text is cut into words.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Tokenizer {
    /// UAX #29 words holding a letter or digit, lowercased (the module doc).
    #[default]
    Standard,
    /// Runs of non-whitespace, case kept (Lucene's WhitespaceAnalyzer).
    Whitespace,
    /// The whole value as one token, case kept (Lucene's KeywordAnalyzer).
    Keyword,
}

/// Lucene's English stop words (`EnglishAnalyzer.ENGLISH_STOP_WORDS_SET`), for the `stop`
/// analyzer of a mapping.
pub const ENGLISH_STOP_WORDS: [&str; 33] = [
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
    "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
    "they", "this", "to", "was", "will", "with",
];

impl Analyzer {
    pub fn new(stop_words: impl IntoIterator<Item = String>) -> Self {
        Analyzer {
            stop_words: stop_words.into_iter().map(|w| w.to_lowercase()).collect(),
            tokenizer: Tokenizer::Standard,
        }
    }

    /// This analyzer cutting words with `tokenizer` (stop words kept as they are).
    pub fn with_tokenizer(mut self, tokenizer: Tokenizer) -> Self {
        self.tokenizer = tokenizer;
        self
    }

    pub fn tokenizer(&self) -> Tokenizer {
        self.tokenizer
    }

    pub fn stop_words(&self) -> impl Iterator<Item = &str> {
        self.stop_words.iter().map(String::as_str)
    }

    /// Calls `emit(position, token)` for each token of `text`, positions starting at
    /// `first_position`. Returns the number of positions used (words seen, kept or not).
    pub fn tokenize(
        &self,
        text: &str,
        first_position: u32,
        mut emit: impl FnMut(u32, &str),
    ) -> u32 {
        let mut buffer = Vec::new();
        self.tokenize_after(text, first_position, &[], &mut buffer, |position, token| {
            // The buffer holds only the lowercased token: a `&str` lowercased, so utf-8.
            emit(position, std::str::from_utf8(token).unwrap_or_default())
        })
    }

    /// Like `tokenize`, but each token is written into `buffer` after `prefix`, and `emit`
    /// gets the whole buffer (prefix and token). The indexer passes its term-key prefix
    /// (field, kind) so a token becomes a lookup key without another copy.
    pub fn tokenize_after(
        &self,
        text: &str,
        first_position: u32,
        prefix: &[u8],
        buffer: &mut Vec<u8>,
        mut emit: impl FnMut(u32, &[u8]),
    ) -> u32 {
        let mut position = first_position;
        buffer.clear();
        buffer.extend_from_slice(prefix);
        let lowercase = self.tokenizer == Tokenizer::Standard;
        let mut word = |word: &str| {
            if word.len() <= MAX_TOKEN_LEN {
                buffer.truncate(prefix.len());
                if !lowercase {
                    buffer.extend_from_slice(word.as_bytes());
                } else if word.is_ascii() {
                    buffer.extend(word.bytes().map(|b| b.to_ascii_lowercase()));
                } else {
                    let mut utf8 = [0u8; 4];
                    for c in word.chars().flat_map(char::to_lowercase) {
                        buffer.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
                    }
                }
                let token = &buffer[prefix.len()..];
                // Stop words are lowercased utf-8 strings; a token's bytes are too.
                let stop = !self.stop_words.is_empty()
                    && std::str::from_utf8(token).is_ok_and(|t| self.stop_words.contains(t));
                if !stop {
                    emit(position, buffer);
                }
            }
            position += 1;
        };
        match self.tokenizer {
            Tokenizer::Standard => for_each_word(text, &mut word),
            Tokenizer::Whitespace => text.split_whitespace().for_each(word),
            Tokenizer::Keyword if text.is_empty() => {}
            Tokenizer::Keyword => word(text),
        }
        position - first_position
    }

    /// `tokenize_after` over the texts of one value: each text's positions `gap` after the
    /// last position the one before used, so that a phrase does not run from one array item
    /// into the next. Indexing and the positions a query finds in a stored value
    /// (`value_positions`) both go through here, so they agree.
    pub fn tokenize_texts<'t>(
        &self,
        texts: impl IntoIterator<Item = &'t str>,
        gap: u32,
        prefix: &[u8],
        buffer: &mut Vec<u8>,
        mut emit: impl FnMut(u32, &[u8]),
    ) {
        let mut next = 0u32;
        for (i, text) in texts.into_iter().enumerate() {
            if i > 0 {
                next = next.saturating_add(gap);
            }
            let used = self.tokenize_after(text, next, prefix, buffer, &mut emit);
            next = next.saturating_add(used);
        }
    }

    /// The tokens of `text`, in order (for query terms).
    pub fn tokens(&self, text: &str) -> Vec<(u32, String)> {
        let mut out = Vec::new();
        self.tokenize(text, 0, |position, token| {
            out.push((position, token.to_owned()))
        });
        out
    }
}

/// Calls `word` for each UAX #29 word of `text` that holds a letter or digit, in original case.
pub fn for_each_word(text: &str, word: &mut impl FnMut(&str)) {
    let bytes = text.as_bytes();
    let mut start = 0;
    while start < bytes.len() {
        // Everything up to the whitespace before the next non-ASCII byte is scanned in one
        // table-driven pass; the whitespace-delimited piece holding that byte goes to
        // `unicode-segmentation`; then on after the piece.
        let Some(non_ascii) = first_non_ascii(&bytes[start..]).map(|i| start + i) else {
            ascii_words(&bytes[start..], |s, e| word(&text[start + s..start + e]));
            return;
        };
        let piece_start = bytes[start..non_ascii]
            .iter()
            .rposition(u8::is_ascii_whitespace)
            .map_or(start, |i| start + i + 1);
        let piece_end = bytes[non_ascii..]
            .iter()
            .position(u8::is_ascii_whitespace)
            .map_or(bytes.len(), |i| non_ascii + i);
        ascii_words(&bytes[start..piece_start], |s, e| {
            word(&text[start + s..start + e])
        });
        // Both ends are at ASCII whitespace or the string's ends, so they are char boundaries.
        for w in text[piece_start..piece_end].unicode_words() {
            word(w);
        }
        start = piece_end;
    }
}

/// Position of the first byte >= 0x80, eight bytes at a time.
fn first_non_ascii(bytes: &[u8]) -> Option<usize> {
    const HIGH_BITS: u64 = 0x8080_8080_8080_8080;
    let mut chunks = bytes.chunks_exact(8);
    let mut offset = 0;
    for chunk in &mut chunks {
        // unwrap: chunks_exact(8) yields 8-byte slices.
        if u64::from_le_bytes(chunk.try_into().unwrap()) & HIGH_BITS != 0 {
            break;
        }
        offset += 8;
    }
    bytes[offset..]
        .iter()
        .position(|&b| b >= 0x80)
        .map(|i| offset + i)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Letter,
    Numeric,
    /// `_` (ExtendNumLet)
    Connector,
    /// `:` (MidLetter): joins letters only
    MidLetter,
    /// `.` and `'` (MidNumLet, Single_Quote): join letters or digits
    MidNumLet,
    /// `,` and `;` (MidNum): join digits only
    MidNum,
    Other,
}

/// Word-break class of every byte (non-ASCII bytes never reach the ASCII scanner).
static CLASSES: [Class; 256] = {
    let mut table = [Class::Other; 256];
    let mut b = 0;
    while b < 256 {
        let byte = b as u8;
        table[b] = match byte {
            b'a'..=b'z' | b'A'..=b'Z' => Class::Letter,
            b'0'..=b'9' => Class::Numeric,
            b'_' => Class::Connector,
            b':' => Class::MidLetter,
            b'.' | b'\'' => Class::MidNumLet,
            b',' | b';' => Class::MidNum,
            _ => Class::Other,
        };
        b += 1;
    }
    table
};

#[inline]
fn class(byte: u8) -> Class {
    CLASSES[byte as usize]
}

fn is_word_class(c: Class) -> bool {
    matches!(c, Class::Letter | Class::Numeric | Class::Connector)
}

/// UAX #29 word boundaries restricted to ASCII; calls `emit(start, end)` for each word that
/// holds a letter or digit.
fn ascii_words(bytes: &[u8], mut emit: impl FnMut(usize, usize)) {
    let n = bytes.len();
    let mut i = 0;
    while i < n {
        let c = class(bytes[i]);
        if !is_word_class(c) {
            i += 1;
            continue;
        }
        let start = i;
        let mut prev = c;
        let mut alnum = c != Class::Connector;
        i += 1;
        while i < n {
            let next = class(bytes[i]);
            if is_word_class(next) {
                // WB5, WB8, WB9, WB10, WB13a, WB13b: letters, digits and `_` join each other.
                alnum |= next != Class::Connector;
                prev = next;
                i += 1;
                continue;
            }
            // WB6/7 and WB11/12: one middle char joins two letters or two digits.
            let after = if i + 1 < n {
                class(bytes[i + 1])
            } else {
                Class::Other
            };
            let joins = match next {
                Class::MidLetter => prev == Class::Letter && after == Class::Letter,
                Class::MidNumLet => {
                    (prev == Class::Letter && after == Class::Letter)
                        || (prev == Class::Numeric && after == Class::Numeric)
                }
                Class::MidNum => prev == Class::Numeric && after == Class::Numeric,
                _ => false,
            };
            if !joins {
                break;
            }
            i += 2;
            prev = after;
        }
        if alnum {
            emit(start, i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn words(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        for_each_word(text, &mut |w| out.push(w.to_owned()));
        out
    }

    #[test]
    fn whitespace_and_keyword_tokenizers_keep_case() {
        let text = "GET /Api/v1?x=1  HTTP/1.1";
        let whitespace = Analyzer::default().with_tokenizer(Tokenizer::Whitespace);
        let tokens: Vec<(u32, String)> = text
            .split_whitespace()
            .enumerate()
            .map(|(i, w)| (i as u32, w.to_owned()))
            .collect();
        assert_eq!(whitespace.tokens(text), tokens);
        let keyword = Analyzer::default().with_tokenizer(Tokenizer::Keyword);
        assert_eq!(keyword.tokens(text), [(0, text.to_owned())]);
        assert!(keyword.tokens("").is_empty());
        let stop = Analyzer::new(ENGLISH_STOP_WORDS.map(str::to_owned));
        let kept: Vec<String> = stop
            .tokens("The cat is on the Mat")
            .into_iter()
            .map(|t| t.1)
            .collect();
        assert_eq!(kept, ["cat", "mat"]);
    }

    #[test]
    fn table() {
        let cases: &[(&str, &[&str])] = &[
            ("Hello, World!", &["Hello", "World"]),
            ("don't stop", &["don't", "stop"]),
            (
                "pi is 3.14, e is 2,718",
                &["pi", "is", "3.14", "e", "is", "2,718"],
            ),
            ("foo_bar __ _x", &["foo_bar", "_x"]),
            ("a.b.c end.", &["a.b.c", "end"]),
            (
                "http://example.com/path?q=1",
                &["http", "example.com", "path", "q", "1"],
            ),
            ("10:30 a:b", &["10", "30", "a:b"]),
            ("abc123 123abc", &["abc123", "123abc"]),
            ("Café naïve – déjà vu", &["Café", "naïve", "déjà", "vu"]),
            ("东京 tokyo", &["东", "京", "tokyo"]),
            ("", &[]),
        ];
        for (text, expected) in cases {
            assert_eq!(words(text), *expected, "{text:?}");
        }
    }

    #[test]
    fn lowercases_drops_stop_words_and_keeps_positions() {
        let analyzer = Analyzer::new(["the".to_owned()]);
        let tokens = analyzer.tokens("The QUICK fox ÉTÉ");
        assert_eq!(
            tokens,
            vec![
                (1, "quick".to_owned()),
                (2, "fox".to_owned()),
                (3, "été".to_owned())
            ]
        );
        let long = "x".repeat(MAX_TOKEN_LEN + 1);
        assert_eq!(
            Analyzer::default().tokens(&format!("a {long} b")),
            vec![(0, "a".into()), (2, "b".into())]
        );
    }

    proptest! {
        /// The ASCII scanner agrees with the reference UAX #29 implementation.
        #[test]
        fn ascii_fast_path_matches_unicode_segmentation(text in "[a-cA-C0-2_.,;:' !/-]{0,40}") {
            let expected: Vec<String> = text.unicode_words().map(str::to_owned).collect();
            prop_assert_eq!(words(&text), expected);
        }

        /// Mixed text (ASCII and not) agrees with the reference too.
        #[test]
        fn mixed_text_matches_unicode_segmentation(text in "[a-b0-1_.,:' \t\né东–-]{0,40}") {
            let expected: Vec<String> = text.unicode_words().map(str::to_owned).collect();
            prop_assert_eq!(words(&text), expected);
        }

        #[test]
        fn any_text_never_panics(text in "\\PC{0,60}") {
            let _ = Analyzer::default().tokens(&text);
        }
    }
}
