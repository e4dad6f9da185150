/* search/json.c: a small strict JSON reader (RFC 8259) that remembers where every
 * value and key sits in the text, so that space.json errors can say LINE:COL.
 * Not for: general JSON work elsewhere (cJSON does that); it builds a read-only tree. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/space_int.h"

/* Deeper nesting than this is refused rather than risking the C stack. */
#define SJ_MAX_DEPTH 256

struct sj_parser {
    const char *t;
    size_t len, pos;
    size_t err_off;
    char *msg;
    size_t msglen;
    int rc;
};

static int sj_fail(struct sj_parser *p, size_t off, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int sj_fail(struct sj_parser *p, size_t off, int rc, const char *fmt, ...)
{
    if (p->rc == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->msg, p->msglen, fmt, ap);
        va_end(ap);
        p->err_off = off;
        p->rc = rc;
    }
    return rc;
}

static int sj_nomem(struct sj_parser *p)
{
    return sj_fail(p, p->pos, SPACE_ENOMEM, "out of memory");
}

static void sj_skip_ws(struct sj_parser *p)
{
    while (p->pos < p->len) {
        char c = p->t[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        p->pos++;
    }
}

/* Describes the character at pos for a message: 'x', end of file, or a byte code. */
static const char *sj_what(struct sj_parser *p, size_t pos, char buf[32])
{
    if (pos >= p->len) return "end of file";
    unsigned char c = (unsigned char)p->t[pos];
    if (c >= 0x20 && c < 0x7f)
        snprintf(buf, 32, "'%c'", c);
    else
        snprintf(buf, 32, "byte 0x%02x", c);
    return buf;
}

static int sj_unexpected(struct sj_parser *p, const char *expected)
{
    char b[32];
    return sj_fail(p, p->pos, SPACE_EINVAL, "invalid JSON: expected %s, found %s", expected,
                   sj_what(p, p->pos, b));
}

static sj_node_t *sj_new(struct sj_parser *p, sj_type_t type, size_t off)
{
    sj_node_t *n = calloc(1, sizeof *n);
    if (!n) {
        sj_nomem(p);
        return NULL;
    }
    n->type = type;
    n->off = off;
    return n;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int sj_hex4(struct sj_parser *p, size_t at, unsigned *out)
{
    if (at + 4 > p->len)
        return sj_fail(p, at, SPACE_EINVAL, "invalid JSON: \\u needs four hex digits");
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(p->t[at + i]);
        if (h < 0) return sj_fail(p, at, SPACE_EINVAL, "invalid JSON: \\u needs four hex digits");
        v = v * 16 + (unsigned)h;
    }
    *out = v;
    return 0;
}

static size_t put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xc0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xe0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        o[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    o[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* Reads a string starting at the opening quote; *out is a new NUL-terminated copy. */
static int sj_string(struct sj_parser *p, char **out)
{
    size_t start = p->pos;
    p->pos++; /* opening quote */
    /* The decoded text is never longer than the raw text. */
    size_t end = p->pos;
    while (end < p->len && p->t[end] != '"')
        end += (p->t[end] == '\\') ? 2 : 1;
    if (end >= p->len) return sj_fail(p, start, SPACE_EINVAL, "invalid JSON: unterminated string");
    char *s = malloc(end - p->pos + 1), *o = s;
    if (!s) return sj_nomem(p);
    while (p->t[p->pos] != '"') {
        unsigned char c = (unsigned char)p->t[p->pos];
        if (c < 0x20) {
            free(s);
            return sj_fail(p, p->pos, SPACE_EINVAL,
                           "invalid JSON: control character (byte 0x%02x) in a string; write "
                           "it as an escape such as \\n",
                           c);
        }
        if (c != '\\') {
            *o++ = (char)c;
            p->pos++;
            continue;
        }
        size_t esc = p->pos;
        char e = p->t[p->pos + 1];
        p->pos += 2;
        switch (e) {
        case '"':
            *o++ = '"';
            break;
        case '\\':
            *o++ = '\\';
            break;
        case '/':
            *o++ = '/';
            break;
        case 'b':
            *o++ = '\b';
            break;
        case 'f':
            *o++ = '\f';
            break;
        case 'n':
            *o++ = '\n';
            break;
        case 'r':
            *o++ = '\r';
            break;
        case 't':
            *o++ = '\t';
            break;
        case 'u': {
            unsigned cp;
            if (sj_hex4(p, p->pos, &cp) != 0) {
                free(s);
                return p->rc;
            }
            p->pos += 4;
            if (cp >= 0xd800 && cp <= 0xdbff) {
                unsigned lo;
                if (p->pos + 6 <= p->len && p->t[p->pos] == '\\' && p->t[p->pos + 1] == 'u' &&
                    sj_hex4(p, p->pos + 2, &lo) == 0 && lo >= 0xdc00 && lo <= 0xdfff) {
                    p->pos += 6;
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                } else {
                    free(s);
                    p->rc = 0; /* a failed look-ahead is not the error to report */
                    return sj_fail(p, esc, SPACE_EINVAL,
                                   "invalid JSON: unpaired surrogate \\u%04X in a string", cp);
                }
            } else if (cp >= 0xdc00 && cp <= 0xdfff) {
                free(s);
                return sj_fail(p, esc, SPACE_EINVAL,
                               "invalid JSON: unpaired surrogate \\u%04X in a string", cp);
            }
            if (cp == 0) {
                free(s);
                return sj_fail(p, esc, SPACE_EINVAL, "\\u0000 is not allowed in strings here");
            }
            /* A \uXXXX escape takes 6 bytes and decodes to at most 3 (4 for a pair of
             * 12), so the buffer is big enough. */
            o += put_utf8(o, cp);
            break;
        }
        default:
            free(s);
            return sj_fail(p, esc, SPACE_EINVAL, "invalid JSON: unknown escape \\%c in a string",
                           (e >= 0x20 && e < 0x7f) ? e : '?');
        }
    }
    *o = '\0';
    p->pos++; /* closing quote */
    *out = s;
    return 0;
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static int sj_number(struct sj_parser *p, sj_node_t *n)
{
    size_t start = p->pos, i = p->pos;
    int is_int = 1;
    if (i < p->len && p->t[i] == '-') i++;
    if (i >= p->len || !is_digit(p->t[i]))
        return sj_fail(p, start, SPACE_EINVAL, "invalid JSON: malformed number");
    if (p->t[i] == '0') {
        i++;
        if (i < p->len && is_digit(p->t[i]))
            return sj_fail(p, start, SPACE_EINVAL,
                           "invalid JSON: numbers cannot have leading zeros");
    } else {
        while (i < p->len && is_digit(p->t[i]))
            i++;
    }
    if (i < p->len && p->t[i] == '.') {
        is_int = 0;
        i++;
        if (i >= p->len || !is_digit(p->t[i]))
            return sj_fail(p, start, SPACE_EINVAL,
                           "invalid JSON: malformed number (a digit must follow '.')");
        while (i < p->len && is_digit(p->t[i]))
            i++;
    }
    if (i < p->len && (p->t[i] == 'e' || p->t[i] == 'E')) {
        is_int = 0;
        i++;
        if (i < p->len && (p->t[i] == '+' || p->t[i] == '-')) i++;
        if (i >= p->len || !is_digit(p->t[i]))
            return sj_fail(p, start, SPACE_EINVAL,
                           "invalid JSON: malformed number (exponent without digits)");
        while (i < p->len && is_digit(p->t[i]))
            i++;
    }
    n->raw = malloc(i - start + 1);
    if (!n->raw) return sj_nomem(p);
    memcpy(n->raw, p->t + start, i - start);
    n->raw[i - start] = '\0';
    errno = 0;
    n->num = space__strtod(n->raw);
    if (!isfinite(n->num))
        return sj_fail(p, start, SPACE_EINVAL, "number %s is out of range", n->raw);
    n->is_int = is_int;
    p->pos = i;
    return 0;
}

static int sj_literal(struct sj_parser *p, const char *word)
{
    size_t k = strlen(word);
    if (p->pos + k > p->len || memcmp(p->t + p->pos, word, k) != 0) return -1;
    p->pos += k;
    return 0;
}

static void sj_append(sj_node_t *parent, sj_node_t *child)
{
    if (parent->last)
        parent->last->next = child;
    else
        parent->child = child;
    parent->last = child;
    parent->n++;
}

static sj_node_t *sj_value(struct sj_parser *p, int depth);

static sj_node_t *sj_container(struct sj_parser *p, int depth, int is_obj)
{
    sj_node_t *n = sj_new(p, is_obj ? SJ_OBJECT : SJ_ARRAY, p->pos);
    if (!n) return NULL;
    char close = is_obj ? '}' : ']';
    if (depth >= SJ_MAX_DEPTH) {
        sj_fail(p, p->pos, SPACE_EINVAL, "invalid JSON: nested deeper than %d levels",
                SJ_MAX_DEPTH);
        goto fail;
    }
    p->pos++;
    sj_skip_ws(p);
    if (p->pos < p->len && p->t[p->pos] == close) {
        p->pos++;
        return n;
    }
    for (;;) {
        sj_skip_ws(p);
        char *key = NULL;
        size_t key_off = p->pos;
        if (is_obj) {
            if (p->pos >= p->len || p->t[p->pos] != '"') {
                if (p->pos < p->len && p->t[p->pos] == '}' && n->n > 0)
                    sj_fail(p, p->pos, SPACE_EINVAL,
                            "invalid JSON: trailing comma before '}' (JSON allows none)");
                else
                    sj_unexpected(p, "a key in double quotes");
                goto fail;
            }
            if (sj_string(p, &key) != 0) goto fail;
            for (sj_node_t *m = n->child; m; m = m->next) {
                if (strcmp(m->key, key) == 0) {
                    int line, col;
                    space__json_pos(p->t, p->len, m->key_off, &line, &col);
                    sj_fail(p, key_off, SPACE_EINVAL,
                            "duplicate key \"%s\" (first given at line %d, column %d)", key, line,
                            col);
                    free(key);
                    goto fail;
                }
            }
            sj_skip_ws(p);
            if (p->pos >= p->len || p->t[p->pos] != ':') {
                free(key);
                sj_unexpected(p, "':' after the key");
                goto fail;
            }
            p->pos++;
            sj_skip_ws(p);
        } else if (p->pos < p->len && p->t[p->pos] == ']' && n->n > 0) {
            sj_fail(p, p->pos, SPACE_EINVAL,
                    "invalid JSON: trailing comma before ']' (JSON allows none)");
            goto fail;
        }
        sj_node_t *v = sj_value(p, depth + 1);
        if (!v) {
            free(key);
            goto fail;
        }
        v->key = key;
        v->key_off = key_off;
        sj_append(n, v);
        sj_skip_ws(p);
        if (p->pos < p->len && p->t[p->pos] == ',') {
            p->pos++;
            continue;
        }
        if (p->pos < p->len && p->t[p->pos] == close) {
            p->pos++;
            return n;
        }
        sj_unexpected(p, is_obj ? "',' or '}' after an object member"
                                : "',' or ']' after an array element");
        goto fail;
    }
fail:
    space__json_free(n);
    return NULL;
}

static sj_node_t *sj_value(struct sj_parser *p, int depth)
{
    sj_skip_ws(p);
    if (p->pos >= p->len) {
        sj_unexpected(p, "a value");
        return NULL;
    }
    char c = p->t[p->pos];
    size_t off = p->pos;
    sj_node_t *n = NULL;
    switch (c) {
    case '{':
        return sj_container(p, depth, 1);
    case '[':
        return sj_container(p, depth, 0);
    case '"':
        if (!(n = sj_new(p, SJ_STRING, off))) return NULL;
        if (sj_string(p, &n->str) != 0) goto fail;
        return n;
    case 't':
    case 'f':
    case 'n': {
        const char *word = c == 't' ? "true" : c == 'f' ? "false" : "null";
        if (sj_literal(p, word) != 0) break;
        return sj_new(p, c == 't' ? SJ_TRUE : c == 'f' ? SJ_FALSE : SJ_NULL, off);
    }
    default:
        if (c == '-' || is_digit(c)) {
            if (!(n = sj_new(p, SJ_NUMBER, off))) return NULL;
            if (sj_number(p, n) != 0) goto fail;
            return n;
        }
    }
    if (c == '\'')
        sj_fail(p, off, SPACE_EINVAL, "invalid JSON: strings need double quotes, not single");
    else
        sj_unexpected(p, "a value");
    return NULL;
fail:
    space__json_free(n);
    return NULL;
}

int space__json_parse(const char *text, size_t len, sj_node_t **out, size_t *err_off, char *msg,
                      size_t msglen)
{
    struct sj_parser p = {.t = text, .len = len, .msg = msg, .msglen = msglen};
    /* A UTF-8 byte order mark is harmless; some editors write one. */
    if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0) p.pos = 3;
    sj_node_t *root = sj_value(&p, 0);
    if (root) {
        sj_skip_ws(&p);
        if (p.pos < p.len) {
            char b[32];
            sj_fail(&p, p.pos, SPACE_EINVAL,
                    "invalid JSON: %s after the end of the top-level value", sj_what(&p, p.pos, b));
            space__json_free(root);
            root = NULL;
        }
    }
    if (!root) {
        *err_off = p.err_off;
        return p.rc ? p.rc : SPACE_EINVAL;
    }
    *out = root;
    return SPACE_OK;
}

void space__json_free(sj_node_t *n)
{
    while (n) {
        sj_node_t *next = n->next;
        space__json_free(n->child);
        free(n->key);
        free(n->str);
        free(n->raw);
        free(n);
        n = next;
    }
}

sj_node_t *space__json_get(const sj_node_t *obj, const char *key)
{
    if (!obj || obj->type != SJ_OBJECT) return NULL;
    for (sj_node_t *m = obj->child; m; m = m->next)
        if (strcmp(m->key, key) == 0) return m;
    return NULL;
}

sj_node_t *space__json_at(const sj_node_t *arr, size_t i)
{
    if (!arr || (arr->type != SJ_ARRAY && arr->type != SJ_OBJECT)) return NULL;
    sj_node_t *m = arr->child;
    while (m && i--)
        m = m->next;
    return m;
}

cJSON *space__json_to_cjson(const sj_node_t *n)
{
    cJSON *c = NULL;
    switch (n->type) {
    case SJ_NULL:
        return cJSON_CreateNull();
    case SJ_FALSE:
        return cJSON_CreateFalse();
    case SJ_TRUE:
        return cJSON_CreateTrue();
    case SJ_NUMBER:
        return cJSON_CreateNumber(n->num);
    case SJ_STRING:
        return cJSON_CreateString(n->str);
    case SJ_ARRAY:
    case SJ_OBJECT:
        c = n->type == SJ_ARRAY ? cJSON_CreateArray() : cJSON_CreateObject();
        if (!c) return NULL;
        for (const sj_node_t *m = n->child; m; m = m->next) {
            cJSON *v = space__json_to_cjson(m);
            if (!v) {
                cJSON_Delete(c);
                return NULL;
            }
            if (n->type == SJ_ARRAY)
                cJSON_AddItemToArray(c, v);
            else
                cJSON_AddItemToObject(c, m->key, v);
        }
        return c;
    }
    return NULL;
}

void space__json_pos(const char *text, size_t len, size_t off, int *line, int *col)
{
    int l = 1, c = 1;
    size_t i = 0;
    if (off > len) off = len;
    if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0) i = 3; /* editors hide the BOM */
    for (; i < off; i++) {
        unsigned char b = (unsigned char)text[i];
        if (b == '\n') {
            l++;
            c = 1;
        } else if ((b & 0xc0) != 0x80) {
            c++; /* UTF-8 continuation bytes do not start a new character */
        }
    }
    *line = l;
    *col = c;
}
