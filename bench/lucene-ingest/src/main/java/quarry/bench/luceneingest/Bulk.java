package quarry.bench.luceneingest;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.lucene.document.Document;

/**
 * An Elasticsearch {@code _bulk} body (NDJSON: an action line, then the document) and the reply
 * Elasticsearch gives.
 *
 * <p>Only {@code index} and {@code create} actions are taken, their metadata ({@code _index},
 * {@code _id}) ignored: one index, no ids. An item whose action or document is malformed fails
 * with status 400 and the others are indexed, as in Elasticsearch; an unknown action is read as
 * a lone line (the next line is taken as the next action).
 */
final class Bulk {
    private Bulk() {}

    private static final JsonFactory JSON = new JsonFactory();

    /** One item: a document to index, or why there is none. */
    sealed interface Item {
        record Add(Document document) implements Item {}

        record Failed(String reason) implements Item {}
    }

    static List<Item> parse(byte[] body) {
        List<Item> items = new ArrayList<>();
        int position = 0;
        boolean expectDocument = false;
        while (position < body.length) {
            int end = position;
            while (end < body.length && body[end] != '\n') {
                end++;
            }
            int start = position;
            int stop = end;
            position = end + 1;
            while (start < stop && isWhitespace(body[start])) {
                start++;
            }
            while (stop > start && isWhitespace(body[stop - 1])) {
                stop--;
            }
            if (start == stop) {
                continue;
            }
            if (expectDocument) {
                expectDocument = false;
                try {
                    items.add(new Item.Add(EventSchema.parse(body, start, stop - start)));
                } catch (EventSchema.MalformedEvent e) {
                    items.add(new Item.Failed(e.getMessage()));
                }
            } else {
                String problem = checkAction(body, start, stop - start);
                if (problem == null) {
                    expectDocument = true;
                } else {
                    items.add(new Item.Failed(problem));
                }
            }
        }
        if (expectDocument) {
            items.add(new Item.Failed("the body ends after an action line"));
        }
        return items;
    }

    private static boolean isWhitespace(byte b) {
        return b == ' ' || b == '\t' || b == '\r';
    }

    /** Null for an {@code index} or {@code create} action, else what is wrong with it. */
    private static String checkAction(byte[] body, int offset, int length) {
        try (JsonParser parser = JSON.createParser(body, offset, length)) {
            if (parser.nextToken() == JsonToken.START_OBJECT && parser.nextToken() == JsonToken.FIELD_NAME) {
                String action = parser.currentName();
                if (parser.nextToken() == JsonToken.START_OBJECT) {
                    parser.skipChildren();
                    if (parser.nextToken() == JsonToken.END_OBJECT && parser.nextToken() == null) {
                        return action.equals("index") || action.equals("create")
                                ? null
                                : "unsupported action " + action + ": only index and create are";
                    }
                }
            }
        } catch (IOException e) {
            // Reported below.
        }
        return "malformed action line " + new String(body, offset, length, StandardCharsets.UTF_8);
    }

    /**
     * Elasticsearch's reply, every item in full as Elasticsearch writes it (the driver reads the
     * same bytes from every engine):
     * {@code {"took":MS,"errors":BOOL,"items":[{"index":{"_index":"default","_id":ID,"_version":1,
     * "result":"created","_shards":{...},"_seq_no":N,"_primary_term":1,"status":201}},...]}}; a
     * failed item is
     * {@code {"index":{"_index":"default","_id":null,"status":400,"error":{"type":"mapper_parsing_exception","reason":...}}}}.
     * {@code failures} holds the reason of each failed item, null for an indexed one; ids are
     * {@code idPrefix-N} and sequence numbers count from {@code firstSeqNo}.
     */
    static String reply(List<String> failures, long tookMillis, String idPrefix, long firstSeqNo) {
        boolean errors = failures.stream().anyMatch(f -> f != null);
        StringBuilder out = new StringBuilder(40 + failures.size() * 220);
        long seqNo = firstSeqNo;
        out.append("{\"took\":").append(tookMillis).append(",\"errors\":").append(errors).append(",\"items\":[");
        for (int i = 0; i < failures.size(); i++) {
            if (i > 0) {
                out.append(',');
            }
            String failure = failures.get(i);
            if (failure == null) {
                out.append("{\"index\":{\"_index\":\"default\",\"_id\":\"").append(idPrefix).append('-').append(i)
                        .append("\",\"_version\":1,\"result\":\"created\",\"_shards\":{\"total\":1,\"successful\":1,\"failed\":0},\"_seq_no\":")
                        .append(seqNo++).append(",\"_primary_term\":1,\"status\":201}}");
            } else {
                out.append("{\"index\":{\"_index\":\"default\",\"_id\":null,\"status\":400,\"error\":{\"type\":\"mapper_parsing_exception\",\"reason\":");
                quote(out, failure);
                out.append("}}}");
            }
        }
        return out.append("]}").toString();
    }

    /** Appends {@code text} as a JSON string. */
    static void quote(StringBuilder out, String text) {
        out.append('"');
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        out.append('"');
    }
}
