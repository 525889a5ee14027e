package quarry.bench.luceneingest;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import org.apache.lucene.util.IOUtils;

/**
 * An Elasticsearch-style translog: every bulk request body is appended, and the request is
 * acknowledged only once an {@code fdatasync} covers it ({@code index.translog.durability:
 * request}, Elasticsearch's default).
 *
 * <p><b>Offsets and grouped syncs.</b> {@link #append} returns the end offset of the body in a
 * log-wide byte count that runs across generation files. {@link #ensureSynced} syncs only if no
 * earlier sync already reached that offset, and a sync covers everything appended before it
 * started: requests that wait for a sync while another runs are covered by the next one, so C
 * concurrent requests cost about one sync, not C (Elasticsearch's {@code
 * Translog.ensureSynced} does the same).
 *
 * <p><b>Generations.</b> Files are {@code translog-N.tlog}. {@link #roll} syncs and closes the
 * current file and opens the next; the caller deletes the old ones once a Lucene commit holds
 * their documents (an Elasticsearch flush). Lock order: {@code syncLock}, then {@code this}.
 */
final class Translog implements Closeable {
    private final Path dir;
    private final Object syncLock = new Object();
    /** Guarded by {@code this}. */
    private FileChannel channel;
    private long generation;
    private long generationBytes;
    private long written;
    /** The log-wide offset a completed sync reached; written under {@code syncLock}. */
    private volatile long synced;

    Translog(Path dir) throws IOException {
        this.dir = dir;
        Files.createDirectories(dir);
        long last = 0;
        for (Path file : generations()) {
            last = Math.max(last, generationOf(file));
        }
        open(last + 1);
    }

    private void open(long next) throws IOException {
        Path file = dir.resolve("translog-" + next + ".tlog");
        channel = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
        // The new file's name must survive a crash too.
        IOUtils.fsync(dir, true);
        generation = next;
        generationBytes = 0;
    }

    private static long generationOf(Path file) {
        String name = file.getFileName().toString();
        return Long.parseLong(name.substring("translog-".length(), name.length() - ".tlog".length()));
    }

    /** The generation files in the directory, current one included. */
    List<Path> generations() throws IOException {
        List<Path> files = new ArrayList<>();
        try (var stream = Files.newDirectoryStream(dir, "translog-*.tlog")) {
            stream.forEach(files::add);
        }
        return files;
    }

    /** Appends {@code length} bytes of {@code body} and returns the log-wide offset after them. */
    synchronized long append(byte[] body, int offset, int length) throws IOException {
        ByteBuffer buffer = ByteBuffer.wrap(body, offset, length);
        while (buffer.hasRemaining()) {
            channel.write(buffer);
        }
        generationBytes += length;
        written += length;
        return written;
    }

    /** Returns once a sync covers everything up to {@code offset}. */
    void ensureSynced(long offset) throws IOException {
        if (synced >= offset) {
            return;
        }
        synchronized (syncLock) {
            if (synced >= offset) {
                return;
            }
            long target;
            FileChannel current;
            synchronized (this) {
                target = written;
                current = channel;
            }
            // Outside the append lock: requests keep appending while the disk syncs.
            current.force(false);
            synced = target;
        }
    }

    synchronized long currentGenerationBytes() {
        return generationBytes;
    }

    /** Syncs and closes the current file, opens the next; returns the generation rolled over. */
    long roll() throws IOException {
        synchronized (syncLock) {
            synchronized (this) {
                channel.force(false);
                synced = written;
                channel.close();
                long rolled = generation;
                open(generation + 1);
                return rolled;
            }
        }
    }

    /** Deletes the files of generations up to {@code generation}, which a commit now holds. */
    void deleteUpTo(long generation) throws IOException {
        for (Path file : generations()) {
            if (generationOf(file) <= generation) {
                Files.delete(file);
            }
        }
        IOUtils.fsync(dir, true);
    }

    /** Syncs and closes the current file. */
    @Override
    public void close() throws IOException {
        synchronized (syncLock) {
            synchronized (this) {
                channel.force(false);
                synced = written;
                channel.close();
            }
        }
    }
}
