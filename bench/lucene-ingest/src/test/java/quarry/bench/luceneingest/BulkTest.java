package quarry.bench.luceneingest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class BulkTest {
    private static List<Bulk.Item> parse(String body) {
        return Bulk.parse(body.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void readsIndexAndCreatePairs() {
        List<Bulk.Item> items = parse("""
                {"index":{"_index":"default"}}
                {"_time":"2026-11-01T00:00:00.312Z","service":"NGINX","status":503,"path":"/api/login","tags":["a"]}

                {"create":{}}\r
                {"@timestamp":"2026-11-01T01:00:00+01:00","marker":"m1","nested":{"x":1},"ok":true}\r
                """);
        assertEquals(2, items.size());
        var first = assertInstanceOf(Bulk.Item.Add.class, items.get(0)).document();
        assertEquals(1_793_491_200_312L, first.getField("_time").numericValue().longValue());
        assertEquals("nginx", first.get("service"));
        assertEquals(503L, first.getField("status").numericValue().longValue());
        assertTrue(first.getBinaryValue("_source").utf8ToString().startsWith("{\"_time\""));
        var second = assertInstanceOf(Bulk.Item.Add.class, items.get(1)).document();
        assertEquals(1_793_491_200_000L, second.getField("_time").numericValue().longValue());
        assertEquals("m1", second.get("marker"));
    }

    @Test
    void failedItemsDoNotStopTheRequest() {
        List<Bulk.Item> items = parse("""
                {"index":{}}
                {"_time":"yesterday"}
                {"delete":{"_id":"1"}}
                {"index":{}}
                not json
                {"index":{}}
                {"message":"fine"}
                {"index":{}}
                """);
        List<String> reasons = items.stream()
                .map(item -> item instanceof Bulk.Item.Failed failed ? failed.reason() : null)
                .toList();
        assertEquals(5, reasons.size());
        assertTrue(reasons.get(0).contains("RFC 3339"), reasons.get(0));
        assertTrue(reasons.get(1).contains("unsupported action delete"), reasons.get(1));
        assertTrue(reasons.get(2).contains("malformed JSON"), reasons.get(2));
        assertEquals(null, reasons.get(3));
        assertTrue(reasons.get(4).contains("ends after an action"), reasons.get(4));
    }

    @Test
    void parsesTimestamps() throws Exception {
        assertEquals(0L, EventSchema.parseMillis("1970-01-01T00:00:00.000Z"));
        assertEquals(951_782_400_123L, EventSchema.parseMillis("2000-02-29T00:00:00.123Z"));
        assertEquals(951_782_400_000L, EventSchema.parseMillis("2000-02-29T00:00:00Z"));
        assertEquals(951_778_800_000L, EventSchema.parseMillis("2000-02-29T00:00:00+01:00"));
        for (String bad : new String[] {"2001-02-29T00:00:00.000Z", "2000-13-01T00:00:00.000Z", "now", ""}) {
            assertThrows(EventSchema.MalformedEvent.class, () -> EventSchema.parseMillis(bad), bad);
        }
    }

    @Test
    void repliesLikeElasticsearch() {
        String reply = Bulk.reply(Arrays.asList(null, "bad \"x\"\n"), 7, "ab", 5);
        assertEquals("{\"took\":7,\"errors\":true,\"items\":[{\"index\":{\"_index\":\"default\",\"_id\":\"ab-0\","
                + "\"_version\":1,\"result\":\"created\",\"_shards\":{\"total\":1,\"successful\":1,\"failed\":0},"
                + "\"_seq_no\":5,\"_primary_term\":1,\"status\":201}},"
                + "{\"index\":{\"_index\":\"default\",\"_id\":null,\"status\":400,\"error\":{\"type\":\"mapper_parsing_exception\","
                + "\"reason\":\"bad \\\"x\\\"\\n\"}}}]}", reply);
        assertEquals("{\"took\":0,\"errors\":false,\"items\":[]}", Bulk.reply(List.of(), 0, "ab", 0));
    }

    @Test
    void readsQueryParameters() {
        assertEquals("marker:m12", Server.parameter("x=1&q=marker%3Am12", "q"));
        assertEquals("a b", Server.parameter("q=a+b", "q"));
        assertEquals(null, Server.parameter("x=1", "q"));
        assertEquals(null, Server.parameter(null, "q"));
    }
}
