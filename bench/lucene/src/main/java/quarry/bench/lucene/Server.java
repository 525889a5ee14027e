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
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.Term;
import org.apache.lucene.queryparser.classic.MultiFieldQueryParser;
import org.apache.lucene.queryparser.classic.QueryParser;
import org.apache.lucene.search.FuzzyQuery;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.MultiTermQuery;
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
 * {@code url}, {@code title} and {@code body}, or {@code text} alone in an index of the game's
 * schema, {@link Schema#searchedFields}; terms ORed unless marked {@code +}), with the
 * analyzer the index was built with. Each query is searched on one thread (the searcher has
 * no executor), with BM25 (Lucene's default similarity) and no query cache, so repeated clauses
 * are not served from a cache the other engines do not have.
 *
 * <p>With one thread (the default, used for latency) each request is searched on the thread
 * that reads it, one at a time ({@link #serve}). With {@code --threads N}, N &gt; 1 (for
 * throughput), the reading thread hands each request to a work-stealing pool of N search
 * threads and every answer line becomes {@code ID\tanswer}, ID the request's 0-based line
 * number, in completion order ({@link #servePool}).
 *
 * <p>With {@code --multiterm} ({@link Options#multiterm}) the parser reads the multi-term query
 * set of {@code bench/multiterm} the way Quarry does: leading wildcards allowed, and a fuzzy
 * term matches every term within its edits ({@link MultiTermQuery#CONSTANT_SCORE_BLENDED_REWRITE},
 * instead of the classic parser's default of the 50 best terms); prefix, wildcard, regex and
 * range queries already rewrite to a constant score, so no expansion hits the clause limit.
 * With {@code --engine-time} every answer ends with {@code \tNANOS}, the time from just after
 * the request was read to just after its answer was formatted (bench/logs/PROTOCOL.md); with
 * one search thread only, the pool's answers carry none.
 */
final class Server {
    /** Options of {@code serve}. */
    record Options(boolean multiterm, boolean engineTime) {
        static final Options DEFAULT = new Options(false, false);
    }

    private final IndexSearcher searcher;
    private final Analyzer analyzer = Schema.analyzer();
    private final Options options;
    /** The fields bare words search, found from the index. */
    private final String[] searched;

    Server(IndexSearcher searcher) {
        this(searcher, Options.DEFAULT);
    }

    Server(IndexSearcher searcher, Options options) {
        this.searcher = searcher;
        this.options = options;
        this.searched = Schema.searchedFields(searcher.getIndexReader());
        searcher.setQueryCache(null);
    }

    static void run(Path indexDir, int threads, Options options) throws IOException {
        try (Directory directory = new MMapDirectory(indexDir);
                DirectoryReader reader = DirectoryReader.open(directory)) {
            Server server = new Server(new IndexSearcher(reader), options);
            OutputStream out = new FileOutputStream(FileDescriptor.out);
            if (threads > 1) {
                server.servePool(System.in, out, threads);
            } else {
                server.serve(System.in, out);
            }
        }
    }

    /** Answers every request line of {@code in} on {@code out}, flushing after each answer. */
    void serve(InputStream in, OutputStream out) throws IOException {
        BufferedReader input = reader(in);
        Writer output = new BufferedWriter(new OutputStreamWriter(out, StandardCharsets.UTF_8));
        String request;
        while ((request = input.readLine()) != null) {
            long started = System.nanoTime();
            String answer = answer(request);
            output.write(answer);
            if (options.engineTime()) {
                output.write('\t');
                output.write(Long.toString(System.nanoTime() - started));
            }
            output.write('\n');
            output.flush();
        }
    }

    /**
     * Reads every request line of {@code in} on this thread and answers it on a {@link
     * ForkJoinPool} of {@code threads} threads: each answer is written to {@code out} as {@code
     * ID\tanswer} under the writer's lock and flushed as soon as it is ready. Returns once every
     * request read is answered; the first failure stops the reading and is thrown.
     */
    void servePool(InputStream in, OutputStream out, int threads) throws IOException {
        BufferedReader input = reader(in);
        Writer output = new BufferedWriter(new OutputStreamWriter(out, StandardCharsets.UTF_8));
        AtomicReference<Exception> failure = new AtomicReference<>();
        // close() (end of the try) waits until every submitted request is answered.
        try (ForkJoinPool pool = new ForkJoinPool(threads)) {
            String request;
            for (long id = 0; failure.get() == null && (request = input.readLine()) != null; id++) {
                String line = request;
                long requestId = id;
                pool.execute(() -> {
                    try {
                        String reply = requestId + "\t" + answer(line) + "\n";
                        synchronized (output) {
                            output.write(reply);
                            output.flush();
                        }
                    } catch (IOException | RuntimeException e) {
                        failure.compareAndSet(null, e);
                    }
                });
            }
        }
        Exception e = failure.get();
        if (e instanceof IOException io) {
            throw io;
        } else if (e != null) {
            throw new IOException("answering a request", e);
        }
    }

    /**
     * Request lines as UTF-8: a malformed byte becomes U+FFFD (the decoder's default action is
     * to replace), so a stray Latin-1 query is answered, not fatal.
     */
    private static BufferedReader reader(InputStream in) {
        return new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8), 1 << 16);
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
        QueryParser parser = options.multiterm()
                ? new MultitermParser(searched, analyzer)
                : new MultiFieldQueryParser(searched, analyzer);
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

    /**
     * The classic parser as Quarry reads multi-term queries: a leading {@code *} or {@code ?}
     * is allowed, and a fuzzy term is every term within its edits (transpositions count one,
     * Lucene's default), not the 50 best: constant score, as Quarry's patterns are filters.
     * Prefix, wildcard, regex and term-range queries keep the parser's default rewrite,
     * {@link MultiTermQuery#CONSTANT_SCORE_BLENDED_REWRITE}, which never hits the clause limit.
     */
    static final class MultitermParser extends MultiFieldQueryParser {
        MultitermParser(String[] fields, Analyzer analyzer) {
            super(fields, analyzer);
            setAllowLeadingWildcard(true);
            setMultiTermRewriteMethod(MultiTermQuery.CONSTANT_SCORE_BLENDED_REWRITE);
        }

        @Override
        protected Query newFuzzyQuery(Term term, float minimumSimilarity, int prefixLength) {
            int edits = FuzzyQuery.floatToEdits(minimumSimilarity, term.text().codePointCount(0, term.text().length()));
            return new FuzzyQuery(
                    term,
                    edits,
                    prefixLength,
                    FuzzyQuery.defaultMaxExpansions,
                    FuzzyQuery.defaultTranspositions,
                    MultiTermQuery.CONSTANT_SCORE_BLENDED_REWRITE);
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
