package quarry.bench.luceneingest;

import java.io.Closeable;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.lucene.analysis.CharArraySet;
import org.apache.lucene.analysis.standard.StandardAnalyzer;
import org.apache.lucene.index.ConcurrentMergeScheduler;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.Term;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.SearcherManager;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.store.FSDirectory;

/**
 * The index behind the server, the way an Elasticsearch shard runs with its defaults:
 *
 * <ul>
 *   <li><b>Indexing</b>: each bulk item goes to one shared {@link IndexWriter} on a thread of the
 *       server's write pool (Lucene gives each indexing thread its own in-memory segment); RAM buffer 10 %
 *       of the heap ({@code indices.memory.index_buffer_size}); merges on {@code max(1, min(4,
 *       cores / 2))} background threads (Elasticsearch's merge scheduler default), the default
 *       {@code TieredMergePolicy}.
 *   <li><b>Durability</b>: after its documents are added, the request body is appended to the
 *       {@link Translog}, and the request waits, off the write pool, for an fsync that covers it ({@code
 *       index.translog.durability: request}). The Lucene index is committed only when the
 *       current translog generation passes {@code flushThresholdBytes} (512 MB, {@code
 *       index.translog.flush_threshold_size}) and at shutdown: a flush rolls the translog, then
 *       commits, then deletes the rolled generations, whose documents were all added before the
 *       roll and so are in the commit.
 *   <li><b>Visibility</b>: searches use a {@link SearcherManager} that a background thread
 *       refreshes every {@code refreshMillis} (1 s, {@code index.refresh_interval}); an
 *       acknowledged event becomes searchable at the next refresh.
 * </ul>
 *
 * <p>Not modelled: {@code _id} and sequence numbers (Elasticsearch adds an id field, a version
 * and a sequence number to every document and checks ids on update), replicas.
 */
final class Engine implements Closeable {
    record Options(double ramBufferMb, long refreshMillis, long flushThresholdBytes) {
        static Options defaults() {
            return new Options(Runtime.getRuntime().maxMemory() / 10.0 / (1 << 20), 1000, 512L << 20);
        }
    }

    /**
     * What indexing a bulk body did: per item, null if indexed, else why not; and the translog
     * offset a sync must reach before the request is acknowledged.
     */
    record Indexed(List<String> failures, long translogOffset) {}

    private final IndexWriter writer;
    private final SearcherManager searchers;
    private final Translog translog;
    private final Options options;
    private final ScheduledExecutorService background;
    private final Object flushLock = new Object();

    Engine(Path dir, Options options) throws IOException {
        this.options = options;
        IndexWriterConfig config = new IndexWriterConfig(new StandardAnalyzer(CharArraySet.EMPTY_SET));
        config.setOpenMode(IndexWriterConfig.OpenMode.CREATE_OR_APPEND);
        config.setRAMBufferSizeMB(options.ramBufferMb());
        ConcurrentMergeScheduler merges = new ConcurrentMergeScheduler();
        int mergeThreads = Math.max(1, Math.min(4, Runtime.getRuntime().availableProcessors() / 2));
        merges.setMaxMergesAndThreads(mergeThreads + 5, mergeThreads);
        config.setMergeScheduler(merges);
        writer = new IndexWriter(FSDirectory.open(dir.resolve("index")), config);
        searchers = new SearcherManager(writer, null);
        translog = new Translog(dir.resolve("translog"));
        background = Executors.newSingleThreadScheduledExecutor(runnable -> {
            Thread thread = new Thread(runnable, "refresh-and-flush");
            thread.setDaemon(true);
            return thread;
        });
        background.scheduleWithFixedDelay(this::refreshAndMaybeFlush, options.refreshMillis(),
                options.refreshMillis(), TimeUnit.MILLISECONDS);
    }

    private void refreshAndMaybeFlush() {
        try {
            searchers.maybeRefresh();
            if (translog.currentGenerationBytes() > options.flushThresholdBytes()) {
                flush();
            }
        } catch (IOException | RuntimeException e) {
            System.err.println("lucene-ingest: refresh or flush failed: " + e);
        }
    }

    /** Makes what was added so far searchable (the background thread calls it every second). */
    void refresh() throws IOException {
        searchers.maybeRefreshBlocking();
    }

    /** Commits the index and drops the translog generations the commit holds. */
    void flush() throws IOException {
        synchronized (flushLock) {
            long rolled = translog.roll();
            writer.commit();
            translog.deleteUpTo(rolled);
        }
    }

    /**
     * Indexes a bulk body and appends it to the translog; the caller then waits for {@link
     * #awaitDurable} before acknowledging it.
     */
    Indexed index(byte[] body) throws IOException {
        List<Bulk.Item> items = Bulk.parse(body);
        List<String> failures = new ArrayList<>(items.size());
        for (Bulk.Item item : items) {
            switch (item) {
                case Bulk.Item.Add add -> {
                    try {
                        writer.addDocument(add.document());
                        failures.add(null);
                    } catch (IllegalArgumentException e) {
                        // A document Lucene refuses (a field whose type changed, a term too long).
                        failures.add(e.getMessage());
                    }
                }
                case Bulk.Item.Failed failed -> failures.add(failed.reason());
            }
        }
        return new Indexed(failures, translog.append(body, 0, body.length));
    }

    /** Returns once the translog is synced up to {@code translogOffset}. */
    void awaitDurable(long translogOffset) throws IOException {
        translog.ensureSynced(translogOffset);
    }

    /** Events whose {@code marker} holds {@code value} as a word, in the last refreshed view. */
    int countMarker(String value) throws IOException {
        IndexSearcher searcher = searchers.acquire();
        try {
            return searcher.count(new TermQuery(new Term(EventSchema.MARKER, value.toLowerCase(Locale.ROOT))));
        } finally {
            searchers.release(searcher);
        }
    }

    /** Stops refreshing, flushes (commit, translog trimmed) and closes the writer. */
    @Override
    public void close() throws IOException {
        // Not shutdownNow: an interrupt in the middle of a refresh closes Lucene's NIO channels.
        background.shutdown();
        try {
            background.awaitTermination(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        flush();
        searchers.close();
        writer.close();
        translog.close();
    }
}
