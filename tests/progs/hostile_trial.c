/* hostile_trial: a trial program whose output is built to hurt the reader of trial stdout
 * (tests/test_faults.c, bench/soak). Each mode prints one kind of hostile output, then
 * three ordinary results, so a test can check that tune survived and still recorded them.
 * Not for: anything outside tests; its output is deterministic (no time, no randomness). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Writes n bytes of c in 64 KiB chunks: the trial itself stays small whatever n is. */
static void spew(int c, size_t n)
{
    static char chunk[1 << 16];
    memset(chunk, c, sizeof chunk);
    while (n > 0) {
        size_t k = n < sizeof chunk ? n : sizeof chunk;
        fwrite(chunk, 1, k, stdout);
        n -= k;
    }
}

int main(int argc, char **argv)
{
    const char *mode = "none";
    long count = 1000000;
    for (int i = 1; i + 1 < argc; i++) {
        if (!strcmp(argv[i], "--mode"))
            mode = argv[++i];
        else if (!strcmp(argv[i], "--count"))
            count = atol(argv[++i]);
    }
    static char buf[1 << 16];
    setvbuf(stdout, buf, _IOFBF, sizeof buf);
    long it = 0;
    if (!strcmp(mode, "bigline")) {
        /* 100 MiB without a newline, opening like a result so it is not mere log text. */
        fputs("{\"loss\": 1, \"pad\": \"", stdout);
        spew('x', (size_t)100 << 20);
        fputs("\"}\n", stdout);
    } else if (!strcmp(mode, "garbage")) {
        /* 4 MiB of binary noise from a fixed LCG: NULs, newlines, braces, bytes >= 0x80. */
        uint32_t x = 12345;
        for (size_t i = 0; i < ((size_t)4 << 20); i++) {
            x = x * 1103515245u + 12345u;
            putchar((int)(x >> 24));
        }
        putchar('\n');
    } else if (!strcmp(mode, "utf8")) {
        static const char *const lines[] = {
            "{\"loss\": 0.5, \"s\": \"\xc3\x28\"}",          /* bad continuation */
            "{\"loss\": 0.5, \"s\": \"\xed\xa0\x80\"}",      /* a surrogate */
            "{\"loss\": 0.5, \"s\": \"\xf4\x90\x80\x80\"}",  /* above U+10FFFF */
            "{\"loss\": 0.5, \"s\": \"\xc0\xaf\"}",          /* overlong '/' */
            "{\"loss\": 0.5, \"\xff\xfe\": 1}",              /* bad key */
            "\xff\xfe\xfd plain log line that is not UTF-8", /* not even JSON */
        };
        for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
            printf("%s\n", lines[i]);
    } else if (!strcmp(mode, "deep")) {
        /* 500,000 levels: a recursive parser would blow its stack. */
        fputs("{\"a\": ", stdout);
        spew('[', 500000);
        spew(']', 500000);
        fputs("}\n", stdout);
        fputs("{\"b\": ", stdout);
        spew('{', 1); /* and an unbalanced one */
        spew('[', 100000);
        fputs("\n", stdout);
    } else if (!strcmp(mode, "nan")) {
        /* Python's json.dumps writes these: they are results, with a metric that is not a
         * finite number. */
        printf("{\"training_iteration\": %ld, \"loss\": NaN}\n", ++it);
        printf("{\"training_iteration\": %ld, \"loss\": Infinity}\n", ++it);
        printf("{\"training_iteration\": %ld, \"loss\": -Infinity}\n", ++it);
    } else if (!strcmp(mode, "string")) {
        printf("{\"training_iteration\": %ld, \"loss\": \"0.25\"}\n", ++it);
    } else if (!strcmp(mode, "flood")) {
        /* As fast as stdio goes: far more than a million lines per second. */
        for (long i = 0; i < count; i++)
            printf("{\"training_iteration\": %ld, \"loss\": 0.5}\n", ++it);
    } else if (strcmp(mode, "none") != 0) {
        fprintf(stderr, "hostile_trial: unknown mode %s\n", mode);
        return 2;
    }
    for (int k = 0; k < 3; k++)
        printf("{\"training_iteration\": %ld, \"loss\": %g}\n", ++it, 0.5 / (k + 1));
    fflush(stdout);
    return 0;
}
