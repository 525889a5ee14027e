package quarry.bench.lucenelogs;

import java.io.IOException;
import org.apache.lucene.index.FieldInfo;
import org.apache.lucene.index.StoredFieldVisitor;
import org.apache.lucene.util.UnicodeUtil;

/**
 * Writes one stored document as a JSON object ({@code _time} in RFC 3339, milliseconds) into a
 * buffer reused from event to event, as a server writes its response, and computes the event's
 * TAILEV digest (PROTOCOL.md): over every field but {@code _time}, 1 plus the UTF-8 byte length
 * of a string or the value of an integer, summed with wrapping (Java's long addition is the two's
 * complement sum the Rust engines compute as u64).
 *
 * <p>Use: {@link #reset()}, {@code StoredFields.document(doc, writer)}, {@link #finish()}.
 */
final class EventWriter extends StoredFieldVisitor {
    private final StringBuilder json = new StringBuilder(1024);
    private long digest;

    void reset() {
        json.setLength(0);
        json.append('{');
        digest = 0;
    }

    /** Closes the object and returns the event's digest. */
    long finish() {
        json.append('}');
        return digest;
    }

    String json() {
        return json.toString();
    }

    @Override
    public Status needsField(FieldInfo fieldInfo) {
        return Status.YES;
    }

    @Override
    public void stringField(FieldInfo fieldInfo, String value) {
        key(fieldInfo.name);
        string(value);
        digest += 1 + UnicodeUtil.calcUTF16toUTF8Length(value, 0, value.length());
    }

    @Override
    public void longField(FieldInfo fieldInfo, long value) {
        key(fieldInfo.name);
        if (fieldInfo.name.equals(Protocol.TIME)) {
            json.append('"');
            appendRfc3339Millis(json, value);
            json.append('"');
        } else {
            json.append(value);
            digest += 1 + value;
        }
    }

    @Override
    public void binaryField(FieldInfo fieldInfo, byte[] value) throws IOException {
        throw new IOException("unexpected binary stored field " + fieldInfo.name);
    }

    private void key(String name) {
        if (json.length() > 1) {
            json.append(',');
        }
        string(name);
        json.append(':');
    }

    private static final char[] HEX = "0123456789abcdef".toCharArray();

    /** A JSON string: quotes, backslashes and control characters escaped. */
    private void string(String value) {
        json.append('"');
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            switch (c) {
                case '"' -> json.append("\\\"");
                case '\\' -> json.append("\\\\");
                case '\n' -> json.append("\\n");
                case '\r' -> json.append("\\r");
                case '\t' -> json.append("\\t");
                default -> {
                    if (c < 0x20) {
                        json.append("\\u00").append(HEX[c >> 4]).append(HEX[c & 0xf]);
                    } else {
                        json.append(c);
                    }
                }
            }
        }
        json.append('"');
    }

    /**
     * Appends {@code 2026-11-01T08:15:02.117Z} for milliseconds since the epoch (years 0 to
     * 9999), by H. Hinnant's {@code civil_from_days}, as the Rust engines do, without allocating.
     */
    static void appendRfc3339Millis(StringBuilder out, long millis) {
        long days = Math.floorDiv(millis, 86_400_000L);
        long inDay = Math.floorMod(millis, 86_400_000L);
        long shifted = days + 719_468;
        long era = Math.floorDiv(shifted, 146_097L);
        long dayOfEra = shifted - era * 146_097;
        long yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365;
        long dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100);
        long monthFromMarch = (5 * dayOfYear + 2) / 153;
        long day = dayOfYear - (153 * monthFromMarch + 2) / 5 + 1;
        long month = monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9;
        long year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0);
        digits(out, year, 4).append('-');
        digits(out, month, 2).append('-');
        digits(out, day, 2).append('T');
        digits(out, inDay / 3_600_000, 2).append(':');
        digits(out, inDay / 60_000 % 60, 2).append(':');
        digits(out, inDay / 1000 % 60, 2).append('.');
        digits(out, inDay % 1000, 3).append('Z');
    }

    private static final long[] POWERS_OF_TEN = {1, 10, 100, 1000};

    private static StringBuilder digits(StringBuilder out, long value, int width) {
        for (long divisor = POWERS_OF_TEN[width - 1]; divisor > 0; divisor /= 10) {
            out.append((char) ('0' + (value / divisor) % 10));
        }
        return out;
    }
}
