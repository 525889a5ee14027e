package quarry.bench.lucenelogs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import quarry.bench.lucenelogs.Protocol.Clause;
import quarry.bench.lucenelogs.Protocol.Request;

/** The cases of {@code logs_driver::protocol}'s tests, read the same way in Java. */
class ProtocolTest {
    @Test
    void parsesQueries() throws Exception {
        assertEquals(List.of(), Protocol.parseFilter("*"));
        assertEquals(List.of(new Clause.Word("message", "Error")), Protocol.parseFilter("Error"));
        assertEquals(List.of(new Clause.Keyword("service", "nginx")), Protocol.parseFilter("service:NGINX"));
        assertEquals(List.of(new Clause.Word("path", "login")), Protocol.parseFilter("path:login"));
        assertEquals(
                List.of(new Clause.Keyword("service", "nginx"), new Clause.Equals("status", 503)),
                Protocol.parseFilter("service:nginx AND status:503"));
        assertEquals(
                List.of(new Clause.Keyword("service", "nginx"), new Clause.Range("latency_ms", 1000, 30000)),
                Protocol.parseFilter("service:nginx AND latency_ms:[1000 TO 30000]"));
        assertEquals(List.of(new Clause.Range("latency_ms", -5, 5)), Protocol.parseFilter("latency_ms:[-5 TO 5]"));
        assertEquals(
                List.of(new Clause.Wildcard("message", "tim*"), new Clause.Wildcard("path", "*ogin")),
                Protocol.parseFilter("Tim* AND path:*ogin"));
        assertEquals(List.of(new Clause.Wildcard("message", "t?me")), Protocol.parseFilter("message:t?me"));
        assertEquals(List.of(new Clause.Regex("message", "tim(e|ed)out")), Protocol.parseFilter("/tim(e|ed)out/"));
        assertEquals(
                List.of(new Clause.Fuzzy("message", "timout", 1), new Clause.Fuzzy("message", "exceptoin", 2)),
                Protocol.parseFilter("Timout~1 AND exceptoin~"));
        assertEquals(List.of(new Clause.Keyword("service", "ng*")), Protocol.parseFilter("service:ng*"));
        assertEquals(List.of(new Clause.Word("path", "/api/login")), Protocol.parseFilter("path:/api/login"));
        for (String bad : new String[] {
            "timout~3", "~1",
            "", "error AND ", " AND error", "two words", "nope:1", "service:", "status:abc",
            "status:+5", "service:[a TO b]", "latency_ms:[1 TO 2", "latency_ms:[1 2]",
            "latency_ms:[1 TO x]", "* AND error", "status:99999999999999999999"
        }) {
            assertThrows(Protocol.Malformed.class, () -> Protocol.parseFilter(bad), bad);
        }
    }

    @Test
    void parsesRequests() throws Exception {
        assertEquals(new Request.Count(List.of()), Protocol.parse("COUNT\t*"));
        assertEquals(new Request.Tail(100, List.of(new Clause.Word("message", "error"))),
                Protocol.parse("TAIL\t100\terror"));
        assertEquals(new Request.TailEvents(1000, List.of(new Clause.Word("message", "error"))),
                Protocol.parse("TAILEV\t1000\terror"));
        assertEquals(new Request.Histogram(3600, List.of()), Protocol.parse("HISTOGRAM\t3600\t*"));
        assertEquals(new Request.Terms("client_ip", 10, List.of()), Protocol.parse("TERMS\tclient_ip\t10\t*"));
        assertEquals(new Request.Percentiles("latency_ms", List.of()), Protocol.parse("PERCENTILES\tlatency_ms\t*"));
        assertEquals(new Request.Stats("bytes", List.of()), Protocol.parse("STATS\tbytes\t*"));
        for (String unsupported : new String[] {"TOP_10\terror", "count\t*", "no tab", "tailev\t10\t*"}) {
            assertThrows(Protocol.Unsupported.class, () -> Protocol.parse(unsupported), unsupported);
        }
        for (String bad : new String[] {
            "COUNT", "COUNT\t*\t*", "TAIL\t0\t*", "TAIL\t+5\t*", "TAIL\t99999999999999999999\t*",
            "TAILEV\t0\t*", "TAILEV\t10",
            "HISTOGRAM\t0\t*", "TERMS\tmessage\t10\t*", "TERMS\tclient_ip\t*",
            "PERCENTILES\tservice\t*", "STATS\t_time\t*", "COUNT\tbad:field"
        }) {
            assertThrows(Protocol.Malformed.class, () -> Protocol.parse(bad), bad);
        }
    }

    @Test
    void selectsLikeSorting() {
        Random random = new Random(42);
        for (int round = 0; round < 300; round++) {
            int n = 1 + random.nextInt(200);
            int range = 1 + random.nextInt(round % 2 == 0 ? 5 : 1_000_000);
            long[] values = new long[n];
            for (int i = 0; i < n; i++) {
                values[i] = random.nextInt(range) - range / 2;
            }
            long[] sorted = values.clone();
            java.util.Arrays.sort(sorted);
            StringBuilder expected = new StringBuilder();
            for (double q : Aggregations.PERCENTS) {
                expected.append(expected.length() > 0 ? " " : "").append(sorted[(int) (q * (n - 1))]);
            }
            assertEquals(expected.toString(), Aggregations.percentilesAnswer(values.clone()));
            int k = random.nextInt(n);
            assertEquals(sorted[k], Aggregations.select(values, 0, n, k));
        }
        assertEquals("0", Aggregations.percentilesAnswer(new long[0]));
    }
}
