package quarry.bench.lucenelogs;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.lucene.index.DocValues;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.NumericDocValues;
import org.apache.lucene.index.SortedDocValues;
import org.apache.lucene.search.Collector;
import org.apache.lucene.search.CollectorManager;
import org.apache.lucene.search.LeafCollector;
import org.apache.lucene.search.Scorable;
import org.apache.lucene.search.ScoreMode;

/**
 * The collectors behind HISTOGRAM, TERMS, PERCENTILES and STATS: each reads a doc-values column
 * of the matching documents, on the searching thread. Lucene core has no aggregation framework
 * (facets are a separate module built for taxonomy and range facets), so these are the plain
 * collectors a Lucene application writes; one {@link CollectorManager} each, so that {@code
 * IndexSearcher.search(query, manager)} runs them over every leaf slice and reduces.
 */
final class Aggregations {
    private Aggregations() {}

    /** A collector that never needs scores. */
    private abstract static class ColumnCollector implements Collector {
        @Override
        public ScoreMode scoreMode() {
            return ScoreMode.COMPLETE_NO_SCORES;
        }
    }

    /** A leaf collector whose documents are read by {@link #collect(int)} alone. */
    private abstract static class ColumnLeafCollector implements LeafCollector {
        @Override
        public void setScorer(Scorable scorer) {}
    }

    // ---- HISTOGRAM

    /** Counts per {@code floor(time / width)} bucket, keyed by bucket index. */
    static final class Histogram extends ColumnCollector {
        private final long widthMillis;
        final Map<Long, Long> counts = new HashMap<>();

        Histogram(long widthMillis) {
            this.widthMillis = widthMillis;
        }

        @Override
        public LeafCollector getLeafCollector(LeafReaderContext context) throws IOException {
            NumericDocValues times = DocValues.getNumeric(context.reader(), Protocol.TIME);
            // The segment is sorted by _time, so matches come in time order and runs of one
            // bucket are long: count a run, touch the map once per run.
            return new ColumnLeafCollector() {
                long bucket;
                long run;

                @Override
                public void collect(int doc) throws IOException {
                    if (!times.advanceExact(doc)) {
                        return;
                    }
                    long current = Math.floorDiv(times.longValue(), widthMillis);
                    if (run > 0 && current == bucket) {
                        run++;
                        return;
                    }
                    finish();
                    bucket = current;
                    run = 1;
                }

                @Override
                public void finish() {
                    if (run > 0) {
                        counts.merge(bucket, run, Long::sum);
                        run = 0;
                    }
                }
            };
        }
    }

    static CollectorManager<Histogram, Map<Long, Long>> histogram(long seconds) {
        return new CollectorManager<>() {
            @Override
            public Histogram newCollector() {
                return new Histogram(seconds * 1000);
            }

            @Override
            public Map<Long, Long> reduce(Collection<Histogram> collectors) {
                Map<Long, Long> total = new HashMap<>();
                for (Histogram collector : collectors) {
                    collector.counts.forEach((bucket, count) -> total.merge(bucket, count, Long::sum));
                }
                return total;
            }
        };
    }

    /** The protocol's HISTOGRAM answer: {@code buckets total checksum}. */
    static String histogramAnswer(Map<Long, Long> counts, long seconds) {
        long total = 0;
        long checksum = 0;
        for (Map.Entry<Long, Long> entry : counts.entrySet()) {
            total += entry.getValue();
            // Java long arithmetic wraps, as the protocol's checksum does.
            checksum += entry.getKey() * seconds * entry.getValue();
        }
        return counts.size() + " " + total + " " + checksum;
    }

    // ---- TERMS

    /** Counts per value of a keyword field, by ordinal within a leaf, by value across leaves. */
    static final class Terms extends ColumnCollector {
        private final String field;
        final Map<String, Long> counts = new HashMap<>();

        Terms(String field) {
            this.field = field;
        }

        @Override
        public LeafCollector getLeafCollector(LeafReaderContext context) throws IOException {
            SortedDocValues values = DocValues.getSorted(context.reader(), field);
            int[] perOrd = new int[values.getValueCount()];
            return new ColumnLeafCollector() {
                @Override
                public void collect(int doc) throws IOException {
                    if (values.advanceExact(doc)) {
                        perOrd[values.ordValue()]++;
                    }
                }

                @Override
                public void finish() throws IOException {
                    for (int ord = 0; ord < perOrd.length; ord++) {
                        if (perOrd[ord] > 0) {
                            counts.merge(values.lookupOrd(ord).utf8ToString(), (long) perOrd[ord], Long::sum);
                        }
                    }
                }
            };
        }
    }

    static CollectorManager<Terms, Map<String, Long>> terms(String field) {
        return new CollectorManager<>() {
            @Override
            public Terms newCollector() {
                return new Terms(field);
            }

            @Override
            public Map<String, Long> reduce(Collection<Terms> collectors) {
                Map<String, Long> total = new HashMap<>();
                for (Terms collector : collectors) {
                    collector.counts.forEach((value, count) -> total.merge(value, count, Long::sum));
                }
                return total;
            }
        };
    }

    /** The protocol's TERMS answer: the k largest counts, ties by value ascending. */
    static String termsAnswer(Map<String, Long> counts, int k) {
        List<Map.Entry<String, Long>> entries = new ArrayList<>(counts.entrySet());
        entries.sort((a, b) -> {
            int byCount = Long.compare(b.getValue(), a.getValue());
            return byCount != 0 ? byCount : a.getKey().compareTo(b.getKey());
        });
        StringBuilder answer = new StringBuilder();
        for (int i = 0; i < Math.min(k, entries.size()); i++) {
            if (i > 0) {
                answer.append(' ');
            }
            answer.append(entries.get(i).getKey()).append('=').append(entries.get(i).getValue());
        }
        return answer.toString();
    }

    // ---- PERCENTILES

    /** Every value of an integer field over the matches. */
    static final class Values extends ColumnCollector {
        private final String field;
        long[] values = new long[1024];
        int size;

        Values(String field) {
            this.field = field;
        }

        @Override
        public LeafCollector getLeafCollector(LeafReaderContext context) throws IOException {
            NumericDocValues column = DocValues.getNumeric(context.reader(), field);
            return new ColumnLeafCollector() {
                @Override
                public void collect(int doc) throws IOException {
                    if (column.advanceExact(doc)) {
                        if (size == values.length) {
                            values = Arrays.copyOf(values, size * 2);
                        }
                        values[size++] = column.longValue();
                    }
                }
            };
        }
    }

    static CollectorManager<Values, long[]> values(String field) {
        return new CollectorManager<>() {
            @Override
            public Values newCollector() {
                return new Values(field);
            }

            @Override
            public long[] reduce(Collection<Values> collectors) {
                int total = collectors.stream().mapToInt(c -> c.size).sum();
                long[] all = new long[total];
                int at = 0;
                for (Values collector : collectors) {
                    System.arraycopy(collector.values, 0, all, at, collector.size);
                    at += collector.size;
                }
                return all;
            }
        };
    }

    /** The percents of PERCENTILES. */
    static final double[] PERCENTS = {0.50, 0.95, 0.99};

    /**
     * The protocol's PERCENTILES answer, exact: the value of 0-based rank {@code floor(q * (n -
     * 1))} of the sorted values, the rank rule of the DDSketch tantivy uses (so only the
     * sketch's approximation separates the two), found by selection, not sorting. {@code 0}
     * when there are no values. Reorders {@code values}.
     */
    static String percentilesAnswer(long[] values) {
        if (values.length == 0) {
            return "0";
        }
        StringBuilder answer = new StringBuilder();
        int from = 0;
        for (double q : PERCENTS) {
            int rank = (int) (q * (values.length - 1));
            // The ranks grow, and selection leaves everything left of a rank no larger than it:
            // each selection can start at the previous rank.
            long value = select(values, from, values.length, rank);
            from = rank;
            if (answer.length() > 0) {
                answer.append(' ');
            }
            answer.append(value);
        }
        return answer.toString();
    }

    /**
     * The value that would be at index {@code k} if {@code values[from, to)} were sorted
     * (quickselect, Hoare partition around a median of three); on return, {@code values[from,
     * k)} holds no larger value and {@code values(k, to)} no smaller one.
     */
    static long select(long[] values, int from, int to, int k) {
        int lo = from;
        int hi = to - 1;
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (values[mid] < values[lo]) {
                swap(values, mid, lo);
            }
            if (values[hi] < values[lo]) {
                swap(values, hi, lo);
            }
            if (values[hi] < values[mid]) {
                swap(values, hi, mid);
            }
            long pivot = values[mid];
            int i = lo;
            int j = hi;
            while (i <= j) {
                while (values[i] < pivot) {
                    i++;
                }
                while (values[j] > pivot) {
                    j--;
                }
                if (i <= j) {
                    swap(values, i, j);
                    i++;
                    j--;
                }
            }
            // [lo, j] <= pivot, [i, hi] >= pivot, and (j, i) holds only the pivot value.
            if (k <= j) {
                hi = j;
            } else if (k >= i) {
                lo = i;
            } else {
                return values[k];
            }
        }
        return values[k];
    }

    private static void swap(long[] values, int a, int b) {
        long t = values[a];
        values[a] = values[b];
        values[b] = t;
    }

    // ---- STATS

    /** Count, minimum, maximum and sum of an integer field over the matches that have it. */
    static final class Stats extends ColumnCollector {
        private final String field;
        long count;
        long min = Long.MAX_VALUE;
        long max = Long.MIN_VALUE;
        long sum;

        Stats(String field) {
            this.field = field;
        }

        @Override
        public LeafCollector getLeafCollector(LeafReaderContext context) throws IOException {
            NumericDocValues column = DocValues.getNumeric(context.reader(), field);
            return new ColumnLeafCollector() {
                @Override
                public void collect(int doc) throws IOException {
                    if (column.advanceExact(doc)) {
                        long value = column.longValue();
                        count++;
                        min = Math.min(min, value);
                        max = Math.max(max, value);
                        sum += value;
                    }
                }
            };
        }
    }

    static CollectorManager<Stats, String> stats(String field) {
        return new CollectorManager<>() {
            @Override
            public Stats newCollector() {
                return new Stats(field);
            }

            /** The protocol's STATS answer: {@code count min max sum}, {@code 0} for none. */
            @Override
            public String reduce(Collection<Stats> collectors) {
                Stats total = new Stats(field);
                for (Stats collector : collectors) {
                    total.count += collector.count;
                    total.min = Math.min(total.min, collector.min);
                    total.max = Math.max(total.max, collector.max);
                    total.sum += collector.sum;
                }
                if (total.count == 0) {
                    return "0";
                }
                return total.count + " " + total.min + " " + total.max + " " + total.sum;
            }
        };
    }
}
