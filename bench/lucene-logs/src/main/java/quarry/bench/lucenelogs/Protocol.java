package quarry.bench.lucenelogs;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The log benchmark's requests and query language ({@code bench/logs/PROTOCOL.md}), the Java
 * reading of the text {@code logs_driver::protocol} reads in Rust; both decide the same where
 * PROTOCOL.md is silent:
 *
 * <ul>
 *   <li>a clause value holds no whitespace; a keyword value is lowercased; {@code _time:v} is
 *       equality in milliseconds; ranges are inclusive, on integer fields and {@code _time} only;
 *   <li>{@code K} and {@code SECONDS} are plain decimal integers from 1 to 2^30; TERMS takes a
 *       keyword field, PERCENTILES and STATS an integer field;
 *   <li>an unknown command is {@link Unsupported} (answer {@code UNSUPPORTED}), anything else
 *       malformed a {@link Malformed} (answer {@code ERROR}).
 * </ul>
 */
final class Protocol {
    private Protocol() {}

    /** How a field is indexed, which decides what a clause on it means. */
    enum Kind {
        TIME,
        KEYWORD,
        TEXT,
        INTEGER
    }

    static final String TIME = "_time";
    static final String DEFAULT_TEXT_FIELD = "message";

    /** Every field of a generated event, in PROTOCOL.md's order. */
    static final Map<String, Kind> FIELDS = new LinkedHashMap<>();

    static {
        FIELDS.put(TIME, Kind.TIME);
        FIELDS.put("tenant", Kind.KEYWORD);
        FIELDS.put("service", Kind.KEYWORD);
        FIELDS.put("host", Kind.KEYWORD);
        FIELDS.put("level", Kind.KEYWORD);
        FIELDS.put("message", Kind.TEXT);
        FIELDS.put("method", Kind.KEYWORD);
        FIELDS.put("path", Kind.TEXT);
        FIELDS.put("status", Kind.INTEGER);
        FIELDS.put("latency_ms", Kind.INTEGER);
        FIELDS.put("bytes", Kind.INTEGER);
        FIELDS.put("client_ip", Kind.KEYWORD);
    }

    /** One clause of a query; a query is the conjunction of its clauses, none meaning all. */
    sealed interface Clause {
        /** The text field holds the word, as typed: the field's analyzer is applied later. */
        record Word(String field, String word) implements Clause {}

        /** The keyword field equals the (lowercased) value. */
        record Keyword(String field, String value) implements Clause {}

        /** The integer field, or {@code _time}, equals the value. */
        record Equals(String field, long value) implements Clause {}

        /** The integer field, or {@code _time}, is in {@code [lo, hi]}. */
        record Range(String field, long lo, long hi) implements Clause {}

        /**
         * The text field holds a token the wildcard matches ({@code *} any run, {@code ?} one
         * character; lowercased): {@code tim*}, {@code *eout}, {@code t?me}.
         */
        record Wildcard(String field, String wildcard) implements Clause {}

        /** {@code /regex/}: the text field holds a token the regex matches whole, as written. */
        record Regex(String field, String regex) implements Clause {}

        /**
         * {@code word~N}: the text field holds a token within N (0 to 2; {@code ~} alone is 2)
         * edits of the lowercased word, a transposition counting one.
         */
        record Fuzzy(String field, String term, int distance) implements Clause {}
    }

    sealed interface Request {
        List<Clause> filter();

        record Count(List<Clause> filter) implements Request {}

        record Tail(int k, List<Clause> filter) implements Request {}

        /** TAIL with the events: {@code TAILEV}. */
        record TailEvents(int k, List<Clause> filter) implements Request {}

        record Head(int k, List<Clause> filter) implements Request {}

        record Histogram(long seconds, List<Clause> filter) implements Request {}

        record Terms(String field, int k, List<Clause> filter) implements Request {}

        record Percentiles(String field, List<Clause> filter) implements Request {}

        record Stats(String field, List<Clause> filter) implements Request {}
    }

    /** The command is not one of the protocol's. */
    static final class Unsupported extends Exception {
        private static final long serialVersionUID = 1L;

        Unsupported(String command) {
            super("unsupported command " + command);
        }
    }

    /** The request does not follow the protocol. */
    static final class Malformed extends Exception {
        private static final long serialVersionUID = 1L;

        Malformed(String message) {
            super(message);
        }
    }

    /** The largest K or SECONDS, the bound the Rust reading has too. */
    static final int MAX_NUMBER = 1 << 30;

    private static final Pattern AND = Pattern.compile(Pattern.quote(" AND "));

    static Request parse(String line) throws Unsupported, Malformed {
        // -1 keeps trailing empty parts: "COUNT\t" has an (empty) query.
        String[] parts = line.split("\t", -1);
        int expected = switch (parts[0]) {
            case "COUNT" -> 2;
            case "TAIL", "TAILEV", "HEAD", "HISTOGRAM", "PERCENTILES", "STATS" -> 3;
            case "TERMS" -> 4;
            default -> throw new Unsupported(parts[0]);
        };
        if (parts.length != expected) {
            throw new Malformed(parts[0] + " takes " + expected + " tab-separated parts");
        }
        List<Clause> filter = parseFilter(parts[expected - 1]);
        return switch (parts[0]) {
            case "COUNT" -> new Request.Count(filter);
            case "TAIL" -> new Request.Tail(positive(parts[1]), filter);
            case "TAILEV" -> new Request.TailEvents(positive(parts[1]), filter);
            case "HEAD" -> new Request.Head(positive(parts[1]), filter);
            case "HISTOGRAM" -> new Request.Histogram(positive(parts[1]), filter);
            case "TERMS" -> new Request.Terms(
                    field(parts[1], Kind.KEYWORD), positive(parts[2]), filter);
            case "PERCENTILES" -> new Request.Percentiles(field(parts[1], Kind.INTEGER), filter);
            case "STATS" -> new Request.Stats(field(parts[1], Kind.INTEGER), filter);
            default -> throw new Unsupported(parts[0]);
        };
    }

    private static int positive(String text) throws Malformed {
        // Plain digits only (Integer.parseInt would take a leading '+'), at most 10 of them.
        if (text.isEmpty() || text.length() > 10 || !text.chars().allMatch(Protocol::isDigit)) {
            throw new Malformed("not a positive integer: " + text);
        }
        long value = Long.parseLong(text);
        if (value < 1 || value > MAX_NUMBER) {
            throw new Malformed("out of range: " + text);
        }
        return (int) value;
    }

    private static String field(String name, Kind kind) throws Malformed {
        if (FIELDS.get(name) != kind) {
            throw new Malformed(name + " is not a " + kind.name().toLowerCase(Locale.ROOT) + " field");
        }
        return name;
    }

    /** The clauses of a query; an empty list is {@code *}. */
    static List<Clause> parseFilter(String query) throws Malformed {
        if (query.equals("*")) {
            return List.of();
        }
        List<Clause> clauses = new ArrayList<>();
        for (String clause : AND.split(query, -1)) {
            clauses.add(parseClause(clause));
        }
        return List.copyOf(clauses);
    }

    private static Clause parseClause(String clause) throws Malformed {
        if (clause.isEmpty()) {
            throw new Malformed("empty clause");
        }
        int colon = clause.indexOf(':');
        if (colon < 0) {
            if (clause.equals("*")) {
                throw new Malformed("* joined to other clauses");
            }
            if (hasWhitespace(clause)) {
                throw new Malformed("whitespace inside clause " + clause);
            }
            return textClause(DEFAULT_TEXT_FIELD, clause);
        }
        String field = clause.substring(0, colon);
        String value = clause.substring(colon + 1);
        Kind kind = FIELDS.get(field);
        if (kind == null) {
            throw new Malformed("unknown field " + field);
        }
        if (value.startsWith("[")) {
            if (kind != Kind.INTEGER && kind != Kind.TIME) {
                throw new Malformed("range on " + field + ", which is not an integer field");
            }
            if (!value.endsWith("]") || value.length() < 2) {
                throw new Malformed("malformed range " + clause);
            }
            String inner = value.substring(1, value.length() - 1);
            int to = inner.indexOf(" TO ");
            if (to < 0) {
                throw new Malformed("malformed range " + clause);
            }
            return new Clause.Range(
                    field,
                    integer(field, inner.substring(0, to)),
                    integer(field, inner.substring(to + " TO ".length())));
        }
        if (value.isEmpty()) {
            throw new Malformed("no value for field " + field);
        }
        if (hasWhitespace(value)) {
            throw new Malformed("whitespace inside clause " + clause);
        }
        return switch (kind) {
            case KEYWORD -> new Clause.Keyword(field, value.toLowerCase(Locale.ROOT));
            case TEXT -> textClause(field, value);
            case INTEGER, TIME -> new Clause.Equals(field, integer(field, value));
        };
    }

    /** A value on a text field: a pattern (the Rust reading's {@code Pattern::of}) or a word. */
    private static Clause textClause(String field, String value) throws Malformed {
        // /regex/: slashes at both ends and none inside; a path (/api/login) is a word.
        if (value.length() >= 3 && value.startsWith("/") && value.endsWith("/")
                && value.indexOf('/', 1) == value.length() - 1) {
            return new Clause.Regex(field, value.substring(1, value.length() - 1));
        }
        int tilde = value.lastIndexOf('~');
        if (tilde >= 0) {
            String distance = value.substring(tilde + 1);
            int edits = switch (distance) {
                case "" -> 2;
                case "0" -> 0;
                case "1" -> 1;
                case "2" -> 2;
                default -> throw new Malformed("bad pattern " + value);
            };
            if (tilde == 0) {
                throw new Malformed("bad pattern " + value);
            }
            return new Clause.Fuzzy(field, value.substring(0, tilde).toLowerCase(Locale.ROOT), edits);
        }
        if (value.indexOf('*') >= 0 || value.indexOf('?') >= 0) {
            return new Clause.Wildcard(field, value.toLowerCase(Locale.ROOT));
        }
        return new Clause.Word(field, value);
    }

    private static long integer(String field, String text) throws Malformed {
        String digits = text.startsWith("-") ? text.substring(1) : text;
        if (digits.isEmpty() || !digits.chars().allMatch(Protocol::isDigit)) {
            throw new Malformed(field + " takes integers, not " + text);
        }
        try {
            return Long.parseLong(text);
        } catch (NumberFormatException e) {
            throw new Malformed(field + " takes 64-bit integers, not " + text);
        }
    }

    private static boolean isDigit(int c) {
        return c >= '0' && c <= '9';
    }

    private static boolean hasWhitespace(String text) {
        return text.codePoints().anyMatch(Character::isWhitespace);
    }
}
