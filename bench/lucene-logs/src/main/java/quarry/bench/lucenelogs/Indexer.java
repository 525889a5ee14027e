package quarry.bench.lucenelogs;

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
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.TextField;
import org.apache.lucene.index.ConcurrentMergeScheduler;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.MMapDirectory;

/**
 * {@code lucene-logs index}: indexes a JSON-lines event file (plain or zstd-compressed) into an
 * index sorted by {@code _time}, and reports how long it took and how big the index is.
 *
 * <p>One indexing thread (the caller's) with a 1 GB RAM buffer, and one merge thread in the
 * background ({@link ConcurrentMergeScheduler} limited to one thread), as {@code tantivy-logs}
 * has: one indexing thread, one merge thread. Lucene's default merge policy ({@code
 * TieredMergePolicy}), no forced merge. The timed span runs from opening the writer to closing
 * it, which waits for running merges: reading, decompressing and parsing, indexing, sorting each
 * flushed segment by {@code _time}, the commit and the merges.
 *
 * <p>With {@code --schema message} ({@code messageOnly}) each event contributes only its {@code
 * message}, as one stored {@code TextField} (positions, the same analyzer), and the index is not
 * sorted: Loghub lines wrapped as {@code {"message": line}} have no {@code _time}
 * (bench/run-sizes.sh). {@code serve} does not read such an index.
 */
final class Indexer {
    /** The indexing buffer, the budget {@code tantivy-logs} gets too. */
    static final double RAM_BUFFER_MB = 1024;

    private Indexer() {}

    /** The first four bytes of a zstd frame (RFC 8878, 3.1.1). */
    private static final byte[] ZSTD_MAGIC = {0x28, (byte) 0xb5, 0x2f, (byte) 0xfd};

    /** The line printed on stdout; {@code logs-driver report} reads engine, events, seconds, index_bytes. */
    record Summary(long events, double seconds, long inputBytes, long indexBytes, int segments) {
        String toJson() {
            return String.format(
                    Locale.ROOT,
                    "{\"engine\":\"lucene\",\"events\":%d,\"seconds\":%.6f,\"events_per_s\":%.1f,"
                            + "\"input_bytes\":%d,\"index_bytes\":%d,\"segments\":%d,\"threads\":1}",
                    events, seconds, events / seconds, inputBytes, indexBytes, segments);
        }
    }

    static IndexWriterConfig config() {
        return config(false);
    }

    static IndexWriterConfig config(boolean messageOnly) {
        ConcurrentMergeScheduler merges = new ConcurrentMergeScheduler();
        // One merge thread; up to 6 merges queued (Lucene's usual threads + 5) before the
        // indexing thread is stalled.
        merges.setMaxMergesAndThreads(6, 1);
        IndexWriterConfig config = new IndexWriterConfig(LogSchema.analyzer())
                .setOpenMode(IndexWriterConfig.OpenMode.CREATE)
                .setRAMBufferSizeMB(RAM_BUFFER_MB)
                .setMergeScheduler(merges);
        return messageOnly ? config : config.setIndexSort(LogSchema.INDEX_SORT);
    }

    static Summary run(Path indexDir, Path input) throws IOException {
        return run(indexDir, input, false);
    }

    static Summary run(Path indexDir, Path input, boolean messageOnly) throws IOException {
        Files.createDirectories(indexDir);
        try (Stream<Path> existing = Files.list(indexDir)) {
            if (existing.findAny().isPresent()) {
                throw new IOException(indexDir + " is not empty");
            }
        }
        long started = System.nanoTime();
        long events;
        long inputBytes;
        try (Directory directory = new MMapDirectory(indexDir);
                IndexWriter writer = new IndexWriter(directory, config(messageOnly))) {
            long[] counts = addEvents(writer, input, messageOnly);
            events = counts[0];
            inputBytes = counts[1];
            writer.commit();
        }
        double seconds = (System.nanoTime() - started) / 1e9;

        int segments;
        try (Directory directory = new MMapDirectory(indexDir);
                DirectoryReader reader = DirectoryReader.open(directory)) {
            segments = reader.leaves().size();
        }
        return new Summary(events, seconds, inputBytes, directoryBytes(indexDir), segments);
    }

    /** Opens {@code input}, decompressing it when it starts with a zstd frame. */
    static InputStream open(Path input) throws IOException {
        byte[] magic = new byte[4];
        int read;
        try (InputStream probe = Files.newInputStream(input)) {
            read = probe.readNBytes(magic, 0, 4);
        }
        InputStream raw = Files.newInputStream(input);
        boolean zstd = read == 4 && java.util.Arrays.equals(magic, ZSTD_MAGIC);
        return new BufferedInputStream(zstd ? new ZstdInputStream(raw) : raw, 1 << 20);
    }

    /** Adds every event of {@code input}; returns {events, uncompressed input bytes}. */
    static long[] addEvents(IndexWriter writer, Path input) throws IOException {
        return addEvents(writer, input, false);
    }

    static long[] addEvents(IndexWriter writer, Path input, boolean messageOnly) throws IOException {
        try (CountingInputStream counted = new CountingInputStream(open(input));
                // Root-level objects separated by line breaks: one stream of values.
                JsonParser parser = new JsonFactory().createParser(counted)) {
            long events = 0;
            JsonToken token;
            while ((token = parser.nextToken()) != null) {
                if (token != JsonToken.START_OBJECT) {
                    throw new IOException(input + ": expected an event at " + parser.currentLocation());
                }
                writer.addDocument(messageOnly ? readMessage(parser, input) : readEvent(parser, input));
                events++;
            }
            return new long[] {events, counted.count};
        }
    }

    /** The document of the event whose START_OBJECT the parser is on. */
    static Document readEvent(JsonParser parser, Path input) throws IOException {
        Document document = new Document();
        boolean hasTime = false;
        while (parser.nextToken() == JsonToken.FIELD_NAME) {
            String name = parser.currentName();
            JsonToken value = parser.nextToken();
            Protocol.Kind kind = Protocol.FIELDS.get(name);
            if (kind == null || value == JsonToken.VALUE_NULL) {
                if (value.isStructStart()) {
                    parser.skipChildren();
                }
                continue;
            }
            Object fieldValue = switch (kind) {
                case TIME -> {
                    hasTime = true;
                    yield LogSchema.parseMillis(parser.getText());
                }
                case KEYWORD, TEXT -> parser.getText();
                case INTEGER -> {
                    if (value != JsonToken.VALUE_NUMBER_INT) {
                        throw new IOException(input + ": " + name + " is not an integer at "
                                + parser.currentLocation());
                    }
                    yield parser.getLongValue();
                }
            };
            LogSchema.add(document, name, kind, fieldValue);
        }
        if (!hasTime) {
            throw new IOException(input + ": event without _time near " + parser.currentLocation());
        }
        return document;
    }

    /**
     * The document of the message-only event whose START_OBJECT the parser is on: its {@code
     * message} string, other members skipped; an event without one is an empty document.
     */
    static Document readMessage(JsonParser parser, Path input) throws IOException {
        Document document = new Document();
        while (parser.nextToken() == JsonToken.FIELD_NAME) {
            String name = parser.currentName();
            JsonToken value = parser.nextToken();
            if (name.equals(LogSchema.MESSAGE) && value == JsonToken.VALUE_STRING) {
                document.add(new TextField(LogSchema.MESSAGE, parser.getText(), Field.Store.YES));
            } else if (value.isStructStart()) {
                parser.skipChildren();
            }
        }
        return document;
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
