/* cli: the braille canvas, axes and legend behind `tune plot` and `tune show` (canvas.h).
 * Each character cell holds 2x4 dots (Unicode U+2800..U+28FF), as in drawille and plotext.
 * Not for: choosing what to draw (show.c). */
#include "cli/canvas.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int cli_text_width(const char *s)
{
    int w = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80) w++;
    return w;
}

static void put_utf8(FILE *f, unsigned cp)
{
    if (cp < 0x80) {
        fputc((int)cp, f);
    } else if (cp < 0x800) {
        fputc((int)(0xC0 | (cp >> 6)), f);
        fputc((int)(0x80 | (cp & 0x3F)), f);
    } else {
        fputc((int)(0xE0 | (cp >> 12)), f);
        fputc((int)(0x80 | ((cp >> 6) & 0x3F)), f);
        fputc((int)(0x80 | (cp & 0x3F)), f);
    }
}

void cli_print_cut(FILE *f, const char *s, int cols)
{
    int w = 0;
    size_t i = 0;
    for (; s[i]; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80 && ++w > cols) break;
    fprintf(f, "%.*s\n", (int)i, s);
}

/* ---- the canvas ----------------------------------------------------------------- */
cli_canvas_t *cli_canvas_new(int w, int h)
{
    cli_canvas_t *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    size_t n = (size_t)w * (size_t)h;
    c->w = w, c->h = h;
    c->bits = calloc(n + 1, 1);
    c->cls = calloc(n + 1, 1);
    c->mark = calloc(n + 1, sizeof *c->mark);
    c->mark_cls = calloc(n + 1, 1);
    if (!c->bits || !c->cls || !c->mark || !c->mark_cls) {
        cli_canvas_free(c);
        return NULL;
    }
    return c;
}

void cli_canvas_free(cli_canvas_t *c)
{
    if (!c) return;
    free(c->bits);
    free(c->cls);
    free(c->mark);
    free(c->mark_cls);
    free(c);
}

/* Braille dot numbering: bit of the dot at (column, row) of a 2x4 cell. */
static const unsigned char dot_bit[4][2] = {{0x01, 0x08}, {0x02, 0x10}, {0x04, 0x20}, {0x40, 0x80}};

void cli_canvas_dot(cli_canvas_t *c, int px, int py, int cls)
{
    if (px < 0 || py < 0 || px >= 2 * c->w || py >= 4 * c->h) return;
    size_t k = (size_t)(py / 4) * (size_t)c->w + (size_t)(px / 2);
    c->bits[k] |= dot_bit[py % 4][px % 2];
    if (c->cls[k] < cls) c->cls[k] = (unsigned char)cls;
}

void cli_canvas_mark(cli_canvas_t *c, int px, int py, unsigned ch, int cls)
{
    if (px < 0 || py < 0 || px >= 2 * c->w || py >= 4 * c->h) return;
    size_t k = (size_t)(py / 4) * (size_t)c->w + (size_t)(px / 2);
    if (c->mark[k] && c->mark_cls[k] > cls) return;
    c->mark[k] = ch;
    c->mark_cls[k] = (unsigned char)cls;
}

void cli_canvas_line(cli_canvas_t *c, int x0, int y0, int x1, int y1, int cls, int dotted,
                     unsigned *phase)
{
    int dx = abs(x1 - x0), sx = x0 < x1 ? 1 : -1;
    int dy = -abs(y1 - y0), sy = y0 < y1 ? 1 : -1;
    int e = dx + dy;
    for (;;) {
        if (!dotted || ((*phase)++ & 1) == 0) cli_canvas_dot(c, x0, y0, cls);
        if (x0 == x1 && y0 == y1) break;
        int e2 = 2 * e;
        if (e2 >= dy) {
            e += dy;
            x0 += sx;
        }
        if (e2 <= dx) {
            e += dx;
            y0 += sy;
        }
    }
}

/* ---- axes ----------------------------------------------------------------------- */
int cli_axis_map(const cli_axis_t *a, double v, int npix, int flip, int *out)
{
    if (!isfinite(v) || (a->log && v <= 0)) return -1;
    double f = a->log ? log10(v) : v;
    double t = (f - a->lo) / (a->hi - a->lo);
    int p = (int)lround(t * (npix - 1));
    *out = flip ? npix - 1 - p : p;
    return 0;
}

double cli_axis_value(const cli_axis_t *a, double t)
{
    double f = a->lo + t * (a->hi - a->lo);
    return a->log ? pow(10, f) : f;
}

void cli_axis_fit(cli_axis_t *a, double mn, double mx, double mnpos, int want, double ratio)
{
    a->log = want == 1 ? mnpos > 0 && isfinite(mnpos) : want == 0 ? 0 : mn > 0 && mx / mn >= ratio;
    if (a->log) {
        a->lo = log10(mn > 0 ? mn : mnpos);
        a->hi = log10(mx);
    } else {
        a->lo = mn;
        a->hi = mx;
    }
    if (!(a->hi > a->lo)) {
        double d = a->log ? 0.3 : (fabs(a->lo) > 0 ? fabs(a->lo) * 0.1 : 0.5);
        a->lo -= d;
        a->hi += d;
    }
}

void cli_ylabels_make(cli_ylabels_t *l, const cli_axis_t *ay, int rows)
{
    double val[5];
    l->n = rows >= 10 ? 5 : rows >= 5 ? 3 : 2;
    l->width = 0;
    for (int k = 0; k < l->n; k++) {
        l->row[k] = (int)lround((double)k * (rows - 1) / (l->n - 1));
        /* The value at the middle of the row's dots. */
        val[k] = cli_axis_value(ay, 1.0 - (l->row[k] * 4 + 1.5) / (4.0 * rows - 1));
    }
    /* As few digits as keep the labels apart: "1.06" reads better than "1.0608". */
    for (int prec = 2; prec <= 6; prec++) {
        int distinct = 1;
        for (int k = 0; k < l->n; k++) {
            snprintf(l->text[k], sizeof l->text[k], "%.*g", prec, val[k]);
            for (int j = 0; j < k; j++)
                if (strcmp(l->text[j], l->text[k]) == 0) distinct = 0;
        }
        if (distinct) break;
    }
    for (int k = 0; k < l->n; k++) {
        int w = cli_text_width(l->text[k]);
        if (w > l->width) l->width = w;
    }
}

void cli_canvas_print(FILE *f, const cli_canvas_t *c, const cli_ylabels_t *l,
                      const char *const *colors)
{
    int tick = 0, lw = l->width;
    for (int r = 0; r < c->h; r++) {
        int is_tick = tick < l->n && l->row[tick] == r;
        fprintf(f, "%*s%s ", lw - (is_tick ? cli_text_width(l->text[tick]) : 0), "",
                is_tick ? l->text[tick] : "");
        fputs(is_tick ? "┤" : "│", f);
        if (is_tick) tick++;
        int cur = 0;
        for (int x = 0; x < c->w; x++) {
            size_t k = (size_t)r * (size_t)c->w + (size_t)x;
            int cls = c->mark[k] ? c->mark_cls[k] : c->cls[k];
            if (colors && cls != cur) {
                fputs(cur ? "\x1b[0m" : "", f);
                if (cls) fputs(colors[cls], f);
                cur = cls;
            }
            if (c->mark[k])
                put_utf8(f, c->mark[k]);
            else if (c->bits[k])
                put_utf8(f, 0x2800u + c->bits[k]);
            else
                fputc(' ', f);
        }
        if (colors && cur) fputs("\x1b[0m", f);
        fputc('\n', f);
    }
}

void cli_canvas_xaxis(FILE *f, const cli_canvas_t *c, const cli_ylabels_t *l, const cli_axis_t *ax,
                      const double *ticks, size_t nticks, double lo, double hi)
{
    int W = c->w, lw = l->width;
    char *occ = calloc((size_t)W + 1, 1);
    char *lab = malloc((size_t)W + 1);
    int *tickcol = calloc((size_t)W + 1, sizeof *tickcol);
    if (!occ || !lab || !tickcol) {
        free(occ), free(lab), free(tickcol);
        return;
    }
    memset(lab, ' ', (size_t)W);
    lab[W] = 0;
    for (size_t m = 0; m < nticks; m++) {
        int px;
        if (ticks[m] < lo || ticks[m] > hi || cli_axis_map(ax, ticks[m], 2 * W, 0, &px) || px < 0 ||
            px >= 2 * W)
            continue;
        tickcol[px / 2] = 1;
    }
    for (int pass = 0; pass < 2; pass++) {
        size_t n = pass == 0 ? nticks : 2;
        for (size_t m = 0; m < n; m++) {
            double v = pass == 0 ? ticks[m] : (m == 0 ? lo : hi);
            int px;
            if (v < lo || v > hi || cli_axis_map(ax, v, 2 * W, 0, &px)) continue;
            char s[32];
            snprintf(s, sizeof s, "%g", v);
            int len = (int)strlen(s), col = px / 2;
            int at = col - len / 2;
            if (at < 0) at = 0;
            if (at + len > W) at = W - len;
            if (at < 0) continue;
            int ok = 1;
            for (int i = at - 1; i <= at + len && ok; i++)
                if (i >= 0 && i < W && occ[i]) ok = 0;
            if (!ok) continue;
            memcpy(lab + at, s, (size_t)len);
            memset(occ + at, 1, (size_t)len);
        }
    }
    fprintf(f, "%*s └", lw, "");
    for (int x = 0; x < W; x++)
        fputs(tickcol[x] ? "┬" : "─", f);
    fputc('\n', f);
    fprintf(f, "%*s  %s\n", lw, "", lab);
    free(occ), free(lab), free(tickcol);
}

/* ---- the legend ----------------------------------------------------------------- */
void cli_legend_item(cli_legend_t *L, int cls, const char *glyph, const char *text)
{
    /* An item wider than a line on its own is cut (on a character boundary). */
    char cut[256];
    snprintf(cut, sizeof cut, "%s", text);
    int room = L->cols - 2 - cli_text_width(glyph) - 1;
    for (size_t i = 0, n = 0; cut[i]; i++)
        if (((unsigned char)cut[i] & 0xC0) != 0x80 && (int)++n > (room > 1 ? room : 1)) {
            cut[i] = 0;
            break;
        }
    text = cut;
    int w = cli_text_width(glyph) + 1 + cli_text_width(text);
    if (L->used && L->used + 3 + w > L->cols) {
        fputc('\n', L->f);
        L->used = 0;
    }
    if (L->used) {
        fputs("   ", L->f);
        L->used += 3;
    } else {
        fputs("  ", L->f);
        L->used = 2;
    }
    if (L->colors && cls) fputs(L->colors[cls], L->f);
    fputs(glyph, L->f);
    if (L->colors && cls) fputs("\x1b[0m", L->f);
    fprintf(L->f, " %s", text);
    L->used += w;
}

void cli_legend_end(cli_legend_t *L)
{
    fputc('\n', L->f);
    L->used = 0;
}
