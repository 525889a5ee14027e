package quarry.bench.lucene;

import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.CharArraySet;
import org.apache.lucene.analysis.standard.StandardAnalyzer;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.TextField;

/**
 * The benchmark schema: {@code url}, {@code title} and {@code body}, each analyzed (frequencies
 * and positions, for phrase queries) and stored, as Quarry and {@code tantivy-bench} keep them;
 * all three searched by bare words.
 */
final class Schema {
    static final String URL = "url";
    static final String TITLE = "title";
    static final String BODY = "body";
    static final String[] SEARCHED = {URL, TITLE, BODY};

    private Schema() {}

    /**
     * Lucene's {@code StandardTokenizer} (UAX#29 word breaks) and lower-casing, with no stop
     * words: Quarry's analyzer drops none either, so every word is a term in all three engines.
     */
    static Analyzer analyzer() {
        return new StandardAnalyzer(CharArraySet.EMPTY_SET);
    }

    static Document document(String url, String title, String body) {
        Document document = new Document();
        // TextField: tokenized, indexed with docs, freqs and positions, norms kept.
        document.add(new TextField(URL, url, Field.Store.YES));
        document.add(new TextField(TITLE, title, Field.Store.YES));
        document.add(new TextField(BODY, body, Field.Store.YES));
        return document;
    }
}
