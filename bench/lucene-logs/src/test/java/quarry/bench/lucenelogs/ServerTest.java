package quarry.bench.lucenelogs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.github.luben.zstd.ZstdOutputStream;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.store.ByteBuffersDirectory;
import org.apache.lucene.store.Directory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The answers over the six events {@code tantivy-logs}' own test indexes (two segments, sorted
 * by {@code _time}), so both peers are held to the same expectations.
 */
class ServerTest {
    private static final String[] BATCH_1 = {
        "{\"_time\":\"2026-11-01T00:00:10.000Z\",\"service\":\"nginx\",\"level\":\"INFO\","
                + "\"message\":\"GET /api/login done\",\"path\":\"/api/login\",\"status\":200,"
                + "\"latency_ms\":10,\"client_ip\":\"10.0.0.1\"}",
        "{\"_time\":\"2026-11-01T00:00:59.999Z\",\"service\":\"nginx\",\"level\":\"ERROR\","
                + "\"message\":\"upstream error timeout\",\"path\":\"/api/login\",\"status\":503,"
                + "\"latency_ms\":3000,\"client_ip\":\"10.0.0.2\"}",
        "{\"_time\":\"2026-11-01T00:01:00.000Z\",\"service\":\"hdfs\",\"level\":\"WARN\","
                + "\"message\":\"Receiving block blk_1 src\",\"extra\":{\"nested\":[1,2]}}",
    };
    private static final String[] BATCH_2 = {
        "{\"_time\":\"2026-11-01T00:02:30.500Z\",\"service\":\"nginx\",\"level\":\"ERROR\","
                + "\"message\":\"Error again\",\"path\":\"/api/login\",\"status\":503,"
                + "\"latency_ms\":1500,\"client_ip\":\"10.0.0.2\"}",
        "{\"_time\":\"2026-11-01T00:02:31.000Z\",\"service\":\"NGINX\",\"level\":\"INFO\","
                + "\"message\":\"fine\",\"path\":\"/api/login\",\"status\":200,"
                + "\"latency_ms\":20,\"client_ip\":\"10.0.0.1\"}",
        "{\"_time\":\"2026-11-01T00:00:05.000Z\",\"service\":\"hdfs\",\"level\":\"ERROR\","
                + "\"message\":\"disk error\"}",
    };

    private static long t(String text) {
        return LogSchema.parseMillis(text);
    }

    private static Path write(Path dir, String name, String[] lines, boolean zstd) throws IOException {
        Path file = dir.resolve(name);
        byte[] bytes = (String.join("\n", lines) + "\n").getBytes(StandardCharsets.UTF_8);
        try (OutputStream out = zstd
                ? new ZstdOutputStream(Files.newOutputStream(file))
                : Files.newOutputStream(file)) {
            out.write(bytes);
        }
        return file;
    }

    @Test
    void answersRequestsOverASmallIndex(@TempDir Path dir) throws IOException {
        // One plain and one zstd file: both readers, two segments.
        Path plain = write(dir, "batch-1.json", BATCH_1, false);
        Path compressed = write(dir, "batch-2.json.zst", BATCH_2, true);
        try (Directory directory = new ByteBuffersDirectory()) {
            try (IndexWriter writer = new IndexWriter(directory, Indexer.config())) {
                assertEquals(3, Indexer.addEvents(writer, plain)[0]);
                writer.commit();
                assertEquals(3, Indexer.addEvents(writer, compressed)[0]);
            }
            try (DirectoryReader reader = DirectoryReader.open(directory)) {
                assertEquals(2, reader.leaves().size());
                Server server = new Server(new IndexSearcher(reader));
                long t0 = t("2026-11-01T00:00:00.000Z");
                long minute = t0 / 60_000;
                String[][] cases = {
                    {"COUNT\t*", "6"},
                    {"COUNT\terror", "3"},
                    {"COUNT\tERROR", "3"},
                    {"COUNT\tlevel:error", "3"},
                    {"COUNT\tservice:nginx", "4"},
                    {"COUNT\tservice:nginx AND status:503", "2"},
                    {"COUNT\tpath:login", "4"},
                    {"COUNT\tpath:/api/login", "4"},
                    {"COUNT\tlatency_ms:[1000 TO 30000]", "2"},
                    {"COUNT\tnothing", "0"},
                    {"COUNT\t_time:[" + t0 + " TO " + (t0 + 60_000) + "]", "4"},
                    {"COUNT\t_time:" + t("2026-11-01T00:02:30.500Z"), "1"},
                    {"TAIL\t2\terror", "2 " + t("2026-11-01T00:02:30.500Z") + " "
                            + t("2026-11-01T00:00:59.999Z")},
                    {"HEAD\t10\terror", "3 " + t("2026-11-01T00:00:05.000Z") + " "
                            + t("2026-11-01T00:02:30.500Z")},
                    {"TAIL\t5\tnothing", "0"},
                    // TAILEV digests leave out the events of the last millisecond (the values
                    // of tantivy-logs' test: 2049 for 00:02:30.500, 3560 for 00:00:59.999).
                    {"TAILEV\t2\terror", "2 " + t("2026-11-01T00:02:30.500Z") + " "
                            + t("2026-11-01T00:00:59.999Z") + " 2049"},
                    {"TAILEV\t10\terror", "3 " + t("2026-11-01T00:02:30.500Z") + " "
                            + t("2026-11-01T00:00:05.000Z") + " " + (2049 + 3560)},
                    {"TAILEV\t5\tnothing", "0"},
                    {"TAILEV\t0\t*", "ERROR"},
                    {"HISTOGRAM\t60\t*", "3 6 "
                            + (minute * 60 * 3 + (minute + 1) * 60 + (minute + 2) * 60 * 2)},
                    {"HISTOGRAM\t3600\tnothing", "0 0 0"},
                    {"TERMS\tclient_ip\t10\t*", "10.0.0.1=2 10.0.0.2=2"},
                    {"TERMS\tlevel\t1\t*", "error=3"},
                    {"TERMS\tservice\t5\t*", "nginx=4 hdfs=2"},
                    {"TERMS\tclient_ip\t5\tnothing", ""},
                    {"STATS\tlatency_ms\t*", "4 10 3000 4530"},
                    {"STATS\tlatency_ms\tservice:hdfs", "0"},
                    {"PERCENTILES\tlatency_ms\tservice:hdfs", "0"},
                    // Rank floor(q * (n - 1)) of [1500, 3000]: rank 0 for all three.
                    {"PERCENTILES\tlatency_ms\tstatus:503", "1500 1500 1500"},
                    {"PERCENTILES\tlatency_ms\t*", "20 1500 1500"},
                    {"TOP_10\terror", "UNSUPPORTED"},
                    {"COUNT\tbad:field", "ERROR"},
                    {"TAIL\t0\t*", "ERROR"},
                };
                for (String[] c : cases) {
                    assertEquals(c[1], server.answer(c[0]), Arrays.toString(c));
                }
                // The event as JSON, stored fields in the order the input gave them.
                assertTrue(server.answer("TAILEV\t1\tfine").startsWith("1 "));
                assertEquals("{\"_time\":\"2026-11-01T00:02:31.000Z\",\"service\":\"NGINX\","
                        + "\"level\":\"INFO\",\"message\":\"fine\",\"path\":\"/api/login\","
                        + "\"status\":200,\"latency_ms\":20,\"client_ip\":\"10.0.0.1\"}",
                        server.lastEventJson());

                // A malformed UTF-8 byte (0xff) is replaced, not fatal; the last line needs no
                // line break.
                ByteArrayOutputStream out = new ByteArrayOutputStream();
                ByteArrayOutputStream requests = new ByteArrayOutputStream();
                requests.writeBytes("COUNT\t*\nNOPE\r\nCOUNT\twarn\nCOUNT\t".getBytes(StandardCharsets.UTF_8));
                requests.write(0xff);
                requests.writeBytes("\nCOUNT\tfine".getBytes(StandardCharsets.UTF_8));
                server.serve(new ByteArrayInputStream(requests.toByteArray()), out);
                // Every answer line ends with its engine time, <TAB>NANOS.
                String served = out.toString(StandardCharsets.UTF_8);
                assertTrue(served.endsWith("\n"), served);
                List<String> answers = new ArrayList<>();
                for (String answerLine : served.split("\n")) {
                    int tab = answerLine.lastIndexOf('\t');
                    assertTrue(tab >= 0, answerLine);
                    assertTrue(answerLine.substring(tab + 1).matches("[0-9]+"), answerLine);
                    answers.add(answerLine.substring(0, tab));
                }
                assertEquals(List.of("6", "UNSUPPORTED", "0", "0", "1"), answers);
            }
        }
    }

    @Test
    void writesTimestamps() {
        Object[][] cases = {
            {0L, "1970-01-01T00:00:00.000Z"},
            {-1L, "1969-12-31T23:59:59.999Z"},
            {951_825_600_000L, "2000-02-29T12:00:00.000Z"},
            {1_793_520_902_117L, "2026-11-01T08:15:02.117Z"},
            {253_402_300_799_999L, "9999-12-31T23:59:59.999Z"},
        };
        for (Object[] c : cases) {
            StringBuilder out = new StringBuilder();
            EventWriter.appendRfc3339Millis(out, (Long) c[0]);
            assertEquals(c[1], out.toString());
        }
        // Every day of four centuries survives the round trip through the parser.
        for (long day = -73_000; day < 73_000; day++) {
            long m = day * 86_400_000L + Math.floorMod(day, 86_400L) * 1000 + 7;
            StringBuilder out = new StringBuilder();
            EventWriter.appendRfc3339Millis(out, m);
            assertEquals(m, t(out.toString()), out.toString());
        }
    }

    @Test
    void parsesTimestamps() {
        assertEquals(0, t("1970-01-01T00:00:00.000Z"));
        assertEquals(-1, t("1969-12-31T23:59:59.999Z"));
        assertEquals(1_793_520_902_117L, t("2026-11-01T08:15:02.117Z"));
        assertEquals(1_793_520_902_100L, t("2026-11-01T08:15:02.1Z"));
        assertEquals(1_793_520_902_117L, t("2026-11-01T08:15:02.117999Z"));
        assertEquals(1_793_520_902_117L, t("2026-11-01T09:15:02.117+01:00"));
        assertEquals(951_825_600_000L, t("2000-02-29T12:00:00Z"));
        for (String bad : new String[] {"2026-02-29T00:00:00.000Z", "2026-11-01T24:00:00.000Z",
                "2026-11-01T08:15:02", "x"}) {
            assertThrows(IllegalArgumentException.class, () -> t(bad), bad);
        }
    }
}
