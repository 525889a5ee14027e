package quarry.bench.lucene;

import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.CharArraySet;
import org.apache.lucene.analysis.standard.StandardAnalyzer;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.StoredField;
import org.apache.lucene.document.TextField;
import org.apache.lucene.index.FieldInfo;
import org.apache.lucene.index.FieldInfos;
import org.apache.lucene.index.IndexOptions;
import org.apache.lucene.index.IndexReader;

/**
 * The benchmark schemas, both analyzed with frequencies and positions (phrase queries need
 * them):
 *
 * <ul>
 *   <li>{@link Kind#WIKI}, the search benchmark's: {@code url}, {@code title} and {@code body},
 *       each analyzed and stored, as Quarry and {@code tantivy-bench} keep them; all three
 *       searched by bare words;
 *   <li>{@link Kind#GAME}, the search-benchmark-game's corpus shape (bench/README.md, "The
 *       search-benchmark-game configuration"): {@code id} stored only, not indexed; {@code text}
 *       indexed, not stored, the only field bare words search.
 * </ul>
 *
 * <p>{@code index --schema} picks one; {@code serve} finds which from the index's fields
 * ({@link #searchedFields}).
 */
final class Schema {
    static final String URL = "url";
    static final String TITLE = "title";
    static final String BODY = "body";
    static final String[] SEARCHED = {URL, TITLE, BODY};
    static final String ID = "id";
    static final String TEXT = "text";
    static final String[] GAME_SEARCHED = {TEXT};

    /** Which documents an index holds. */
    enum Kind {
        WIKI,
        GAME;

        /** {@code wiki} or {@code game}; {@code null} for any other name. */
        static Kind parse(String name) {
            return switch (name) {
                case "wiki" -> WIKI;
                case "game" -> GAME;
                default -> null;
            };
        }
    }

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

    static Document gameDocument(String id, String text) {
        Document document = new Document();
        // StoredField: kept for display, not indexed.
        document.add(new StoredField(ID, id));
        document.add(new TextField(TEXT, text, Field.Store.NO));
        return document;
    }

    /** The fields bare words search: {@code text} in a game index, else the wiki's three. */
    static String[] searchedFields(IndexReader reader) {
        FieldInfo text = FieldInfos.getMergedFieldInfos(reader).fieldInfo(TEXT);
        boolean game = text != null && text.getIndexOptions() != IndexOptions.NONE;
        return game ? GAME_SEARCHED : SEARCHED;
    }
}
