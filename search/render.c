/* search/render.c: fills a command template with one configuration, giving an argv
 * vector (never a shell string), and prints numbers, and configurations as JSON, so that
 * they read back exactly.
 * Not for: starting processes (trial/ does that) or checking the file (parse.c). */
#include <float.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonw/jsonw.h"
#include "search/render.h"
#include "search/space_int.h"

/* snprintf and strtod follow LC_NUMERIC; a program that called setlocale(LC_ALL, "")
 * in a German locale would print "0,1". Numbers here are always C-locale numbers. */
static locale_t c_numeric_begin(locale_t *old)
{
    const char *dp = localeconv()->decimal_point;
    if (dp && strcmp(dp, ".") == 0) return (locale_t)0;
    locale_t c = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    if (c) *old = uselocale(c);
    return c;
}

static void c_numeric_end(locale_t c, locale_t old)
{
    if (!c) return;
    uselocale(old);
    freelocale(c);
}

double space__strtod(const char *s)
{
    locale_t old = (locale_t)0, c = c_numeric_begin(&old);
    double v = strtod(s, NULL);
    c_numeric_end(c, old);
    return v;
}

char *space_format_number(double v, char buf[32])
{
    if (isnan(v)) {
        snprintf(buf, 32, "nan");
        return buf;
    }
    if (isinf(v)) {
        snprintf(buf, 32, v < 0 ? "-inf" : "inf");
        return buf;
    }
    if (v == floor(v) && fabs(v) < 0x1.0p53) {
        /* Integral values print as integers ("128", not "1.28e+02"), as %.0f prints them
         * ("-0" too), through the integer formatter: %.0f's float path was most of the
         * cost of a trial's environment (TUNE_NUM_GPUS, TUNE_MAX_T, ...). */
        snprintf(buf, 32, "%s%lld", v == 0 && signbit(v) ? "-" : "", (long long)v);
        return buf;
    }
    locale_t old = (locale_t)0, c = c_numeric_begin(&old);
    /* The shortest %g form that reads back as the same double. %.15g is that form
     * whenever any form of 15 digits or fewer reads back: a shorter decimal D that
     * reads back lies within half an ulp of v, far inside the 15-digit rounding
     * interval, so %.15g rounds to D and %g drops the zeros after it; and a
     * non-integral v below 2^53 needs more digits than its exponent, so %.15g picks
     * the same fixed or exponent form as the shorter precision would. Three tries at
     * most instead of seventeen: this runs for every number of every result line.
     * Subnormals have an absolute ulp, so the argument does not hold for them: they
     * try every precision. */
    for (int prec = fabs(v) >= DBL_MIN ? 15 : 1; prec <= 17; prec++) {
        snprintf(buf, 32, "%.*g", prec, v);
        if (prec == 17 || strtod(buf, NULL) == v) break;
    }
    c_numeric_end(c, old);
    return buf;
}

int space__tmpl_next(const char **pp, space_tmpl_piece_t *piece, const char **at, char *msg,
                     size_t msglen)
{
    const char *p = *pp;
    if (!*p) return 0;
    /* "{{" and "}}" are literal braces, as in Python's str.format. */
    if ((p[0] == '{' && p[1] == '{') || (p[0] == '}' && p[1] == '}')) {
        *piece = (space_tmpl_piece_t){.s = p, .len = 1, .is_name = 0};
        *pp = p + 2;
        return 1;
    }
    if (p[0] == '}') {
        *at = p;
        snprintf(msg, msglen, "unmatched \"}\" (write \"}}\" for a literal brace)");
        return -1;
    }
    if (p[0] == '{') {
        const char *q = p + 1;
        while (*q && *q != '}' && *q != '{')
            q++;
        if (*q != '}') {
            *at = p;
            snprintf(msg, msglen, "unmatched \"{\" (write \"{{\" for a literal brace)");
            return -1;
        }
        if (q == p + 1) {
            *at = p;
            snprintf(msg, msglen, "empty placeholder \"{}\" (write \"{{}}\" for literal braces)");
            return -1;
        }
        *piece = (space_tmpl_piece_t){.s = p + 1, .len = (size_t)(q - p - 1), .is_name = 1};
        *pp = q + 1;
        return 1;
    }
    const char *q = p;
    while (*q && *q != '{' && *q != '}')
        q++;
    *piece = (space_tmpl_piece_t){.s = p, .len = (size_t)(q - p), .is_name = 0};
    *pp = q;
    return 1;
}

struct sbuf {
    char *p;
    size_t len, cap;
};

static int sb_add(struct sbuf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *np = realloc(b->p, cap);
        if (!np) return -1;
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
    return 0;
}

/* Appends the text a placeholder stands for: strings raw, numbers exactly, other JSON
 * as compact JSON. Returns 0, SPACE_ENOMEM, or SPACE_EINVAL when config lacks it. */
static int add_value(struct sbuf *b, const cJSON *v)
{
    char num[32];
    if (cJSON_IsString(v)) return sb_add(b, v->valuestring, strlen(v->valuestring));
    if (cJSON_IsNumber(v)) {
        space_format_number(v->valuedouble, num);
        return sb_add(b, num, strlen(num));
    }
    if (cJSON_IsTrue(v)) return sb_add(b, "true", 4);
    if (cJSON_IsFalse(v)) return sb_add(b, "false", 5);
    if (cJSON_IsNull(v)) return sb_add(b, "null", 4);
    char *js = space_json_print(v);
    if (!js) return -1;
    int rc = sb_add(b, js, strlen(js));
    free(js);
    return rc;
}

/* The member of obj whose key is exactly name[0..len), or NULL. */
static const cJSON *member(const cJSON *obj, const char *name, size_t len)
{
    if (!cJSON_IsObject(obj)) return NULL;
    for (const cJSON *m = obj->child; m; m = m->next)
        if (m->string && strlen(m->string) == len && memcmp(m->string, name, len) == 0) return m;
    return NULL;
}

const cJSON *space__lookup(const cJSON *obj, const char *name, size_t len, int *head)
{
    const cJSON *v = member(obj, name, len);
    if (v) {
        *head = 1;
        return v;
    }
    for (size_t k = 0; k < len; k++) {
        if (name[k] != '.' || !(v = member(obj, name, k))) continue;
        *head = 1;
        int deeper = 0;
        const cJSON *r = space__lookup(v, name + k + 1, len - k - 1, &deeper);
        if (r) return r;
    }
    return NULL;
}

void space_argv_free(char **argv)
{
    for (char **p = argv; p && *p; p++)
        free(*p);
    free(argv);
}

int space_render_argv(const space_t *s, const cJSON *config, const char *trial_id,
                      const char *trial_dir, char ***argv_out, char *err, size_t errlen)
{
    int argc = s->set.command_argc, j = 0; /* j: the next argv slot (elements may be left out) */
    char **argv = calloc((size_t)argc + 1, sizeof *argv);
    if (!argv) goto nomem;
    for (int i = 0; i < argc; i++) {
        struct sbuf b = {0};
        const char *p = s->set.command[i], *bad = NULL;
        space_tmpl_piece_t piece;
        char msg[128];
        int r = 0, absent = 0;
        if (sb_add(&b, "", 0)) goto nomem;
        argv[j] = b.p; /* owned by argv from here on, so every exit frees it */
        while (!absent && (r = space__tmpl_next(&p, &piece, &bad, msg, sizeof msg)) > 0) {
            int rc = 0;
            if (!piece.is_name) {
                rc = sb_add(&b, piece.s, piece.len);
            } else if (piece.len == 8 && memcmp(piece.s, "trial_id", 8) == 0) {
                rc = sb_add(&b, trial_id ? trial_id : "", trial_id ? strlen(trial_id) : 0);
            } else if (piece.len == 9 && memcmp(piece.s, "trial_dir", 9) == 0) {
                rc = sb_add(&b, trial_dir ? trial_dir : "", trial_dir ? strlen(trial_dir) : 0);
            } else {
                int head = 0;
                const cJSON *v = config ? space__lookup(config, piece.s, piece.len, &head) : NULL;
                if (!v && space__is_max_t(piece.s, piece.len) && space__has_max_t(&s->set)) {
                    char nb[32];
                    space_format_number(s->set.sched.max_t, nb);
                    rc = sb_add(&b, nb, strlen(nb));
                    argv[j] = b.p;
                    if (rc) goto nomem;
                    continue;
                }
                if (!v && head && i > 0) {
                    /* A nested value of a branch this trial did not draw: the element
                     * goes, as docs/space.md ("Nested spaces") says. */
                    absent = 1;
                    continue;
                }
                if (!v) {
                    if (err && errlen)
                        snprintf(err, errlen,
                                 "command[%d]: the configuration has no value for \"{%.*s}\"", i,
                                 (int)(piece.len < 200 ? piece.len : 200), piece.s);
                    space_argv_free(argv);
                    return SPACE_EINVAL;
                }
                rc = add_value(&b, v);
            }
            argv[j] = b.p;
            if (rc) goto nomem;
        }
        argv[j] = b.p;
        if (absent) {
            free(argv[j]);
            argv[j] = NULL;
            continue;
        }
        if (r < 0) {
            if (err && errlen) snprintf(err, errlen, "command[%d]: %s", i, msg);
            space_argv_free(argv);
            return SPACE_EINVAL;
        }
        j++;
    }
    *argv_out = argv;
    return SPACE_OK;
nomem:
    space_argv_free(argv);
    if (err && errlen) snprintf(err, errlen, "out of memory");
    return SPACE_ENOMEM;
}

/* ---- JSON with exact numbers ---------------------------------------------------- */
/* cJSON's own printer writes numbers with %.15g and keeps that form when it reads back
 * within a tolerance, so 8.731745949053503 became 8.7317459490535: a recorded
 * configuration that is not the one the trial received. This printer writes every number
 * as space_format_number does for argv, so argv, TUNE_CONFIG and the database agree. */
static int sb_put(void *b, const char *s, size_t n)
{
    return sb_add(b, s, n);
}

static int json_string(struct sbuf *b, const char *s)
{
    return jsonw_quote_cb(s, 0, sb_put, b);
}

static int json_indent(struct sbuf *b, int depth)
{
    for (int i = 0; i < depth; i++)
        if (sb_add(b, "\t", 1)) return -1;
    return 0;
}

/* pretty: cJSON_Print's layout (objects one member a line, tab-indented; arrays on one
 * line), so that readers of the formatted output see the same shape as before. */
static int json_value(struct sbuf *b, const cJSON *v, int pretty, int depth)
{
    char num[32];
    if (!v) return sb_add(b, "null", 4);
    if (cJSON_IsRaw(v))
        return v->valuestring ? sb_add(b, v->valuestring, strlen(v->valuestring)) : -1;
    if (cJSON_IsNull(v) || cJSON_IsInvalid(v)) return sb_add(b, "null", 4);
    if (cJSON_IsTrue(v)) return sb_add(b, "true", 4);
    if (cJSON_IsFalse(v)) return sb_add(b, "false", 5);
    if (cJSON_IsNumber(v)) {
        /* JSON has no NaN or infinity: null, as cJSON prints them. */
        if (!isfinite(v->valuedouble)) return sb_add(b, "null", 4);
        space_format_number(v->valuedouble, num);
        return sb_add(b, num, strlen(num));
    }
    if (cJSON_IsString(v)) return json_string(b, v->valuestring ? v->valuestring : "");
    if (cJSON_IsArray(v)) {
        if (sb_add(b, "[", 1)) return -1;
        for (const cJSON *c = v->child; c; c = c->next) {
            if (json_value(b, c, pretty, depth + 1)) return -1;
            if (c->next && sb_add(b, pretty ? ", " : ",", pretty ? 2 : 1)) return -1;
        }
        return sb_add(b, "]", 1);
    }
    if (cJSON_IsObject(v)) {
        if (sb_add(b, pretty ? "{\n" : "{", pretty ? 2 : 1)) return -1;
        for (const cJSON *c = v->child; c; c = c->next) {
            if (pretty && json_indent(b, depth + 1)) return -1;
            if (json_string(b, c->string ? c->string : "")) return -1;
            if (sb_add(b, pretty ? ":\t" : ":", pretty ? 2 : 1)) return -1;
            if (json_value(b, c, pretty, depth + 1)) return -1;
            if (c->next && sb_add(b, ",", 1)) return -1;
            if (pretty && sb_add(b, "\n", 1)) return -1;
        }
        if (pretty && json_indent(b, depth)) return -1;
        return sb_add(b, "}", 1);
    }
    return sb_add(b, "null", 4);
}

static char *json_print(const cJSON *v, int pretty)
{
    struct sbuf b = {0};
    if (sb_add(&b, "", 0) || json_value(&b, v, pretty, 0)) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

char *space_json_print(const cJSON *v)
{
    return json_print(v, 0);
}

char *space_json_print_pretty(const cJSON *v)
{
    return json_print(v, 1);
}
