package io.txoutbox.bench;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/** Small statistics and table helpers. */
final class Stats {

    private Stats() {
    }

    static double median(List<Double> values) {
        double[] a = values.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        if (a.length == 0) {
            return Double.NaN;
        }
        return a.length % 2 == 1 ? a[a.length / 2] : (a[a.length / 2 - 1] + a[a.length / 2]) / 2;
    }

    static double min(List<Double> values) {
        return values.stream().mapToDouble(Double::doubleValue).min().orElse(Double.NaN);
    }

    static double max(List<Double> values) {
        return values.stream().mapToDouble(Double::doubleValue).max().orElse(Double.NaN);
    }

    /** Percentile (nearest rank) of a sorted array. */
    static long percentile(long[] sorted, double p) {
        if (sorted.length == 0) {
            return Long.MIN_VALUE;
        }
        int rank = (int) Math.ceil(p / 100.0 * sorted.length);
        return sorted[Math.max(0, Math.min(sorted.length - 1, rank - 1))];
    }

    static long[] sorted(long[] values, int n) {
        long[] a = Arrays.copyOf(values, n);
        Arrays.sort(a);
        return a;
    }

    static String fmt(double v) {
        if (Double.isNaN(v)) {
            return "-";
        }
        if (Math.abs(v) >= 100) {
            return String.format("%,.0f", v);
        }
        return String.format("%.2f", v);
    }

    /** Micros as milliseconds with one decimal. */
    static String ms(long micros) {
        return micros == Long.MIN_VALUE ? "-" : String.format("%.1f", micros / 1000.0);
    }

    /** A Markdown table. */
    static final class Table {
        private final List<String[]> rows = new ArrayList<>();

        Table(String... header) {
            rows.add(header);
        }

        Table row(Object... cells) {
            String[] r = new String[cells.length];
            for (int i = 0; i < cells.length; i++) {
                r[i] = String.valueOf(cells[i]);
            }
            rows.add(r);
            return this;
        }

        @Override
        public String toString() {
            int cols = rows.get(0).length;
            int[] w = new int[cols];
            for (String[] r : rows) {
                for (int i = 0; i < cols && i < r.length; i++) {
                    w[i] = Math.max(w[i], r[i].length());
                }
            }
            StringBuilder sb = new StringBuilder();
            for (int ri = 0; ri < rows.size(); ri++) {
                String[] r = rows.get(ri);
                sb.append('|');
                for (int i = 0; i < cols; i++) {
                    String c = i < r.length ? r[i] : "";
                    sb.append(' ').append(i == 0 ? pad(c, w[i]) : lpad(c, w[i])).append(" |");
                }
                sb.append('\n');
                if (ri == 0) {
                    sb.append('|');
                    for (int i = 0; i < cols; i++) {
                        sb.append(i == 0 ? "-".repeat(w[i] + 2) : "-".repeat(w[i] + 1) + ":").append('|');
                    }
                    sb.append('\n');
                }
            }
            return sb.toString();
        }

        private static String pad(String s, int w) {
            return s + " ".repeat(w - s.length());
        }

        private static String lpad(String s, int w) {
            return " ".repeat(w - s.length()) + s;
        }
    }
}
