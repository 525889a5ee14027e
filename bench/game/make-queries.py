#!/usr/bin/env python3
"""Writes queries.tsv, the query set of the search-benchmark-game configuration (issue 14).

    python3 bench/game/make-queries.py > bench/game/queries.tsv

The queries are the TREC 2009 Million Query topics (shared/data/queries), the search
benchmark's, put in the shapes of the search-benchmark-game's query kinds. One
`KIND<TAB>QUERY` line per query, kinds in the order below, queries sorted within a kind:

| kind                  | from                | query           |
|-----------------------|---------------------|-----------------|
| `term`                | one-word topics     | `a`             |
| `intersection`        | two-word topics     | `+a +b`         |
| `union`               | two-word topics     | `a b`           |
| `phrase`              | two/three-word ones | `"a b"`         |
| `negation`            | two-word topics     | `+a -b`         |
| `two_phase`           | three-word topics   | `+"a b" +c`     |
| `phrase_stopwords`    | fixed               | `"to be or not to be"`, `"the who"` |
| `two_phase_stopwords` | fixed               | `+"the who" +uk` |

Only topics whose words are all ASCII lowercase letters and digits, none repeated and none of
`and`, `or`, `not`, are used: such a word is one token in every engine's analyzer and means
the same to Quarry's parser, Lucene's classic QueryParser and tantivy's QueryParser (`+`, `-`
and `"` are the only syntax, and all three read them alike). Of those, each kind takes the
PER_KIND topics whose SHA-1 of `KIND:topic` is lowest: deterministic, independent of the
Python version, and a different sample for each kind.
"""

import hashlib
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOPICS = os.environ.get(
    "QUERY_FILE",
    os.path.join(HERE, "..", "..", "..", "shared", "data", "queries", "topics.mq.20001-60000.txt"),
)
PER_KIND = 300
WORD = re.compile(r"[a-z0-9]+")
# Operators in some parser when upper case; lower case they are not, but a query of them
# would measure nothing.
OPERATOR_WORDS = {"and", "or", "not"}


def topics():
    """The topics' texts, lowercased, each once, in file order."""
    seen = set()
    with open(TOPICS, "rb") as f:
        for raw in f:
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                line = raw.decode("latin-1")
            parts = line.rstrip("\r\n").split(":", 2)
            text = parts[2] if len(parts) == 3 and parts[0].isdigit() and parts[1].isdigit() else parts[0]
            text = " ".join(text.lower().split())
            if text and text not in seen:
                seen.add(text)
                yield text


def plain(words):
    return (
        all(WORD.fullmatch(w) for w in words)
        and not OPERATOR_WORDS & set(words)
        and len(set(words)) == len(words)
    )


def pick(kind, candidates):
    """The PER_KIND candidates with the lowest SHA-1 of `kind:candidate`."""
    ranked = sorted(candidates, key=lambda text: hashlib.sha1(f"{kind}:{text}".encode()).digest())
    return ranked[:PER_KIND]


def main():
    by_length = {}
    for text in topics():
        words = text.split()
        if plain(words):
            by_length.setdefault(len(words), []).append(words)

    def texts(*lengths):
        return [" ".join(words) for n in lengths for words in by_length.get(n, [])]

    shapes = [
        ("term", texts(1), lambda w: w[0]),
        ("intersection", texts(2), lambda w: f"+{w[0]} +{w[1]}"),
        ("union", texts(2), lambda w: f"{w[0]} {w[1]}"),
        ("phrase", texts(2, 3), lambda w: '"' + " ".join(w) + '"'),
        ("negation", texts(2), lambda w: f"+{w[0]} -{w[1]}"),
        ("two_phase", texts(3), lambda w: f'+"{w[0]} {w[1]}" +{w[2]}'),
    ]
    out = sys.stdout
    for kind, candidates, shape in shapes:
        for text in sorted(pick(kind, candidates)):
            out.write(f"{kind}\t{shape(text.split())}\n")
    for query in ['"to be or not to be"', '"the who"']:
        out.write(f"phrase_stopwords\t{query}\n")
    out.write('two_phase_stopwords\t+"the who" +uk\n')


if __name__ == "__main__":
    main()
