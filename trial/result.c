/* result.c: tells result lines (one JSON object per line, Katib's and Ray Tune's
 * convention for function trainables) from plain log output, and reads numbers out.
 * Not for: deciding what a metric means (scheduler) or storing it (store).
 *
 * Every line a trial prints comes through here, so it is treated as hostile: a cheap
 * linear pre-scan rejects invalid UTF-8, control bytes, unterminated strings, trailing
 * garbage and nesting deeper than RESULT_MAX_DEPTH before cJSON sees anything (cJSON
 * recurses per level), and rewrites the NaN/Infinity tokens Python's json.dumps emits,
 * which cJSON does not accept. */
#include "trial/trial_int.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define RESULT_MAX_DEPTH 64

/* NaN positions, as ordinals among the leaf values in document order. cJSON keeps
 * members and elements in input order, so a pre-order walk of the parsed tree meets the
 * leaves in the same order and can turn the placeholder 0s back into NaN. */
struct nans {
    size_t *at, n, cap;
};

static int nans_add(struct nans *v, size_t leaf)
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 8;
        size_t *na = realloc(v->at, cap * sizeof *na);
        if (!na) return -1;
        v->at = na;
        v->cap = cap;
    }
    v->at[v->n++] = leaf;
    return 0;
}

static int is_ws(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Bytes that end a bare token (a number or literal). */
static int is_delim(const unsigned char *s, size_t i, size_t n)
{
    return i >= n || is_ws(s[i]) || s[i] == ',' || s[i] == ']' || s[i] == '}';
}

static int is_hex(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* Skips the string whose opening quote is at s[i]; returns the index of its closing
 * quote, or 0 when the string is malformed or unterminated. */
static size_t skip_string(const unsigned char *s, size_t i, size_t n)
{
    for (i++; i < n; i++) {
        unsigned char c = s[i];
        if (c == '"') return i;
        if (c == '\\') {
            if (++i >= n) return 0;
            c = s[i];
            if (c == 'u') {
                if (n - i < 5 || !is_hex(s[i + 1]) || !is_hex(s[i + 2]) || !is_hex(s[i + 3]) ||
                    !is_hex(s[i + 4]))
                    return 0;
                i += 4;
            } else if (!strchr("\"\\/bfnrt", c) || c == '\0') {
                return 0;
            }
        } else if (c < 0x20) {
            return 0; /* raw control bytes (and NUL) are not allowed in JSON strings */
        } else if (c >= 0x80) {
            size_t len = trial__utf8_len(s + i, n - i);
            if (!len) return 0;
            i += len - 1;
        }
    }
    return 0;
}

static int match(const unsigned char *s, size_t i, size_t n, const char *word)
{
    size_t w = strlen(word);
    return n - i >= w && memcmp(s + i, word, w) == 0 && is_delim(s, i + w, n);
}

/* The pre-scan over the trimmed line s[0..n). Returns 1 if cJSON may see it; *copy is
 * then NULL (parse s as is) or a same-length copy with NaN -> "0  ", Infinity ->
 * "1e999   ", -Infinity -> "-1e999   " (the padding is JSON whitespace). */
static int prescan(const unsigned char *s, size_t n, char **copy, struct nans *nans)
{
    *copy = NULL;
    if (n < 2 || s[0] != '{' || s[n - 1] != '}') return 0;
    size_t depth = 0, leaf = 0;
    int in_token = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        switch (c) {
        case '{':
        case '[':
            in_token = 0;
            if (++depth > RESULT_MAX_DEPTH) return 0;
            break;
        case '}':
        case ']':
            in_token = 0;
            if (depth == 0) return 0;
            if (--depth == 0 && i != n - 1) return 0; /* something after the object */
            break;
        case ',':
        case ':':
        case ' ':
        case '\t':
        case '\n':
        case '\r':
            in_token = 0;
            break;
        case '"': {
            in_token = 0;
            size_t close = skip_string(s, i, n);
            if (!close) return 0;
            i = close;
            size_t k = i + 1;
            while (k < n && is_ws(s[k]))
                k++;
            if (k >= n || s[k] != ':') leaf++; /* a value, not a key */
            break;
        }
        default: {
            if (c < 0x20 || c >= 0x80) return 0; /* outside strings JSON is plain ASCII */
            if (in_token) break;
            in_token = 1;
            leaf++;
            const char *word = NULL, *repl = NULL;
            if (c == 'N' && match(s, i, n, "NaN"))
                word = "NaN", repl = "0  ";
            else if (c == 'I' && match(s, i, n, "Infinity"))
                word = "Infinity", repl = "1e999   ";
            else if (c == '-' && match(s, i, n, "-Infinity"))
                word = "-Infinity", repl = "-1e999   ";
            if (!word) break;
            if (!*copy) {
                *copy = malloc(n + 1);
                if (!*copy) return 0;
                memcpy(*copy, s, n);
                (*copy)[n] = '\0';
            }
            size_t w = strlen(word);
            memcpy(*copy + i, repl, w); /* strtod turns 1e999 into +-HUGE_VAL: infinity */
            if (word[0] == 'N' && nans_add(nans, leaf - 1) != 0) return 0;
            i += w - 1;
            in_token = 0; /* the delimiter after it is checked by match() */
            break;
        }
        }
    }
    return depth == 0;
}

/* Pre-order walk that turns the NaN placeholders back into NaN; *leaf counts the leaves
 * seen, *next indexes the next NaN ordinal wanted. Depth is at most RESULT_MAX_DEPTH. */
static void restore_nans(cJSON *item, const struct nans *v, size_t *leaf, size_t *next)
{
    for (; item && *next < v->n; item = item->next) {
        if (cJSON_IsObject(item) || cJSON_IsArray(item)) {
            restore_nans(item->child, v, leaf, next);
            continue;
        }
        if (*leaf == v->at[*next]) {
            /* Set directly: cJSON_SetNumberValue would convert NaN to int (undefined). */
            item->valuedouble = NAN;
            item->valueint = 0;
            (*next)++;
        }
        (*leaf)++;
    }
}

int trial_result_parse(const char *line, size_t len, cJSON **out)
{
    if (!line || !out) return 0;
    const unsigned char *s = (const unsigned char *)line;
    size_t b = 0, e = len;
    while (b < e && is_ws(s[b]))
        b++;
    while (e > b && is_ws(s[e - 1]))
        e--;
    char *copy = NULL;
    struct nans nans = {0};
    int ok = prescan(s + b, e - b, &copy, &nans);
    cJSON *root = NULL;
    if (ok) {
        const char *text = copy ? copy : line + b;
        const char *end = NULL;
        root = cJSON_ParseWithLengthOpts(text, e - b, &end, 0);
        ok = root && cJSON_IsObject(root) && end == text + (e - b);
    }
    if (ok && nans.n > 0) {
        size_t leaf = 0, next = 0;
        restore_nans(root->child, &nans, &leaf, &next);
    }
    free(copy);
    free(nans.at);
    if (!ok) {
        cJSON_Delete(root);
        return 0;
    }
    *out = root;
    return 1;
}

double trial_result_number(const cJSON *result, const char *key)
{
    if (!result || !key || !cJSON_IsObject(result)) return NAN;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(result, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}
