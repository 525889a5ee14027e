package quarry.bench.lucene;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.github.luben.zstd.ZstdInputStream;
import java.io.BufferedInputStream;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.stream.Stream;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.SerialMergeScheduler;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.MMapDirectory;

/**
 * {@code lucene-bench index}: builds a one-segment index from a zstd-compressed JSON-lines file
 * of {@code {"url", "title", "body"}} articles (or, with {@code --schema game}, {@code {"id",
 * "text"}} documents; {@link Schema}), and reports how long it took and how big it is.
 *
 * <p>The timed span is everything a user waits for: decompressing and parsing the input,
 * indexing, the merge into one segment and the commit. All of it runs on the calling thread:
 * documents are added by this one thread (so only its indexing buffer fills and flushes), and
 * the {@link SerialMergeScheduler} runs merges on the thread that asks for them rather than on
 * background merge threads, the same recipe as {@code tantivy-bench index --threads 1} and
 * Quarry's {@code index --threads 1} + {@code merge}.
 */
final class Indexer {
    /**
     * Indexing buffer: large enough that the 413 MB benchmark input is flushed in a few big
     * segments, the same budget {@code tantivy-bench} gets (1 GB). Lucene's per-thread hard
     * limit (1945 MB by default) is above it.
     */
    static final double RAM_BUFFER_MB = 1024;

    private Indexer() {}

    /** The line printed on stdout; the field names are the ones {@code search-report} reads. */
    record Summary(
            long docs, double seconds, long inputBytes, long indexBytes, int segments, int threads) {
        String toJson() {
            return String.format(
                    Locale.ROOT,
                    "{\"engine\":\"lucene\",\"docs\":%d,\"seconds\":%.6f,\"input_bytes\":%d,"
                            + "\"index_bytes\":%d,\"segments\":%d,\"threads\":%d}",
                    docs, seconds, inputBytes, indexBytes, segments, threads);
        }
    }

    static Summary run(Path indexDir, Path input, Schema.Kind schema) throws IOException {
        Files.createDirectories(indexDir);
        try (Stream<Path> existing = Files.list(indexDir)) {
            if (existing.findAny().isPresent()) {
                throw new IOException(indexDir + " is not empty");
            }
        }
        long started = System.nanoTime();
        long docs;
        long inputBytes;
        try (Directory directory = new MMapDirectory(indexDir)) {
            IndexWriterConfig config = new IndexWriterConfig(Schema.analyzer())
                    .setOpenMode(IndexWriterConfig.OpenMode.CREATE)
                    .setRAMBufferSizeMB(RAM_BUFFER_MB)
                    .setMergeScheduler(new SerialMergeScheduler());
            try (IndexWriter writer = new IndexWriter(directory, config)) {
                inputBytes = addArticles(writer, input, schema);
                writer.forceMerge(1);
                writer.commit();
                docs = writer.getDocStats().numDocs;
            }
        }
        double seconds = (System.nanoTime() - started) / 1e9;

        int segments;
        try (Directory directory = new MMapDirectory(indexDir);
                DirectoryReader reader = DirectoryReader.open(directory)) {
            segments = reader.leaves().size();
        }
        return new Summary(docs, seconds, inputBytes, directoryBytes(indexDir), segments, 1);
    }

    /** Adds every document of {@code input}; returns the uncompressed size of the input. */
    static long addArticles(IndexWriter writer, Path input, Schema.Kind schema)
            throws IOException {
        JsonFactory json = new JsonFactory();
        try (CountingInputStream counted = new CountingInputStream(new BufferedInputStream(
                        new ZstdInputStream(Files.newInputStream(input)), 1 << 20));
                // The file is a sequence of root-level objects separated by line breaks, which
                // the streaming parser reads as one stream of values.
                JsonParser parser = json.createParser(counted)) {
            JsonToken token;
            while ((token = parser.nextToken()) != null) {
                if (token != JsonToken.START_OBJECT) {
                    throw new IOException(
                            input + ": expected an article object at " + parser.currentLocation());
                }
                String url = null;
                String title = null;
                String body = null;
                String id = null;
                String text = null;
                while (parser.nextToken() == JsonToken.FIELD_NAME) {
                    String name = parser.currentName();
                    JsonToken value = parser.nextToken();
                    switch (name) {
                        case "url" -> url = parser.getValueAsString();
                        case "title" -> title = parser.getValueAsString();
                        case "body" -> body = parser.getValueAsString();
                        case "id" -> id = parser.getValueAsString();
                        case "text" -> text = parser.getValueAsString();
                        default -> {
                            if (value.isStructStart()) {
                                parser.skipChildren();
                            }
                        }
                    }
                }
                switch (schema) {
                    case WIKI -> {
                        if (url == null || title == null || body == null) {
                            throw new IOException(input + ": article without url, title or body"
                                    + " near " + parser.currentLocation());
                        }
                        writer.addDocument(Schema.document(url, title, body));
                    }
                    case GAME -> {
                        if (id == null || text == null) {
                            throw new IOException(input + ": document without id or text near "
                                    + parser.currentLocation());
                        }
                        writer.addDocument(Schema.gameDocument(id, text));
                    }
                }
            }
            return counted.count;
        }
    }

    /** Total size of the files under {@code dir}. */
    static long directoryBytes(Path dir) throws IOException {
        try (Stream<Path> files = Files.walk(dir)) {
            long total = 0;
            for (Path file : (Iterable<Path>) files::iterator) {
                if (Files.isRegularFile(file)) {
                    total += Files.size(file);
                }
            }
            return total;
        }
    }

    /** Counts the bytes read through it: the uncompressed input size. */
    private static final class CountingInputStream extends FilterInputStream {
        long count;

        CountingInputStream(InputStream in) {
            super(in);
        }

        @Override
        public int read() throws IOException {
            int b = super.read();
            if (b >= 0) {
                count++;
            }
            return b;
        }

        @Override
        public int read(byte[] buffer, int offset, int length) throws IOException {
            int read = super.read(buffer, offset, length);
            if (read > 0) {
                count += read;
            }
            return read;
        }

        @Override
        public long skip(long n) throws IOException {
            long skipped = super.skip(n);
            count += skipped;
            return skipped;
        }
    }
}
