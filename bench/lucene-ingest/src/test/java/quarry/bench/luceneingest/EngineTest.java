package quarry.bench.luceneingest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.store.FSDirectory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class EngineTest {
    private static byte[] marker(String marker) {
        return ("{\"index\":{}}\n{\"_time\":\"2026-11-01T00:00:00.000Z\",\"marker\":\"" + marker
                + "\",\"message\":\"marker\"}\n").getBytes(StandardCharsets.UTF_8);
    }

    private static Engine.Indexed bulk(Engine engine, byte[] body) throws Exception {
        Engine.Indexed indexed = engine.index(body);
        engine.awaitDurable(indexed.translogOffset());
        return indexed;
    }

    @Test
    void searchableAfterRefreshAndCommittedOnClose(@TempDir Path dir) throws Exception {
        // A refresh interval no test waits for: refreshes are asked for explicitly.
        Engine engine = new Engine(dir, new Engine.Options(16, 3_600_000, 512L << 20));
        ExecutorService clients = Executors.newFixedThreadPool(4);
        List<Future<Engine.Indexed>> requests = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            byte[] body = marker("M" + i);
            requests.add(clients.submit(() -> bulk(engine, body)));
        }
        for (Future<Engine.Indexed> request : requests) {
            assertEquals(1, request.get().failures().size());
            assertEquals(null, request.get().failures().get(0));
        }
        clients.shutdown();
        assertEquals(0, engine.countMarker("m7"), "not refreshed yet");
        engine.refresh();
        assertEquals(1, engine.countMarker("M7"));
        assertEquals(1, engine.countMarker("m39"));
        assertEquals(0, engine.countMarker("m40"));
        long translogBytes;
        try (var files = Files.list(dir.resolve("translog"))) {
            translogBytes = files.mapToLong(file -> file.toFile().length()).sum();
        }
        assertEquals(40L * marker("M0").length + 30, translogBytes);
        engine.close();
        try (var reader = DirectoryReader.open(FSDirectory.open(dir.resolve("index")))) {
            assertEquals(40, reader.numDocs());
        }
        try (var files = Files.list(dir.resolve("translog"))) {
            assertEquals(List.of(0L), files.map(file -> file.toFile().length()).toList(), "flushed: one empty generation");
        }
    }

    @Test
    void flushRollsTheTranslog(@TempDir Path dir) throws Exception {
        Engine engine = new Engine(dir, new Engine.Options(16, 3_600_000, 512L << 20));
        bulk(engine, marker("a"));
        engine.flush();
        bulk(engine, marker("b"));
        try (var files = Files.list(dir.resolve("translog"))) {
            List<String> names = files.map(file -> file.getFileName().toString()).sorted().toList();
            assertEquals(List.of("translog-2.tlog"), names);
        }
        try (var reader = DirectoryReader.open(FSDirectory.open(dir.resolve("index")))) {
            assertEquals(1, reader.numDocs(), "the commit holds what was added before the flush");
        }
        engine.close();
        Engine reopened = new Engine(dir, new Engine.Options(16, 3_600_000, 512L << 20));
        reopened.refresh();
        assertEquals(1, reopened.countMarker("b"));
        reopened.close();
        try (var files = Files.list(dir.resolve("translog"))) {
            assertTrue(files.allMatch(file -> file.getFileName().toString().equals("translog-5.tlog")));
        }
    }
}
