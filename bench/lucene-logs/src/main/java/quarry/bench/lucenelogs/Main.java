package quarry.bench.lucenelogs;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code lucene-logs}: Apache Lucene as a peer in Quarry's log benchmark, the Java twin of
 * {@code tantivy-logs} (see {@code bench/logs/README.md}).
 *
 * <pre>
 * java -jar lucene-logs.jar index --index DIR [--schema logs|message] EVENTS.json[.zst]
 * java -jar lucene-logs.jar serve --index DIR
 * </pre>
 *
 * <ul>
 *   <li>{@code index} indexes a JSON-lines event file into an index sorted by {@code _time} and
 *       prints one JSON line of figures ({@link Indexer});
 *   <li>{@code serve} answers the log protocol on stdin, for {@code logs-driver} ({@link
 *       Server}).
 * </ul>
 */
public final class Main {
    private static final String USAGE =
            """
            usage: lucene-logs index --index DIR [--schema logs|message] EVENTS.json[.zst]
                   lucene-logs serve --index DIR""";

    private Main() {}

    public static void main(String[] args) throws IOException {
        if (args.length == 0) {
            fail("no subcommand");
        }
        Path index = null;
        // "logs" (the log benchmark's fields, sorted by _time) or "message" (only a message
        // text field, for {"message": line} events; bench/run-sizes.sh).
        String schema = "logs";
        List<String> positional = new ArrayList<>();
        for (int i = 1; i < args.length; i++) {
            String arg = args[i];
            if (arg.equals("--index")) {
                if (i + 1 == args.length) {
                    fail("--index needs a directory");
                }
                index = Path.of(args[++i]);
            } else if (arg.equals("--schema")) {
                if (i + 1 == args.length) {
                    fail("--schema needs logs or message");
                }
                schema = args[++i];
                if (!schema.equals("logs") && !schema.equals("message")) {
                    fail("unknown schema " + schema + " (logs or message)");
                }
            } else if (arg.startsWith("--index=")) {
                index = Path.of(arg.substring("--index=".length()));
            } else if (arg.startsWith("--")) {
                fail("unknown option " + arg);
            } else {
                positional.add(arg);
            }
        }
        if (index == null) {
            fail("--index is required");
        }
        switch (args[0]) {
            case "index" -> {
                if (positional.size() != 1) {
                    fail("index takes one input file");
                }
                boolean messageOnly = schema.equals("message");
                System.out.println(Indexer.run(index, Path.of(positional.get(0)), messageOnly).toJson());
            }
            case "serve" -> {
                if (!positional.isEmpty()) {
                    fail("serve takes no file");
                }
                Server.run(index);
            }
            default -> fail("unknown subcommand " + args[0]);
        }
    }

    private static void fail(String message) {
        System.err.println("lucene-logs: " + message);
        System.err.println(USAGE);
        System.exit(2);
    }
}
