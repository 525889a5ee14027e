package quarry.bench.lucenelogs;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.TokenStream;
import org.apache.lucene.analysis.tokenattributes.CharTermAttribute;
import org.apache.lucene.analysis.tokenattributes.PositionIncrementAttribute;
import org.apache.lucene.document.LongPoint;
import org.apache.lucene.document.NumericDocValuesField;
import org.apache.lucene.index.Term;
import org.apache.lucene.search.BooleanClause;
import org.apache.lucene.search.BooleanQuery;
import org.apache.lucene.search.FuzzyQuery;
import org.apache.lucene.search.IndexOrDocValuesQuery;
import org.apache.lucene.search.IndexSortSortedNumericDocValuesRangeQuery;
import org.apache.lucene.search.MatchAllDocsQuery;
import org.apache.lucene.search.MatchNoDocsQuery;
import org.apache.lucene.search.MultiTermQuery;
import org.apache.lucene.search.PhraseQuery;
import org.apache.lucene.search.PrefixQuery;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.RegexpQuery;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.search.WildcardQuery;

/**
 * The protocol's query language as Lucene queries, the idiomatic query for each clause:
 *
 * <table>
 *   <tr><th>clause</th><th>Lucene query</th></tr>
 *   <tr><td>{@code *}</td><td>{@link MatchAllDocsQuery}</td></tr>
 *   <tr><td>word, {@code message:w}, {@code path:w}</td><td>the word through the
 *       analyzer: one token → {@link TermQuery}, several → {@link PhraseQuery}, none →
 *       {@link MatchNoDocsQuery}</td></tr>
 *   <tr><td>{@code keyword:v}</td><td>{@link TermQuery} on the lowercased value</td></tr>
 *   <tr><td>{@code integer:v}, {@code integer:[lo TO hi]}</td><td>{@link
 *       IndexOrDocValuesQuery} of the points query and the doc-values query (what {@code
 *       LongField.newRangeQuery} builds): Lucene leads with points, or checks doc values when
 *       another clause leads</td></tr>
 *   <tr><td>{@code _time:v}, {@code _time:[lo TO hi]}</td><td>{@link
 *       IndexSortSortedNumericDocValuesRangeQuery}: the index is sorted by {@code _time}, so the
 *       range is two binary searches in the doc values; the points/doc-values query above is
 *       its fallback</td></tr>
 *   <tr><td>{@code tim*} (only a trailing {@code *})</td><td>{@link PrefixQuery}</td></tr>
 *   <tr><td>other wildcards ({@code *eout}, {@code t?me})</td><td>{@link WildcardQuery}</td></tr>
 *   <tr><td>{@code /regex/}</td><td>{@link RegexpQuery} (Lucene's {@code RegExp} syntax; the
 *       query sets keep to what it and Rust's regex read alike)</td></tr>
 *   <tr><td>{@code word~N}</td><td>{@link FuzzyQuery} with N edits, transpositions, no
 *       prefix, rewritten to a constant score over every matching term ({@link
 *       MultiTermQuery#CONSTANT_SCORE_BLENDED_REWRITE}; the default keeps only the 50 best
 *       terms)</td></tr>
 * </table>
 *
 * <p>Prefix, wildcard and regexp queries keep their default rewrite, {@link
 * MultiTermQuery#CONSTANT_SCORE_BLENDED_REWRITE}: no expansion can hit the clause limit.
 *
 * <p>Several clauses are a {@link BooleanQuery} of {@code FILTER} clauses: nothing is scored.
 */
final class Queries {
    private Queries() {}

    static Query build(List<Protocol.Clause> clauses, Analyzer analyzer) {
        if (clauses.isEmpty()) {
            return MatchAllDocsQuery.INSTANCE;
        }
        if (clauses.size() == 1) {
            return clause(clauses.get(0), analyzer);
        }
        BooleanQuery.Builder builder = new BooleanQuery.Builder();
        for (Protocol.Clause clause : clauses) {
            builder.add(clause(clause, analyzer), BooleanClause.Occur.FILTER);
        }
        return builder.build();
    }

    private static Query clause(Protocol.Clause clause, Analyzer analyzer) {
        return switch (clause) {
            case Protocol.Clause.Word(String field, String word) -> analyzed(field, word, analyzer);
            case Protocol.Clause.Keyword(String field, String value) -> new TermQuery(new Term(field, value));
            case Protocol.Clause.Equals(String field, long value) -> range(field, value, value);
            case Protocol.Clause.Range(String field, long lo, long hi) -> range(field, lo, hi);
            case Protocol.Clause.Wildcard(String field, String wildcard) -> wildcard(field, wildcard);
            case Protocol.Clause.Regex(String field, String regex) -> new RegexpQuery(new Term(field, regex));
            case Protocol.Clause.Fuzzy(String field, String term, int distance) -> new FuzzyQuery(
                    new Term(field, term),
                    distance,
                    0,
                    FuzzyQuery.defaultMaxExpansions,
                    true,
                    MultiTermQuery.CONSTANT_SCORE_BLENDED_REWRITE);
        };
    }

    private static Query wildcard(String field, String wildcard) {
        String stem = wildcard.substring(0, wildcard.length() - 1);
        if (wildcard.endsWith("*") && stem.indexOf('*') < 0 && stem.indexOf('?') < 0 && stem.indexOf('\\') < 0) {
            return new PrefixQuery(new Term(field, stem));
        }
        return new WildcardQuery(new Term(field, wildcard));
    }

    private static Query range(String field, long lo, long hi) {
        Query pointsOrDocValues = new IndexOrDocValuesQuery(
                LongPoint.newRangeQuery(field, lo, hi),
                NumericDocValuesField.newSlowRangeQuery(field, lo, hi));
        if (field.equals(Protocol.TIME)) {
            return new IndexSortSortedNumericDocValuesRangeQuery(field, lo, hi, pointsOrDocValues);
        }
        return pointsOrDocValues;
    }

    /** The word through the analyzer the field was indexed with. */
    private static Query analyzed(String field, String word, Analyzer analyzer) {
        List<Term> terms = new ArrayList<>();
        List<Integer> positions = new ArrayList<>();
        try (TokenStream tokens = analyzer.tokenStream(field, word)) {
            CharTermAttribute term = tokens.addAttribute(CharTermAttribute.class);
            PositionIncrementAttribute increment =
                    tokens.addAttribute(PositionIncrementAttribute.class);
            tokens.reset();
            int position = -1;
            while (tokens.incrementToken()) {
                position += increment.getPositionIncrement();
                terms.add(new Term(field, term.toString()));
                positions.add(position);
            }
            tokens.end();
        } catch (IOException e) {
            // Analyzing a String in memory does no I/O.
            throw new UncheckedIOException(e);
        }
        if (terms.isEmpty()) {
            return MatchNoDocsQuery.INSTANCE;
        }
        if (terms.size() == 1) {
            return new TermQuery(terms.get(0));
        }
        PhraseQuery.Builder phrase = new PhraseQuery.Builder();
        for (int i = 0; i < terms.size(); i++) {
            phrase.add(terms.get(i), positions.get(i));
        }
        return phrase.build();
    }
}
