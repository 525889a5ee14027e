package quarry.bench.luceneingest;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The HTTP side, on the JDK's own server ({@code com.sun.net.httpserver}) with a pool of handler
 * threads. As in Elasticsearch, bulk indexing runs on a separate <b>write pool</b> of one thread
 * per core (its {@code write} thread pool), and a request waits for its translog sync after
 * leaving it (Elasticsearch syncs asynchronously and answers from the sync's listener), so the
 * write threads index the next requests while the disk syncs and searches never queue behind
 * indexing:
 *
 * <ul>
 *   <li>{@code POST /_bulk}: {@link Engine#index} on the write pool, {@link Engine#awaitDurable}, then Elasticsearch's bulk reply;
 *   <li>{@code GET /search?q=marker:VALUE}: {@code {"count":N}} in the last refreshed view;
 *   <li>{@code GET /health}: {@code {"status":"ok"}}.
 * </ul>
 */
final class Server {
    private final HttpServer http;
    private final ExecutorService handlers;
    private final ExecutorService writers;
    /** Bulk requests answered, for the ids of their items. */
    private final AtomicLong requests = new AtomicLong();

    Server(Engine engine, InetSocketAddress listen, int threads, int writeThreads) throws IOException {
        http = HttpServer.create(listen, 1024);
        handlers = Executors.newFixedThreadPool(threads);
        writers = Executors.newFixedThreadPool(writeThreads);
        http.setExecutor(handlers);
        http.createContext("/_bulk", exchange -> handle(exchange, "POST", () -> {
            long started = System.nanoTime();
            byte[] body = exchange.getRequestBody().readAllBytes();
            Engine.Indexed indexed;
            try {
                indexed = writers.submit(() -> engine.index(body)).get();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted", e);
            } catch (ExecutionException e) {
                throw e.getCause() instanceof IOException io ? io : new IOException(e.getCause());
            }
            engine.awaitDurable(indexed.translogOffset());
            long tookMillis = (System.nanoTime() - started) / 1_000_000;
            String idPrefix = Long.toHexString(started) + "-" + Long.toHexString(requests.incrementAndGet());
            return new Reply(200, Bulk.reply(indexed.failures(), tookMillis, idPrefix, indexed.translogOffset()));
        }));
        http.createContext("/search", exchange -> handle(exchange, "GET", () -> {
            String query = parameter(exchange.getRequestURI().getRawQuery(), "q");
            if (query == null || !query.startsWith("marker:")) {
                return error(400, "only q=marker:VALUE is supported");
            }
            return new Reply(200, "{\"count\":" + engine.countMarker(query.substring("marker:".length())) + "}");
        }));
        http.createContext("/health", exchange -> handle(exchange, "GET", () -> new Reply(200, "{\"status\":\"ok\"}")));
    }

    record Reply(int status, String json) {}

    interface Handler {
        Reply run() throws IOException;
    }

    private static Reply error(int status, String message) {
        StringBuilder json = new StringBuilder("{\"error\":");
        Bulk.quote(json, message);
        return new Reply(status, json.append('}').toString());
    }

    private static void handle(HttpExchange exchange, String method, Handler handler) throws IOException {
        Reply reply;
        try {
            if (!exchange.getRequestMethod().equals(method)) {
                exchange.getRequestBody().readAllBytes();
                reply = error(405, "use " + method);
            } else {
                reply = handler.run();
            }
        } catch (IOException | RuntimeException e) {
            reply = error(500, e.toString());
        }
        byte[] bytes = reply.json().getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().set("Content-Type", "application/json");
        exchange.sendResponseHeaders(reply.status(), bytes.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(bytes);
        }
    }

    /** The decoded value of {@code name} in a raw query string, null when absent. */
    static String parameter(String rawQuery, String name) {
        if (rawQuery == null) {
            return null;
        }
        for (String pair : rawQuery.split("&")) {
            int equals = pair.indexOf('=');
            String key = equals < 0 ? pair : pair.substring(0, equals);
            if (URLDecoder.decode(key, StandardCharsets.UTF_8).equals(name)) {
                return equals < 0 ? "" : URLDecoder.decode(pair.substring(equals + 1), StandardCharsets.UTF_8);
            }
        }
        return null;
    }

    InetSocketAddress address() {
        return http.getAddress();
    }

    void start() {
        http.start();
    }

    /** Stops accepting, lets requests in flight finish (up to a minute). */
    void stop() {
        http.stop(1);
        handlers.shutdown();
        writers.shutdown();
        try {
            handlers.awaitTermination(60, TimeUnit.SECONDS);
            writers.awaitTermination(60, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
