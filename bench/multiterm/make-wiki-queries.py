#!/usr/bin/env python3
"""Writes wiki-queries.tsv, the multi-term query set over the Wikipedia sample (issue 12).

    python3 bench/multiterm/make-wiki-queries.py > bench/multiterm/wiki-queries.tsv

Every term comes from the TREC 2009 Million Query topics (shared/data/queries), the queries the
search benchmark runs on the same articles: the most frequent plain words of the topics, cut,
altered and combined into each kind of multi-term query. Deterministic: the same topics give the
same file. One `NAME<TAB>COUNT<TAB>QUERY` line per query (logs-driver's query-set format); the
name is `KIND.NN`, and the kind is what the report groups by.

Only syntax that Quarry, Lucene's classic QueryParser and the tantivy bench engine's translator
read alike: regular expressions use literals, `.`, `[a-z]` classes, `( | )`, `?`, `*`, `+` and
`{m,n}` (no `\\d`, no Lucene-only `@ & < > ~ #`), all lowercase (Lucene's parser lowercases a
regex, Quarry uses it as written; tokens are lowercase in every engine).
"""

import collections
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOPICS = os.environ.get(
    "QUERY_FILE",
    os.path.join(HERE, "..", "..", "..", "shared", "data", "queries", "topics.mq.20001-60000.txt"),
)

# Words too common to say anything about an engine's term walk, or not words at all.
SKIP = set("""and the for with what does from how who where when which that this your about are
was were can you into have has not but all www com org net http html""".split())


def topics():
    with open(TOPICS, "rb") as f:
        for line in f:
            text = line.decode("utf-8", "replace").rstrip("\r\n")
            parts = text.split(":", 2)
            if len(parts) == 3 and parts[0].isdigit() and parts[1].isdigit():
                text = parts[2]
            yield text.lower()


def main():
    counts = collections.Counter()
    pairs = collections.Counter()
    for text in topics():
        words = text.split()
        plain = [w for w in words if re.fullmatch(r"[a-z]+", w)]
        counts.update(w for w in plain if w not in SKIP)
        if len(words) == 2 and all(re.fullmatch(r"[a-z]{4,}", w) for w in words):
            pairs[tuple(words)] += 1
    ranked = [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    long_words = [w for w in ranked if 6 <= len(w) <= 10]
    mid_words = [w for w in ranked if 5 <= len(w) <= 9]
    queries = []

    def add(kind, query):
        queries.append((kind, query))

    # prefix: the first 3 to 6 letters of frequent words
    for i, w in enumerate(long_words[:40]):
        add("prefix", w[: 3 + i % 4] + "*")
    # leading wildcard: a suffix of 4 or 5 letters
    for i, w in enumerate(long_words[40:65]):
        add("leading", "*" + w[-(4 + i % 2):])
    # inner wildcard: c*t (first two, last two letters) and te?t (one letter unknown)
    for i, w in enumerate(mid_words[:15]):
        add("inner", w[:2] + "*" + w[-2:])
    for i, w in enumerate(mid_words[15:30]):
        k = 1 + i % (len(w) - 2)
        add("inner", w[:k] + "?" + w[k + 1:])
    # substring: four letters from the middle of a word
    for w in long_words[65:85]:
        m = (len(w) - 4) // 2
        add("substring", "*" + w[m:m + 4] + "*")
    # fuzzy, 1 edit: a transposition, a deletion, a substitution or an insertion
    for i, w in enumerate(mid_words[30:55]):
        edit = i % 4
        k = 1 + i % (len(w) - 2)
        if edit == 0:
            t = w[:k] + w[k + 1] + w[k] + w[k + 2:]
        elif edit == 1:
            t = w[:k] + w[k + 1:]
        elif edit == 2:
            t = w[:k] + ("a" if w[k] != "a" else "e") + w[k + 1:]
        else:
            t = w[:k] + "x" + w[k:]
        add("fuzzy1", t + "~1")
    # fuzzy, 2 edits: two of the above
    for i, w in enumerate(long_words[85:105]):
        k = 1 + i % (len(w) - 4)
        t = w[:k] + w[k + 1] + w[k] + w[k + 2:]          # a transposition ...
        t = t[:-2] + ("o" if t[-2] != "o" else "a") + t[-1]  # ... and a substitution
        add("fuzzy2", t + "~2")
    # regex over whole tokens
    for i, w in enumerate(long_words[105:125]):
        form = i % 5
        if form == 0:
            r = w + "(s|es|ed|ing)?"
        elif form == 1:
            r = w[:3] + "[a-z]{2,4}" + w[-2:]
        elif form == 2:
            r = ".*" + w[2:-1] + ".?"
        elif form == 3:
            r = w[:2] + ".+" + w[-3:]
        else:
            r = "(" + w[:4] + "|" + long_words[125 + i][:4] + ")[a-z]*"
        add("regex", "/" + r + "/")
    # phrase slop: two-word topics, in order and reversed, slop 1 to 3
    # (pairs whose rarer word is most frequent among the topics: real, common phrases)
    ranked_pairs = sorted(pairs, key=lambda p: (-min(counts[p[0]], counts[p[1]]), p))
    for i, (a, b) in enumerate(ranked_pairs[:25]):
        slop = 1 + i % 3
        first, second = (b, a) if i % 2 else (a, b)
        add("slop", '"%s %s"~%d' % (first, second, slop))
    # string term ranges over the lowercased tokens of title or body
    for i, w in enumerate(mid_words[55:75]):
        field = "title" if i % 2 == 0 else "body"
        # titles hold few terms: a title range spans every term of a 3-letter start
        # (`[bea TO beb}`), a body range those between a 3- and a 4-letter start
        lo = w[:3]
        hi = w[:2] + chr(ord(w[2]) + 1) if field == "title" else w[:4]
        brackets = ["[%s TO %s]", "[%s TO %s}", "{%s TO %s]", "{%s TO %s}"][i % 4]
        add("range", field + ":" + brackets % (lo, hi))
    # combined with plain terms
    for i, w in enumerate(long_words[:20]):
        other = mid_words[75 + i]
        form = i % 4
        if form == 0:
            q = "+%s* +%s" % (w[:4], other)
        elif form == 1:
            q = "+*%s +%s" % (w[-4:], other)
        elif form == 2:
            q = "+%s~1 +%s" % (w, other)
        else:
            q = "+%s -%s*" % (other, w[:3])
        add("combined", q)

    seen = set()
    numbers = collections.Counter()
    out = sys.stdout
    out.write("# NAME<TAB>REQUEST: multi-term COUNT queries over the Wikipedia sample\n")
    out.write("# (bench/multiterm/README.md); written by make-wiki-queries.py from the TREC topics\n")
    for kind, query in queries:
        if query in seen:
            continue
        seen.add(query)
        numbers[kind] += 1
        out.write("%s.%02d\tCOUNT\t%s\n" % (kind, numbers[kind], query))
    print(dict(numbers), sum(numbers.values()), file=sys.stderr)


if __name__ == "__main__":
    main()
