package quarry.bench.luceneingest;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.time.DateTimeException;
import java.time.Instant;
import java.time.LocalDate;
import java.util.Locale;
import java.util.Set;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.LongPoint;
import org.apache.lucene.document.NumericDocValuesField;
import org.apache.lucene.document.SortedDocValuesField;
import org.apache.lucene.document.StoredField;
import org.apache.lucene.document.StringField;
import org.apache.lucene.document.TextField;
import org.apache.lucene.util.BytesRef;

/**
 * An event (one JSON object) as a Lucene document, with the field types of {@code lucene-logs}
 * (bench/logs/README.md) for the fields the generator writes, and a rule for any other field:
 *
 * <table>
 *   <tr><th>field</th><th>Lucene fields</th></tr>
 *   <tr><td>{@code _time} (or {@code @timestamp}), RFC 3339</td><td>{@link LongPoint} +
 *       {@link NumericDocValuesField} named {@code _time}, ms since the epoch</td></tr>
 *   <tr><td>keywords: {@code tenant service host level method client_ip}</td><td>{@link
 *       StringField} of the lowercased value + {@link SortedDocValuesField}</td></tr>
 *   <tr><td>any other string ({@code message}, {@code path}, {@code marker}, ...)</td><td>{@link
 *       TextField}, {@code StandardAnalyzer} without stop words</td></tr>
 *   <tr><td>an integer</td><td>{@link LongPoint} + {@link NumericDocValuesField}</td></tr>
 *   <tr><td>the whole event</td><td>{@link StoredField} {@code _source}, the JSON as sent
 *       (Elasticsearch's {@code _source})</td></tr>
 * </table>
 *
 * <p>Booleans, floats, arrays and objects are kept in {@code _source} only. No index sort:
 * Elasticsearch does not sort an index unless told to.
 */
final class EventSchema {
    private EventSchema() {}

    static final String TIME = "_time";
    static final String SOURCE = "_source";
    static final String MARKER = "marker";
    static final Set<String> KEYWORDS = Set.of("tenant", "service", "host", "level", "method", "client_ip");

    private static final JsonFactory JSON = new JsonFactory();

    /** The document of the JSON object in {@code bytes[offset, offset + length)}. */
    static Document parse(byte[] bytes, int offset, int length) throws MalformedEvent {
        Document document = new Document();
        try (JsonParser parser = JSON.createParser(bytes, offset, length)) {
            if (parser.nextToken() != JsonToken.START_OBJECT) {
                throw new MalformedEvent("an event must be a JSON object");
            }
            for (JsonToken token = parser.nextToken(); token != JsonToken.END_OBJECT; token = parser.nextToken()) {
                if (token != JsonToken.FIELD_NAME) {
                    throw new MalformedEvent("malformed event");
                }
                String name = parser.currentName();
                JsonToken value = parser.nextToken();
                switch (value) {
                    case VALUE_STRING -> addString(document, name, parser.getText());
                    case VALUE_NUMBER_INT -> {
                        long number;
                        try {
                            number = parser.getLongValue();
                        } catch (IOException e) {
                            // Out of the long range: kept in _source only.
                            continue;
                        }
                        document.add(new LongPoint(name, number));
                        document.add(new NumericDocValuesField(name, number));
                    }
                    case START_OBJECT, START_ARRAY -> parser.skipChildren();
                    default -> {}
                }
            }
            if (parser.nextToken() != null) {
                throw new MalformedEvent("trailing data after the event");
            }
        } catch (IOException e) {
            throw new MalformedEvent("malformed JSON: " + e.getMessage());
        }
        document.add(new StoredField(SOURCE, bytes, offset, length));
        return document;
    }

    private static void addString(Document document, String name, String value) throws MalformedEvent {
        if (name.equals(TIME) || name.equals("@timestamp")) {
            long millis = parseMillis(value);
            document.add(new LongPoint(TIME, millis));
            document.add(new NumericDocValuesField(TIME, millis));
        } else if (KEYWORDS.contains(name)) {
            String lowered = value.toLowerCase(Locale.ROOT);
            document.add(new StringField(name, lowered, Field.Store.NO));
            document.add(new SortedDocValuesField(name, new BytesRef(lowered)));
        } else {
            document.add(new TextField(name, value, Field.Store.NO));
        }
    }

    /**
     * Milliseconds since the epoch of an RFC 3339 timestamp: the generator's fixed shape
     * {@code 2026-11-01T08:15:02.117Z} by hand (it is on the path of every event), anything
     * else through {@link Instant#parse}, which also takes offsets.
     */
    static long parseMillis(String text) throws MalformedEvent {
        if (text.length() == 24 && text.endsWith("Z") && text.charAt(10) == 'T' && text.charAt(19) == '.') {
            int year = number(text, 0, 4), month = number(text, 5, 2), day = number(text, 8, 2);
            int hour = number(text, 11, 2), minute = number(text, 14, 2), second = number(text, 17, 2);
            int millis = number(text, 20, 3);
            boolean separators = text.charAt(4) == '-' && text.charAt(7) == '-'
                    && text.charAt(13) == ':' && text.charAt(16) == ':';
            if (separators && Math.min(Math.min(year, month), Math.min(day, millis)) >= 0
                    && hour >= 0 && hour < 24 && minute >= 0 && minute < 60 && second >= 0 && second < 60) {
                try {
                    long days = LocalDate.of(year, month, day).toEpochDay();
                    return days * 86_400_000L + hour * 3_600_000L + minute * 60_000L + second * 1000L + millis;
                } catch (DateTimeException e) {
                    throw new MalformedEvent("not a date: " + text);
                }
            }
        }
        try {
            return Instant.parse(text).toEpochMilli();
        } catch (DateTimeException e) {
            throw new MalformedEvent("_time is not an RFC 3339 timestamp: " + text);
        }
    }

    /** The decimal digits {@code text[start, start + count)}, -1 if one is not a digit. */
    private static int number(String text, int start, int count) {
        int value = 0;
        for (int i = start; i < start + count; i++) {
            int digit = text.charAt(i) - '0';
            if (digit < 0 || digit > 9) {
                return -1;
            }
            value = value * 10 + digit;
        }
        return value;
    }

    /** An event that cannot be indexed: its bulk item fails with status 400. */
    static final class MalformedEvent extends Exception {
        private static final long serialVersionUID = 1L;

        MalformedEvent(String message) {
            super(message);
        }
    }
}
