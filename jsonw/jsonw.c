/* jsonw.c: JSON string escaping for tune's hand-built JSON (jsonw.h). One loop,
 * jsonw_quote_cb, hands out runs of plain bytes and whole escapes; the buffer and file forms
 * are sinks for it. Not for: numbers or structure, which each writer lays out itself. */
#include "jsonw/jsonw.h"

#include <string.h>

/* The escape of byte c (into esc[8]), or NULL when c stands as it is. */
static const char *escape(unsigned char c, unsigned flags, char *esc)
{
    switch (c) {
    case '"':
        return "\\\"";
    case '\\':
        return "\\\\";
    case '\b':
        return "\\b";
    case '\f':
        return "\\f";
    case '\n':
        return "\\n";
    case '\r':
        return "\\r";
    case '\t':
        return "\\t";
    default:
        break;
    }
    if (c < 0x20 || ((flags & JSONW_HTML) && (c == '<' || c == '>' || c == '&' || c == 0x7f))) {
        static const char hex[] = "0123456789abcdef";
        memcpy(esc, "\\u00", 4);
        esc[4] = hex[c >> 4];
        esc[5] = hex[c & 15];
        esc[6] = 0;
        return esc;
    }
    return NULL;
}

int jsonw_quote_cb(const char *s, unsigned flags, jsonw_put_cb put, void *ud)
{
    char esc[8];
    int rc;
    if (!s) return put(ud, "null", 4);
    if ((rc = put(ud, "\"", 1))) return rc;
    const char *run = s;
    for (const char *p = s; *p; p++) {
        const char *e = escape((unsigned char)*p, flags, esc);
        if (!e) continue;
        if (p > run && (rc = put(ud, run, (size_t)(p - run)))) return rc;
        if ((rc = put(ud, e, strlen(e)))) return rc;
        run = p + 1;
    }
    if (*run && (rc = put(ud, run, strlen(run)))) return rc;
    return put(ud, "\"", 1);
}

/* The buffer sink: copies a piece while it fits whole with room for the NUL, and counts
 * every byte asked for; once a piece does not fit, nothing more is copied. */
struct bufsink {
    char *out;
    size_t n, o, need;
    int cut;
};

static int put_buf(void *ud, const char *p, size_t k)
{
    struct bufsink *b = ud;
    if (!b->cut && b->o + k < b->n) {
        memcpy(b->out + b->o, p, k);
        b->o += k;
    } else {
        b->cut = 1;
    }
    b->need += k;
    return 0;
}

size_t jsonw_quote(char *out, size_t n, const char *s, unsigned flags)
{
    struct bufsink b = {out, n, 0, 0, 0};
    jsonw_quote_cb(s, flags, put_buf, &b);
    if (n > 0) out[b.o] = 0;
    return b.need;
}

static int put_file(void *ud, const char *p, size_t k)
{
    return fwrite(p, 1, k, ud) == k ? 0 : -1;
}

int jsonw_fquote(FILE *f, const char *s, unsigned flags)
{
    return jsonw_quote_cb(s, flags, put_file, f);
}
