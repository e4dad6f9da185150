/* cli: a small terminal canvas for charts. Braille cells (2x4 dots each, as drawille and
 * plotext draw), lines, marker characters, axes (linear or log) with their tick labels,
 * and a legend that wraps to the width. Shared by `tune plot` and `tune show` (show.c).
 * Not for: knowing what a trial or a metric is (show.c decides what to draw and how). */
#ifndef TUNE_CLI_CANVAS_H
#define TUNE_CLI_CANVAS_H

#include <stddef.h>
#include <stdio.h>

/* w x h character cells, 2w x 4h dots; (0, 0) is the top left dot. Each cell keeps the
 * highest class that drew in it (classes are the caller's: 0 is none, larger wins), which
 * picks the cell's colour. */
typedef struct cli_canvas {
    int w, h;
    unsigned char *bits, *cls;
    unsigned *mark; /* a character replacing the cell's dots, 0 if none */
    unsigned char *mark_cls;
} cli_canvas_t;

/* A new blank canvas, NULL when out of memory; freed with cli_canvas_free (NULL-safe). */
cli_canvas_t *cli_canvas_new(int w, int h);
void cli_canvas_free(cli_canvas_t *c);
/* Dots outside the canvas are ignored. */
void cli_canvas_dot(cli_canvas_t *c, int px, int py, int cls);
/* Bresenham's line; `dotted` leaves every other dot out, *phase carrying the dotting across
 * the segments of one curve. */
void cli_canvas_line(cli_canvas_t *c, int x0, int y0, int x1, int y1, int cls, int dotted,
                     unsigned *phase);
/* A character (a code point: × or ●) in the dot's cell, unless a higher class marked it. */
void cli_canvas_mark(cli_canvas_t *c, int px, int py, unsigned ch, int cls);

/* One axis: its range in axis space (log10 of the values when log). */
typedef struct cli_axis {
    int log;
    double lo, hi;
} cli_axis_t;

/* Fits an axis to [mn, mx] (mnpos: the smallest positive value). want: 1 log (when there
 * is a positive value), 0 linear, -1 log when all values are positive and span at least
 * `ratio`. An empty range is widened so that it can be drawn. */
void cli_axis_fit(cli_axis_t *a, double mn, double mx, double mnpos, int want, double ratio);
/* The dot (0..npix-1; counted from the far end when flip) of value v; -1 when v has no
 * place on the axis (not finite, or not positive on a log axis). */
int cli_axis_map(const cli_axis_t *a, double v, int npix, int flip, int *out);
/* The value at fraction t (0..1) of the axis. */
double cli_axis_value(const cli_axis_t *a, double t);

/* The y axis's labels: nt rows (at most 5) spread over `rows`, each labelled with the value
 * at the middle of its dots in as few digits as keep the labels apart. */
typedef struct cli_ylabels {
    int n, width; /* width: of the widest label */
    int row[5];
    char text[5][32];
} cli_ylabels_t;
void cli_ylabels_make(cli_ylabels_t *l, const cli_axis_t *ay, int rows);

/* Prints the canvas with the y labels and axis on the left ("0.5 ┤⠒⠒ ..."), colouring each
 * cell by colors[class] when colors is not NULL. */
void cli_canvas_print(FILE *f, const cli_canvas_t *c, const cli_ylabels_t *l,
                      const char *const *colors);
/* Prints the x axis below a canvas printed with labels l: ┬ at each tick value (ticks
 * within [lo, hi]), labels for the ticks first and then the ends where they fit. */
void cli_canvas_xaxis(FILE *f, const cli_canvas_t *c, const cli_ylabels_t *l, const cli_axis_t *ax,
                      const double *ticks, size_t nticks, double lo, double hi);

/* A legend of items that wraps so that no line is wider than `cols`. */
typedef struct cli_legend {
    FILE *f;
    int cols;
    const char *const *colors; /* by class, NULL for no colour */
    int used;
} cli_legend_t;
/* Adds "glyph text" (glyph in class cls's colour); text too wide for a line is cut. */
void cli_legend_item(cli_legend_t *L, int cls, const char *glyph, const char *text);
/* Ends the legend's last line. */
void cli_legend_end(cli_legend_t *L);

/* Display width of UTF-8 text: one column per code point (braille and box drawing are
 * one column wide in every terminal we know of). */
int cli_text_width(const char *s);
/* Prints a line cut to `cols` columns on a character boundary. */
void cli_print_cut(FILE *f, const char *s, int cols);

#endif
