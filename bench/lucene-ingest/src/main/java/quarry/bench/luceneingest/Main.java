package quarry.bench.luceneingest;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Path;

/**
 * {@code lucene-ingest}: Apache Lucene behind an Elasticsearch-like HTTP ingest API, the Lucene
 * peer of Quarry's ingest benchmark ({@code bench/run-ingest.sh}).
 *
 * <pre>
 * java -jar lucene-ingest.jar --data DIR [--listen 127.0.0.1:0] [--threads 16] [--write-threads CORES]
 *      [--ram-buffer-mb MB] [--refresh-ms 1000] [--flush-threshold-mb 512]
 * </pre>
 *
 * <p>Prints {@code lucene-ingest listening on http://ADDR} on stdout once it accepts requests. On
 * SIGTERM or SIGINT it stops accepting, lets requests in flight finish, commits, trims the
 * translog and exits. {@link Engine} describes the indexing, durability and refresh.
 */
public final class Main {
    private static final String USAGE =
            """
            usage: lucene-ingest --data DIR [--listen 127.0.0.1:0] [--threads 16] [--write-threads CORES]
                                 [--ram-buffer-mb MB] [--refresh-ms 1000] [--flush-threshold-mb 512]""";

    private Main() {}

    public static void main(String[] args) throws IOException {
        Path data = null;
        String listen = "127.0.0.1:0";
        int threads = 16;
        int writeThreads = Runtime.getRuntime().availableProcessors();
        Engine.Options defaults = Engine.Options.defaults();
        double ramBufferMb = defaults.ramBufferMb();
        long refreshMillis = defaults.refreshMillis();
        long flushThresholdBytes = defaults.flushThresholdBytes();
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            if (i + 1 == args.length) {
                fail(arg.startsWith("--") ? arg + " needs a value" : "unexpected " + arg);
            }
            String value = args[++i];
            try {
                switch (arg) {
                    case "--data" -> data = Path.of(value);
                    case "--listen" -> listen = value;
                    case "--threads" -> threads = Integer.parseInt(value);
                    case "--write-threads" -> writeThreads = Integer.parseInt(value);
                    case "--ram-buffer-mb" -> ramBufferMb = Double.parseDouble(value);
                    case "--refresh-ms" -> refreshMillis = Long.parseLong(value);
                    case "--flush-threshold-mb" -> flushThresholdBytes = Long.parseLong(value) << 20;
                    default -> fail("unknown option " + arg);
                }
            } catch (NumberFormatException e) {
                fail(arg + " needs a number, not " + value);
            }
        }
        if (data == null) {
            fail("--data is required");
        }
        if (threads < 1 || writeThreads < 1 || refreshMillis < 1) {
            fail("--threads, --write-threads and --refresh-ms must be at least 1");
        }
        int colon = listen.lastIndexOf(':');
        if (colon < 0) {
            fail("--listen takes HOST:PORT");
        }
        InetSocketAddress address = new InetSocketAddress(
                InetAddress.getByName(listen.substring(0, colon)), Integer.parseInt(listen.substring(colon + 1)));

        // The JDK server writes a reply's head and body separately: without TCP_NODELAY the body
        // waits for the client's delayed ACK (40 ms on Linux) on every request.
        System.setProperty("sun.net.httpserver.nodelay", "true");
        Engine engine = new Engine(data, new Engine.Options(ramBufferMb, refreshMillis, flushThresholdBytes));
        Server server = new Server(engine, address, threads, writeThreads);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            server.stop();
            try {
                engine.close();
                System.err.println("lucene-ingest: shut down");
            } catch (IOException e) {
                System.err.println("lucene-ingest: shutdown failed: " + e);
            }
        }, "shutdown"));
        server.start();
        InetSocketAddress bound = server.address();
        System.out.println("lucene-ingest listening on http://" + bound.getAddress().getHostAddress() + ":" + bound.getPort());
        System.out.flush();
    }

    private static void fail(String message) {
        System.err.println("lucene-ingest: " + message);
        System.err.println(USAGE);
        System.exit(2);
    }
}
