package quarry.bench.lucene;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.queryparser.classic.MultiFieldQueryParser;
import org.apache.lucene.queryparser.classic.QueryParser;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.search.TopScoreDocCollectorManager;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.MMapDirectory;

/**
 * {@code lucene-bench serve}: answers search requests on stdin, one line each, in the protocol
 * of the search-benchmark-game (quickwit-oss/search-benchmark-game), as {@code tantivy-bench
 * serve} does.
 *
 * <p>A request is {@code COMMAND\tquery}; the answer is one line, flushed at once:
 *
 * <table>
 *   <tr><th>command</th><th>work</th><th>answer</th></tr>
 *   <tr><td>{@code COUNT}</td><td>count the matches</td><td>the count</td></tr>
 *   <tr><td>{@code TOP_k}</td><td>the k best matches by BM25</td><td>{@code 1}</td></tr>
 *   <tr><td>{@code TOP_k_COUNT}</td><td>the k best and the count</td><td>the count</td></tr>
 *   <tr><td>anything else</td><td>none</td><td>{@code UNSUPPORTED}</td></tr>
 * </table>
 *
 * <p>A query the parser rejects, or a request with no tab, is answered {@code ERROR}. Queries
 * are parsed by the classic {@link QueryParser} (through {@link MultiFieldQueryParser} over
 * {@code url}, {@code title} and {@code body}, terms ORed unless marked {@code +}), with the
 * analyzer the index was built with. Search runs on the calling thread only (the searcher has
 * no executor), with BM25 (Lucene's default similarity) and no query cache, so repeated clauses
 * are not served from a cache the other engines do not have.
 */
final class Server {
    private final IndexSearcher searcher;
    private final Analyzer analyzer = Schema.analyzer();

    Server(IndexSearcher searcher) {
        this.searcher = searcher;
        searcher.setQueryCache(null);
    }

    static void run(Path indexDir) throws IOException {
        try (Directory directory = new MMapDirectory(indexDir);
                DirectoryReader reader = DirectoryReader.open(directory)) {
            new Server(new IndexSearcher(reader))
                    .serve(System.in, new FileOutputStream(FileDescriptor.out));
        }
    }

    /** Answers every request line of {@code in} on {@code out}, flushing after each answer. */
    void serve(InputStream in, OutputStream out) throws IOException {
        // A malformed UTF-8 byte becomes U+FFFD (the decoder's default action is to replace),
        // so a stray Latin-1 query is answered, not fatal.
        BufferedReader input =
                new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8), 1 << 16);
        Writer output = new BufferedWriter(new OutputStreamWriter(out, StandardCharsets.UTF_8));
        String request;
        while ((request = input.readLine()) != null) {
            output.write(answer(request));
            output.write('\n');
            output.flush();
        }
    }

    /** The answer line (without its line break) to one request line. */
    String answer(String request) throws IOException {
        int tab = request.indexOf('\t');
        if (tab < 0) {
            return "ERROR";
        }
        Command command = Command.parse(request.substring(0, tab));
        if (command == null) {
            return "UNSUPPORTED";
        }
        Query query = parse(request.substring(tab + 1));
        if (query == null) {
            return "ERROR";
        }
        try {
            return switch (command) {
                case Command.Count c -> Integer.toString(searcher.count(query));
                case Command.Top(int k, boolean count) when !count -> {
                    // Lucene's normal top-k path: hits are counted exactly up to the default
                    // threshold (1,000) only, which lets it skip blocks that cannot compete.
                    TopDocs top = searcher.search(query, k);
                    blackHole(top);
                    yield "1";
                }
                case Command.Top(int k, boolean count) -> {
                    // The count must be exact: count every hit while keeping the top k, as
                    // tantivy's (TopDocs, Count) pair does.
                    TopDocs top = searcher.search(
                            query, new TopScoreDocCollectorManager(k, Integer.MAX_VALUE));
                    blackHole(top);
                    yield Long.toString(top.totalHits.value());
                }
            };
        } catch (IndexSearcher.TooManyClauses e) {
            // More leaf clauses than IndexSearcher allows (1,024): Lucene refuses the query.
            return "ERROR";
        }
    }

    /**
     * The query, or {@code null} when the parser rejects it. A new parser per query: the
     * classic parser keeps state while parsing and is not meant to be reused across threads,
     * and building one is cheap next to a search.
     */
    Query parse(String text) {
        QueryParser parser = new MultiFieldQueryParser(Schema.SEARCHED, analyzer);
        parser.setDefaultOperator(QueryParser.Operator.OR);
        try {
            return parser.parse(text);
        } catch (org.apache.lucene.queryparser.classic.ParseException
                | org.apache.lucene.queryparser.classic.TokenMgrError
                | RuntimeException e) {
            // ParseException: syntax and lexer errors (an unbalanced quote or parenthesis, a
            // doubled `++`, a leading `*`, a trailing `\`); TokenMgrError: the same, should a
            // lexer error ever escape parse() unwrapped; RuntimeException: a `/regexp/` that
            // is not one, or an automaton too complex to build.
            return null;
        }
    }

    /** Keeps the JIT from proving the top hits unused and dropping the work. */
    private static volatile Object sink;

    private static void blackHole(TopDocs top) {
        sink = top.scoreDocs;
    }

    /** A protocol command: {@code COUNT}, {@code TOP_k} or {@code TOP_k_COUNT}. */
    sealed interface Command {
        record Count() implements Command {}

        record Top(int k, boolean count) implements Command {}

        /** The command, or {@code null} when it is not one this engine knows. */
        static Command parse(String text) {
            if (text.equals("COUNT")) {
                return new Count();
            }
            if (!text.startsWith("TOP_")) {
                return null;
            }
            String k = text.substring("TOP_".length());
            boolean count = k.endsWith("_COUNT");
            if (count) {
                k = k.substring(0, k.length() - "_COUNT".length());
            }
            // Only plain decimal digits: Integer.parseInt would also take a leading `+`.
            if (k.isEmpty() || k.length() > 9 || !k.chars().allMatch(c -> c >= '0' && c <= '9')) {
                return null;
            }
            int n = Integer.parseInt(k);
            return n > 0 ? new Top(n, count) : null;
        }
    }
}
