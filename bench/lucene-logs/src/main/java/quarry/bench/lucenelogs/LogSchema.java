package quarry.bench.lucenelogs;

import java.time.DateTimeException;
import java.time.LocalDate;
import java.time.OffsetDateTime;
import java.util.Locale;
import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.CharArraySet;
import org.apache.lucene.analysis.standard.StandardAnalyzer;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.LongPoint;
import org.apache.lucene.document.NumericDocValuesField;
import org.apache.lucene.document.SortedDocValuesField;
import org.apache.lucene.document.StoredField;
import org.apache.lucene.document.StringField;
import org.apache.lucene.document.TextField;
import org.apache.lucene.search.Sort;
import org.apache.lucene.search.SortField;
import org.apache.lucene.util.BytesRef;

/**
 * The log schema in Lucene, one Lucene field (or pair) per field of PROTOCOL.md:
 *
 * <table>
 *   <tr><th>kind</th><th>Lucene fields</th></tr>
 *   <tr><td>{@code _time}</td><td>{@link LongPoint} + {@link NumericDocValuesField} +
 *       {@link StoredField}, milliseconds since the epoch; the index sort key</td></tr>
 *   <tr><td>keyword</td><td>{@link StringField} of the lowercased value (no norms, docs only)
 *       + {@link SortedDocValuesField} of the same, for TERMS, + {@link StoredField} of the
 *       value as given</td></tr>
 *   <tr><td>text</td><td>{@link TextField} analyzed by {@code StandardAnalyzer} without stop
 *       words (UAX#29 words, lowercased), stored</td></tr>
 *   <tr><td>integer</td><td>{@link LongPoint} + {@link NumericDocValuesField} +
 *       {@link StoredField}</td></tr>
 * </table>
 *
 * <p>Every field is stored (Lucene's default stored-fields format, LZ4 blocks): TAILEV returns
 * the events, as a log engine's search does.
 *
 * <p><b>Sort.</b> The index is sorted by {@code _time}, descending ({@link #INDEX_SORT}): newest
 * first is the order a log tail reads, so TAIL, the most common log query, is the sort the index
 * already has and stops after K matches in each segment; HEAD runs against it and relies on
 * Lucene's point-based skipping of non-competitive documents instead. Descending also keeps the
 * tantivy peer's choice.
 */
final class LogSchema {
    private LogSchema() {}

    /** The one field of the message-only schema ({@code index --schema message}). */
    static final String MESSAGE = "message";

    static final Sort INDEX_SORT = new Sort(new SortField(Protocol.TIME, SortField.Type.LONG, true));

    /** The analyzer of text fields and of words in queries: UAX#29, lowercase, no stop words. */
    static Analyzer analyzer() {
        return new StandardAnalyzer(CharArraySet.EMPTY_SET);
    }

    /** Adds one field of an event to {@code document}; {@code value} is a String or a Long. */
    static void add(Document document, String name, Protocol.Kind kind, Object value) {
        switch (kind) {
            case TIME -> {
                long millis = (Long) value;
                document.add(new LongPoint(name, millis));
                document.add(new NumericDocValuesField(name, millis));
                document.add(new StoredField(name, millis));
            }
            case KEYWORD -> {
                String lowered = ((String) value).toLowerCase(Locale.ROOT);
                document.add(new StringField(name, lowered, Field.Store.NO));
                document.add(new SortedDocValuesField(name, new BytesRef(lowered)));
                document.add(new StoredField(name, (String) value));
            }
            case TEXT -> document.add(new TextField(name, (String) value, Field.Store.YES));
            case INTEGER -> {
                long number = (Long) value;
                document.add(new LongPoint(name, number));
                document.add(new NumericDocValuesField(name, number));
                document.add(new StoredField(name, number));
            }
        }
    }

    /**
     * Milliseconds since the epoch of an RFC 3339 timestamp. The generator's shape
     * ({@code 2026-11-01T08:15:02.117Z}) is read by hand, anything else by {@link
     * OffsetDateTime}; finer fractions are truncated, as {@code logs_driver::time} does.
     */
    static long parseMillis(String text) {
        try {
            return parseMillisOrThrow(text);
        } catch (DateTimeException e) {
            throw new IllegalArgumentException("not an RFC 3339 timestamp: " + text, e);
        }
    }

    private static long parseMillisOrThrow(String text) {
        if (text.length() == 24
                && text.charAt(4) == '-' && text.charAt(7) == '-' && text.charAt(10) == 'T'
                && text.charAt(13) == ':' && text.charAt(16) == ':' && text.charAt(19) == '.'
                && text.charAt(23) == 'Z') {
            int year = digits(text, 0, 4);
            int month = digits(text, 5, 2);
            int day = digits(text, 8, 2);
            int hour = digits(text, 11, 2);
            int minute = digits(text, 14, 2);
            int second = digits(text, 17, 2);
            int millis = digits(text, 20, 3);
            if (year >= 0 && month >= 0 && day >= 0 && hour >= 0 && hour < 24 && minute >= 0
                    && minute < 60 && second >= 0 && second < 60 && millis >= 0) {
                // LocalDate.of checks the month and the day of month.
                long days = LocalDate.of(year, month, day).toEpochDay();
                return ((days * 24 + hour) * 60 + minute) * 60_000L + second * 1000L + millis;
            }
        }
        return OffsetDateTime.parse(text).toInstant().toEpochMilli();
    }

    /** The decimal number in {@code text[start, start + length)}, -1 if a char is no digit. */
    private static int digits(String text, int start, int length) {
        int value = 0;
        for (int i = start; i < start + length; i++) {
            char c = text.charAt(i);
            if (c < '0' || c > '9') {
                return -1;
            }
            value = value * 10 + (c - '0');
        }
        return value;
    }
}
