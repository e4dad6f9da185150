/* result_scan.c: the scheduler's fast path for result lines. One pass over the bytes, no
 * allocation: it tells whether a line is a plain JSON object that trial_result_parse
 * would take as a result and that can be stored as it came, and reads the few top-level
 * numbers the loop needs. Not for: anything it is unsure of (NaN/Infinity, \u escapes,
 * escaped keys, unusual numbers): it says so and the caller uses trial_result_parse.
 *
 * The rule that keeps the two in step: a yes from here is a yes from trial_result_parse
 * with the same numbers. So the grammar here is strict RFC 8259 JSON, narrower than what
 * result.c's pre-scan plus cJSON accept, with the same byte rules (UTF-8 as both check
 * it with trial__utf8_len, no control bytes, nesting bounded), and numbers are read by
 * strtod from the same text cJSON hands strtod. fuzz/fuzz_result.c checks the rule on every
 * input it sees. */
#include "trial/trial_int.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Nested containers below the top-level object; result.c allows 64 levels in all, so a
 * yes here stays within its bound. Deeper lines go the slow way. */
#define SCAN_MAX_DEPTH 32
/* cJSON copies at most 63 characters of a number before strtod; longer numbers go the
 * slow way (cJSON rejects them). */
#define SCAN_MAX_NUMBER 63

typedef const unsigned char *ptr;

static inline ptr skip_ws(ptr p, ptr e)
{
    while (p < e && *p <= ' ' && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

/* Bytes a string may hold as they are: printable ASCII less '"' and '\\'. A table
 * lookup per byte is the whole cost of the long run of plain bytes that most strings are. */
/* clang-format off */
static const unsigned char plain_byte[256] = {
    [0x20] = 1, 1, 0 /* '"' */, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0 /* '\\' */, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
/* clang-format on */

/* The string whose opening quote is at p: returns the byte after its closing quote, or
 * NULL when it is malformed or uses a \u escape (cJSON rejects some of those that the
 * pre-scan lets through: lone surrogates). *escaped says whether it had any escape. */
static ptr scan_string(ptr p, ptr e, int *escaped)
{
    *escaped = 0;
    for (p++; p < e; p++) {
        while (p < e && plain_byte[*p])
            p++;
        if (p >= e) return NULL;
        unsigned char c = *p;
        if (c == '"') return p + 1;
        if (c == '\\') {
            if (++p >= e) return NULL;
            c = *p;
            if (!(c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' ||
                  c == 'r' || c == 't'))
                return NULL;
            *escaped = 1;
        } else if (c < 0x20) {
            return NULL;
        } else if (c >= 0x80) {
            size_t len = trial__utf8_len(p, (size_t)(e - p));
            if (!len) return NULL;
            p += len - 1;
        }
    }
    return NULL;
}

static int is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

/* A number in RFC 8259's grammar: returns the byte after it, or NULL. */
static ptr scan_number(ptr p, ptr e)
{
    ptr s = p;
    if (p < e && *p == '-') p++;
    if (p >= e) return NULL;
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
        while (p < e && is_digit(*p))
            p++;
    } else {
        return NULL;
    }
    if (p < e && *p == '.') {
        if (++p >= e || !is_digit(*p)) return NULL;
        while (p < e && is_digit(*p))
            p++;
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < e && (*p == '+' || *p == '-')) p++;
        if (p >= e || !is_digit(*p)) return NULL;
        while (p < e && is_digit(*p))
            p++;
    }
    return p - s > SCAN_MAX_NUMBER ? NULL : p;
}

/* Exact powers of ten, for the fast path below. */
static const double pow10_exact[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                       1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                       1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* Clinger's fast path (1990), as fast_float and glibc use it before their general
 * algorithms: a number of at most 15 significant digits whose decimal exponent is within
 * +-22 is w * 10^e or w / 10^-e with w and 10^|e| both exact doubles, so one correctly
 * rounded operation gives exactly what strtod gives. 0 when it does not apply. The token
 * is valid JSON (scan_number said so). */
static int number_fast(ptr s, ptr p, double *out)
{
#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
    return 0; /* x87 extended precision would round twice */
#endif
    int neg = *s == '-';
    if (neg) s++;
    uint64_t w = 0;
    int digits = 0, exp10 = 0;
    for (; s < p && is_digit(*s); s++) {
        if (digits || *s != '0') digits++;
        w = w * 10 + (uint64_t)(*s - '0');
        if (digits > 15) return 0;
    }
    if (s < p && *s == '.') {
        for (s++; s < p && is_digit(*s); s++) {
            if (digits || *s != '0') digits++;
            w = w * 10 + (uint64_t)(*s - '0');
            exp10--;
            if (digits > 15) return 0;
        }
    }
    if (s < p) { /* e or E */
        s++;
        int eneg = *s == '-', x = 0;
        if (*s == '+' || *s == '-') s++;
        for (; s < p; s++) {
            x = x * 10 + (*s - '0');
            if (x > 1000) return 0;
        }
        exp10 += eneg ? -x : x;
    }
    if (exp10 < -22 || exp10 > 22) return 0;
    double v = (double)w; /* exact: w < 10^15 < 2^53 */
    v = exp10 < 0 ? v / pow10_exact[-exp10] : v * pow10_exact[exp10];
    *out = neg ? -v : v; /* -0 for "-0", as strtod */
    return 1;
}

/* The value of a number token, as cJSON reads it: strtod over the same characters (or
 * the fast path, which gives the same double). */
static int number_value(ptr s, ptr p, double *out)
{
    if (number_fast(s, p, out)) return 1;
    char buf[SCAN_MAX_NUMBER + 1];
    size_t n = (size_t)(p - s);
    memcpy(buf, s, n);
    buf[n] = 0;
    char *end;
    *out = strtod(buf, &end);
    return end == buf + n; /* a locale whose decimal point is not '.' stops strtod early */
}

static ptr scan_value(ptr p, ptr e, int depth);

/* The members of an object or the elements of an array, after its opening bracket. */
static ptr scan_container(ptr p, ptr e, int depth, unsigned char close)
{
    if (depth > SCAN_MAX_DEPTH) return NULL;
    p = skip_ws(p, e);
    if (p < e && *p == close) return p + 1;
    for (;;) {
        if (close == '}') {
            int esc;
            if (p >= e || *p != '"' || !(p = scan_string(p, e, &esc))) return NULL;
            p = skip_ws(p, e);
            if (p >= e || *p != ':') return NULL;
            p = skip_ws(p + 1, e);
        }
        if (!(p = scan_value(p, e, depth))) return NULL;
        p = skip_ws(p, e);
        if (p >= e) return NULL;
        if (*p == close) return p + 1;
        if (*p != ',') return NULL;
        p = skip_ws(p + 1, e);
    }
}

static ptr scan_literal(ptr p, ptr e, const char *word, size_t n)
{
    return (size_t)(e - p) >= n && memcmp(p, word, n) == 0 ? p + n : NULL;
}

/* Any value; the caller checks what follows it. */
static ptr scan_value(ptr p, ptr e, int depth)
{
    if (p >= e) return NULL;
    int esc;
    switch (*p) {
    case '"':
        return scan_string(p, e, &esc);
    case '{':
        return scan_container(p + 1, e, depth + 1, '}');
    case '[':
        return scan_container(p + 1, e, depth + 1, ']');
    case 't':
        return scan_literal(p, e, "true", 4);
    case 'f':
        return scan_literal(p, e, "false", 5);
    case 'n':
        return scan_literal(p, e, "null", 4);
    default:
        return scan_number(p, e); /* NaN and Infinity end here too: not JSON */
    }
}

int trial_result_scan(const char *line, size_t len, const char *const *keys, size_t nkeys,
                      double *vals)
{
    if (!line || nkeys > TRIAL_SCAN_MAX_KEYS || (nkeys && (!keys || !vals))) return 0;
    size_t klen[TRIAL_SCAN_MAX_KEYS];
    for (size_t i = 0; i < nkeys; i++) {
        vals[i] = NAN;
        klen[i] = keys[i] ? strlen(keys[i]) : 0;
    }
    unsigned found = 0; /* cJSON finds a key's first member; later ones are not read */
    ptr p = (ptr)line, e = p + len;
    p = skip_ws(p, e);
    if (p >= e || *p != '{') return 0;
    p = skip_ws(p + 1, e);
    if (p < e && *p == '}') {
        p++;
    } else {
        for (;;) {
            int esc;
            ptr k = p + 1;
            if (p >= e || *p != '"' || !(p = scan_string(p, e, &esc))) return 0;
            if (esc) return 0; /* its name is not its bytes: leave the matching to cJSON */
            size_t kn = (size_t)(p - 1 - k);
            size_t want = nkeys;
            for (size_t i = 0; i < nkeys; i++)
                if (!(found & (1u << i)) && keys[i] && kn == klen[i] && !memcmp(k, keys[i], kn)) {
                    want = i;
                    break;
                }
            p = skip_ws(p, e);
            if (p >= e || *p != ':') return 0;
            p = skip_ws(p + 1, e);
            if (p >= e) return 0;
            if (*p == '-' || is_digit(*p)) {
                ptr s = p;
                if (!(p = scan_number(p, e))) return 0;
                if (want < nkeys && !number_value(s, p, &vals[want])) return 0;
            } else if (!(p = scan_value(p, e, 0))) {
                return 0; /* a key that is no number reads as NaN, as trial_result_number */
            }
            if (want < nkeys) found |= 1u << want;
            p = skip_ws(p, e);
            if (p >= e) return 0;
            if (*p == '}') {
                p++;
                break;
            }
            if (*p != ',') return 0;
            p = skip_ws(p + 1, e);
        }
    }
    return skip_ws(p, e) == e;
}
