package quarry.bench.lucene;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.store.ByteBuffersDirectory;
import org.apache.lucene.store.Directory;
import org.junit.jupiter.api.Test;

class ServerTest {
    private static void check(String text, Server.Command expected) {
        assertEquals(expected, Server.Command.parse(text), text);
    }

    @Test
    void parsesCommands() {
        check("COUNT", new Server.Command.Count());
        check("TOP_10", new Server.Command.Top(10, false));
        check("TOP_1000", new Server.Command.Top(1000, false));
        check("TOP_100_COUNT", new Server.Command.Top(100, true));
        check("TOP_0", null);
        check("TOP_", null);
        check("TOP_+5", null);
        check("TOP__COUNT", null);
        check("TOP_99999999999", null);
        check("top_10", null);
        check("COUNTS", null);
        check("", null);
    }

    /** Three articles in {@code directory}. */
    private static void addArticles(Directory directory) throws IOException {
        try (IndexWriter writer =
                new IndexWriter(directory, new IndexWriterConfig(Schema.analyzer()))) {
            writer.addDocument(Schema.document("u1", "Quick Fox", "the quick brown fox jumps"));
            writer.addDocument(Schema.document(
                    "u2", "Lazy dog", "the lazy dog sleeps; a fox watches"));
            writer.addDocument(Schema.document("u3", "Nothing", "unrelated text, don't look"));
        }
    }

    @Test
    void answersRequestsOverASmallIndex() throws IOException {
        try (Directory directory = new ByteBuffersDirectory()) {
            addArticles(directory);
            try (DirectoryReader reader = DirectoryReader.open(directory)) {
                Server server = new Server(new IndexSearcher(reader));
                String[][] cases = {
                    {"COUNT\tfox", "2"},
                    {"COUNT\tFOX dog", "2"},
                    {"COUNT\t+fox +dog", "1"},
                    {"COUNT\tfox -lazy", "1"},
                    {"COUNT\t\"quick brown\"", "1"},
                    {"COUNT\t\"brown quick\"", "0"},
                    {"COUNT\t\"don't look\"", "1"},
                    // Unlike tantivy's grammar, a single quote is an ordinary character, and
                    // the tokenizer keeps "don't" as one word.
                    {"COUNT\tdon't", "1"},
                    {"COUNT\tdon", "0"},
                    // No stop words: "the" and "a" are terms.
                    {"COUNT\tthe", "2"},
                    {"COUNT\t+a +fox", "1"},
                    // url is analyzed and searched too.
                    {"COUNT\tu3", "1"},
                    {"TOP_10\tfox", "1"},
                    {"TOP_10_COUNT\tfox", "2"},
                    {"TOP_1_COUNT\tthe", "2"},
                    {"COUNT\t\"unbalanced", "ERROR"},
                    {"COUNT\t+", "ERROR"},
                    {"COUNT\t*fox", "ERROR"},
                    {"COUNT\tfox\\", "ERROR"},
                    {"no tab", "ERROR"},
                    {"SORT\tfox", "UNSUPPORTED"},
                };
                for (String[] c : cases) {
                    assertEquals(c[1], server.answer(c[0]), Arrays.toString(c));
                }

                // Over the pipe: one answer line per request line, and a Latin-1 byte (not
                // UTF-8) is replaced, not fatal: "ni\xf1a" reads as "ni\uFFFDa", two words.
                byte[] requests = "COUNT\tfox\nCOUNT\tni\u00f1a\nCOUNT\tdog"
                        .getBytes(StandardCharsets.ISO_8859_1);
                ByteArrayOutputStream answers = new ByteArrayOutputStream();
                server.serve(new ByteArrayInputStream(requests), answers);
                assertEquals("2\n1\n1\n", answers.toString(StandardCharsets.UTF_8));
            }
        }
    }

    /**
     * The game's schema: {@code id} stored and not searched, {@code text} searched; the query
     * shapes of bench/game/queries.tsv, with the answers tantivy-bench's test expects.
     */
    @Test
    void answersRequestsOverAGameIndex() throws IOException {
        try (Directory directory = new ByteBuffersDirectory()) {
            try (IndexWriter writer =
                    new IndexWriter(directory, new IndexWriterConfig(Schema.analyzer()))) {
                writer.addDocument(Schema.gameDocument(
                        "u1", "Hamlet\nTo be, or not to be, that is the question"));
                writer.addDocument(Schema.gameDocument(
                        "u2", "The Who\nThe Who are an English rock band from the UK"));
                writer.addDocument(Schema.gameDocument(
                        "u3", "Doctor Who\nA programme about the Who, from the UK"));
            }
            try (DirectoryReader reader = DirectoryReader.open(directory)) {
                Server server = new Server(new IndexSearcher(reader));
                String[][] cases = {
                    {"COUNT\tthe", "3"},
                    {"COUNT\t+who +uk", "2"},
                    {"COUNT\tband hamlet", "2"},
                    {"COUNT\t+uk -english", "1"},
                    {"COUNT\t\"to be or not to be\"", "1"},
                    {"COUNT\t\"the who\"", "2"},
                    {"COUNT\t+\"the who\" +uk", "2"},
                    {"COUNT\t+\"the who\" +band", "1"},
                    // The title and the body are one text: a phrase may span them.
                    {"COUNT\t\"hamlet to be\"", "1"},
                    // id is stored, not indexed: bare words do not search it.
                    {"COUNT\tu1", "0"},
                    {"TOP_10_COUNT\t\"the who\"", "2"},
                };
                for (String[] c : cases) {
                    assertEquals(c[1], server.answer(c[0]), Arrays.toString(c));
                }
            }
        }
    }

    /** Every request answered once, tagged with its line number, whatever the order. */
    @Test
    void poolTagsEachAnswerWithItsRequestLine() throws IOException {
        String[][] kinds = {
            {"COUNT\tfox", "2"},
            {"COUNT\t+fox +dog", "1"},
            {"TOP_10\tfox", "1"},
            {"COUNT\t\"unbalanced", "ERROR"},
            {"SORT\tfox", "UNSUPPORTED"},
        };
        int requests = 200;
        StringBuilder input = new StringBuilder();
        for (int i = 0; i < requests; i++) {
            input.append(kinds[i % kinds.length][0]).append('\n');
        }
        try (Directory directory = new ByteBuffersDirectory()) {
            addArticles(directory);
            try (DirectoryReader reader = DirectoryReader.open(directory)) {
                Server server = new Server(new IndexSearcher(reader));
                ByteArrayOutputStream output = new ByteArrayOutputStream();
                server.servePool(
                        new ByteArrayInputStream(
                                input.toString().getBytes(StandardCharsets.UTF_8)),
                        output,
                        3);
                String[] answers = new String[requests];
                for (String line : output.toString(StandardCharsets.UTF_8).split("\n")) {
                    String[] idAndAnswer = line.split("\t", 2);
                    int id = Integer.parseInt(idAndAnswer[0]);
                    assertNull(answers[id], "request " + id + " answered twice");
                    answers[id] = idAndAnswer[1];
                }
                for (int i = 0; i < requests; i++) {
                    assertEquals(kinds[i % kinds.length][1], answers[i], "request " + i);
                }
            }
        }
    }
}
