package quarry.bench.lucene;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code lucene-bench}: Apache Lucene as a peer in Quarry's side-by-side benchmarks, the Java
 * twin of {@code tantivy-bench}.
 *
 * <pre>
 * java -jar lucene-bench.jar index --index DIR [--schema wiki|game] FILE.json.zst
 * java -jar lucene-bench.jar serve --index DIR [--threads N] [--multiterm] [--engine-time]
 * </pre>
 *
 * <ul>
 *   <li>{@code index} builds a one-segment index of a Wikipedia JSON-lines file (or, with
 *       {@code --schema game}, of the search-benchmark-game's {@code {"id","text"}} corpus) and
 *       prints one JSON line of figures ({@link Indexer});
 *   <li>{@code serve} answers search requests on stdin in the search-benchmark-game protocol,
 *       for {@code search-driver} to time ({@link Server}).
 * </ul>
 */
public final class Main {
    private static final String USAGE =
            """
            usage: lucene-bench index --index DIR [--schema wiki|game] FILE.json.zst
                   lucene-bench serve --index DIR [--threads N] [--multiterm] [--engine-time]""";

    private Main() {}

    public static void main(String[] args) throws IOException {
        if (args.length == 0) {
            fail("no subcommand");
        }
        Path index = null;
        // serve's search threads: 1 answers in request order, N > 1 tags answers with IDs.
        int threads = 1;
        boolean multiterm = false;
        boolean engineTime = false;
        Schema.Kind schema = null;
        List<String> positional = new ArrayList<>();
        for (int i = 1; i < args.length; i++) {
            String arg = args[i];
            if (arg.equals("--index")) {
                if (i + 1 == args.length) {
                    fail("--index needs a directory");
                }
                index = Path.of(args[++i]);
            } else if (arg.startsWith("--index=")) {
                index = Path.of(arg.substring("--index=".length()));
            } else if (arg.equals("--threads")) {
                if (i + 1 == args.length) {
                    fail("--threads needs a number");
                }
                threads = parseThreads(args[++i]);
            } else if (arg.startsWith("--threads=")) {
                threads = parseThreads(arg.substring("--threads=".length()));
            } else if (arg.equals("--schema") || arg.startsWith("--schema=")) {
                String name;
                if (arg.equals("--schema")) {
                    if (i + 1 == args.length) {
                        fail("--schema needs wiki or game");
                    }
                    name = args[++i];
                } else {
                    name = arg.substring("--schema=".length());
                }
                schema = Schema.Kind.parse(name);
                if (schema == null) {
                    fail("--schema is wiki or game, not " + name);
                }
            } else if (arg.equals("--multiterm")) {
                multiterm = true;
            } else if (arg.equals("--engine-time")) {
                engineTime = true;
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
                if (threads != 1) {
                    fail("index runs on one thread: --threads is for serve");
                }
                Schema.Kind kind = schema == null ? Schema.Kind.WIKI : schema;
                Indexer.Summary summary = Indexer.run(index, Path.of(positional.get(0)), kind);
                System.out.println(summary.toJson());
            }
            case "serve" -> {
                if (!positional.isEmpty()) {
                    fail("serve takes no file");
                }
                if (schema != null) {
                    fail("serve finds the schema in the index: --schema is for index");
                }
                Server.run(index, threads, new Server.Options(multiterm, engineTime));
            }
            default -> fail("unknown subcommand " + args[0]);
        }
    }

    private static int parseThreads(String text) {
        try {
            int threads = Integer.parseInt(text);
            if (threads >= 1) {
                return threads;
            }
        } catch (NumberFormatException e) {
            // Reported below, as a number below 1 is.
        }
        fail("--threads must be a number of at least 1, not " + text);
        return 1; // not reached: fail() exits
    }

    private static void fail(String message) {
        System.err.println("lucene-bench: " + message);
        System.err.println(USAGE);
        System.exit(2);
    }
}
