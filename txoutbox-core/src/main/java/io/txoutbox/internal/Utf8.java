package io.txoutbox.internal;

/** UTF-8 sizes without encoding. */
final class Utf8 {

    private Utf8() {
    }

    /** Bytes of the string in UTF-8 (strings were checked for unpaired surrogates before). */
    static long length(String s) {
        long n = 0;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < 0x80) {
                n += 1;
            } else if (c < 0x800) {
                n += 2;
            } else if (Character.isHighSurrogate(c)) {
                n += 4;
                i++;
            } else {
                n += 3;
            }
        }
        return n;
    }
}
