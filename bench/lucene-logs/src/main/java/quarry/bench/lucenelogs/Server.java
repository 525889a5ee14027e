package quarry.bench.lucenelogs;

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
import org.apache.lucene.index.StoredFields;
import org.apache.lucene.search.FieldDoc;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.Sort;
import org.apache.lucene.search.SortField;
import org.apache.lucene.search.TopFieldCollectorManager;
import org.apache.lucene.search.TopFieldDocs;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.MMapDirectory;

/**
 * {@code lucene-logs serve}: answers the log protocol ({@code bench/logs/PROTOCOL.md}) on
 * stdin, one flushed line per request, searching on the calling thread (no executor) with the
 * query cache off, so a repeated filter is not served from a cache the other engines lack. Each
 * answer line ends with {@code <TAB>NANOS}, the engine time: from just after the request line was
 * read to just after the answer was formatted, by {@link System#nanoTime()}.
 *
 * <table>
 *   <tr><th>request</th><th>Lucene</th></tr>
 *   <tr><td>COUNT</td><td>{@code IndexSearcher.count}</td></tr>
 *   <tr><td>TAIL, HEAD</td><td>{@code search} with a {@link TopFieldCollectorManager} sorting
 *       on {@code _time} (descending, ascending) and {@code totalHitsThreshold = K}: TAIL is the
 *       index sort, so each segment stops after K matches; HEAD skips non-competitive documents
 *       through the {@code _time} points</td></tr>
 *   <tr><td>TAILEV</td><td>TAIL's search, then each hit's stored fields through one
 *       {@link StoredFields} of the request, visited by an {@link EventWriter} that writes the
 *       event as JSON into a reused buffer and digests it</td></tr>
 *   <tr><td>HISTOGRAM, TERMS, PERCENTILES, STATS</td><td>the doc-values collectors of
 *       {@link Aggregations}</td></tr>
 * </table>
 */
final class Server {
    private static final Sort NEWEST_FIRST =
            new Sort(new SortField(Protocol.TIME, SortField.Type.LONG, true));
    private static final Sort OLDEST_FIRST =
            new Sort(new SortField(Protocol.TIME, SortField.Type.LONG, false));

    private final IndexSearcher searcher;
    private final Analyzer analyzer = LogSchema.analyzer();
    /** The JSON of the event being returned, reused as a server reuses its response buffer. */
    private final EventWriter eventWriter = new EventWriter();

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

    /**
     * Answers every request line of {@code in} on {@code out}, each answer followed by its engine
     * time ({@code ANSWER<TAB>NANOS}), flushing after each.
     */
    void serve(InputStream in, OutputStream out) throws IOException {
        BufferedReader input =
                new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8), 1 << 16);
        Writer output = new BufferedWriter(new OutputStreamWriter(out, StandardCharsets.UTF_8));
        String request;
        while ((request = input.readLine()) != null) {
            long started = System.nanoTime();
            String answer = answer(request);
            long nanos = System.nanoTime() - started;
            output.write(answer);
            output.write('\t');
            output.write(Long.toString(nanos));
            output.write('\n');
            output.flush();
        }
    }

    /** The answer (without the engine time and the line break) to one request line. */
    String answer(String line) throws IOException {
        Protocol.Request request;
        try {
            request = Protocol.parse(line);
        } catch (Protocol.Unsupported e) {
            return "UNSUPPORTED";
        } catch (Protocol.Malformed e) {
            return "ERROR";
        }
        try {
            return execute(request);
        } catch (RuntimeException e) {
            // A request Lucene refuses (too many clauses, a bug here) is answered, not fatal.
            System.err.println("lucene-logs: " + line.replace('\t', ' ') + ": " + e);
            return "ERROR";
        }
    }

    private String execute(Protocol.Request request) throws IOException {
        Query query = Queries.build(request.filter(), analyzer);
        return switch (request) {
            case Protocol.Request.Count c -> Integer.toString(searcher.count(query));
            case Protocol.Request.Tail(int k, var filter) -> top(query, k, NEWEST_FIRST);
            case Protocol.Request.TailEvents(int k, var filter) -> tailEvents(query, k);
            case Protocol.Request.Head(int k, var filter) -> top(query, k, OLDEST_FIRST);
            case Protocol.Request.Histogram(long seconds, var filter) ->
                    Aggregations.histogramAnswer(
                            searcher.search(query, Aggregations.histogram(seconds)), seconds);
            case Protocol.Request.Terms(String field, int k, var filter) ->
                    Aggregations.termsAnswer(searcher.search(query, Aggregations.terms(field)), k);
            case Protocol.Request.Percentiles(String field, var filter) ->
                    Aggregations.percentilesAnswer(
                            searcher.search(query, Aggregations.values(field)));
            case Protocol.Request.Stats(String field, var filter) ->
                    searcher.search(query, Aggregations.stats(field));
        };
    }

    /**
     * TAILEV: {@code n first last digest} of the {@code k} newest matches, each event fetched
     * from the stored fields and written as JSON. The digest leaves out the events of the last
     * millisecond: which of them make the cut is each engine's choice.
     */
    private String tailEvents(Query query, int k) throws IOException {
        TopFieldDocs top =
                searcher.search(query, new TopFieldCollectorManager(NEWEST_FIRST, k, null, k));
        ScoreDoc[] hits = top.scoreDocs;
        if (hits.length == 0) {
            return "0";
        }
        long first = (Long) ((FieldDoc) hits[0]).fields[0];
        long last = (Long) ((FieldDoc) hits[hits.length - 1]).fields[0];
        // One StoredFields per request: it keeps the decompressed block between hits.
        StoredFields storedFields = searcher.storedFields();
        long digest = 0;
        for (ScoreDoc hit : hits) {
            eventWriter.reset();
            storedFields.document(hit.doc, eventWriter);
            long eventDigest = eventWriter.finish();
            if ((Long) ((FieldDoc) hit).fields[0] > last) {
                digest += eventDigest;
            }
        }
        return hits.length + " " + first + " " + last + " " + Long.toUnsignedString(digest);
    }

    /** The JSON of the last event TAILEV wrote (for tests). */
    String lastEventJson() {
        return eventWriter.json();
    }

    /** {@code n first last} of the {@code k} first matches in {@code sort} order. */
    private String top(Query query, int k, Sort sort) throws IOException {
        // totalHitsThreshold = k: the hit count need not be exact, which lets collection stop
        // early (index sort) or skip (points) once k competitive hits are in.
        TopFieldDocs top = searcher.search(query, new TopFieldCollectorManager(sort, k, null, k));
        ScoreDoc[] hits = top.scoreDocs;
        if (hits.length == 0) {
            return "0";
        }
        long first = (Long) ((FieldDoc) hits[0]).fields[0];
        long last = (Long) ((FieldDoc) hits[hits.length - 1]).fields[0];
        return hits.length + " " + first + " " + last;
    }
}
