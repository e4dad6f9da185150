/* search/space.c: the space_t that space.h promises: parsing from memory or a file (the
 * file's reading here, its contents in parse.c), freeing, renaming and growing, and the
 * accessors. Not for: what any key of space.json means (parse.c, settings.c,
 * placeholders.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "search/parse_int.h"

/* ---- public ---------------------------------------------------------------------------- */
int space_parse(const char *text, size_t len, const char *filename, space_t **out, char *err,
                size_t errlen)
{
    if (!filename) filename = "space.json";
    struct space__parse_ctx c = {
        .file = filename, .text = text, .len = len, .err = err, .errlen = errlen};
    if (err && errlen) err[0] = '\0';
    space_t *sp = calloc(1, sizeof *sp);
    if (!sp) return space__parse_nomem(err, errlen);
    sp->text = malloc(len + 1);
    if (!sp->text) {
        free(sp);
        return space__parse_nomem(err, errlen);
    }
    memcpy(sp->text, text, len);
    sp->text[len] = '\0';
    sp->text_len = len;
    sj_node_t *root = NULL;
    size_t off = 0;
    char msg[256];
    int rc = space__json_parse(text, len, &root, &off, msg, sizeof msg);
    if (rc == SPACE_ENOMEM) {
        space__parse_nomem(err, errlen);
    } else if (rc != 0) {
        space__parse_at(&c, off, "%s", msg);
    } else {
        rc = space__parse_root(&c, sp, root);
    }
    space__json_free(root);
    if (rc != 0) {
        space_free(sp);
        return rc;
    }
    *out = sp;
    return SPACE_OK;
}

int space_load(const char *path, space_t **out, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
        int e = fd < 0 ? errno : S_ISDIR(st.st_mode) ? EISDIR : errno;
        if (fd >= 0) close(fd);
        if (err && errlen) snprintf(err, errlen, "cannot read %s: %s", path, strerror(e));
        return SPACE_EIO;
    }
    size_t cap = S_ISREG(st.st_mode) && st.st_size > 0 ? (size_t)st.st_size + 1 : 4096, n = 0;
    char *buf = malloc(cap);
    if (!buf) {
        close(fd);
        return space__parse_nomem(err, errlen);
    }
    for (;;) {
        if (n == cap) {
            if (cap >= SPACE_MAX_FILE) {
                free(buf);
                close(fd);
                if (err && errlen)
                    snprintf(err, errlen, "cannot read %s: larger than %u MiB", path,
                             SPACE_MAX_FILE >> 20);
                return SPACE_EIO;
            }
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                close(fd);
                return space__parse_nomem(err, errlen);
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            int e = errno;
            free(buf);
            close(fd);
            if (err && errlen) snprintf(err, errlen, "cannot read %s: %s", path, strerror(e));
            return SPACE_EIO;
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    close(fd);
    int rc = space_parse(buf, n, path, out, err, errlen);
    free(buf);
    return rc;
}

static void free_strv(char **v)
{
    for (char **p = v; p && *p; p++)
        free(*p);
    free(v);
}

/* Frees what a node owns (not the node itself), its sub-spaces too. */
static void free_node(space_param_t *P)
{
    free(P->name);
    cJSON_Delete(P->values);
    free(P->gpath);
    for (size_t i = 0; P->alts && i < P->nvalues; i++)
        free_node(&P->alts[i]);
    free(P->alts);
    for (size_t m = 0; m < P->nmembers; m++)
        free_node(&P->members[m]);
    free(P->members);
}

void space_free(space_t *s)
{
    if (!s) return;
    free(s->set.name);
    /* metric is metrics[0], freed with the list */
    for (size_t i = 0; i < s->set.nobjectives; i++)
        free(s->set.metrics[i]);
    free(s->set.metrics);
    free(s->set.modes);
    for (size_t i = 0; i < s->set.nconstraints; i++)
        free(s->set.constraints[i].key);
    free(s->set.constraints);
    free_strv(s->set.command);
    free_strv(s->set.exec.srun_args);
    free(s->set.exec.allocation);
    for (size_t i = 0; i < s->set.nstop; i++)
        free(s->set.stop[i].key);
    free(s->set.stop);
    free_strv(s->set.metric_columns);
    free_strv(s->set.parameter_columns);
    cJSON_Delete(s->set.points_to_evaluate);
    for (size_t i = 0; i < s->nparams; i++) {
        free_node(&s->params[i]);
    }
    free(s->params);
    for (size_t i = 0; i < s->nmuts; i++)
        free_node(&s->muts[i]);
    free(s->muts);
    free(s->mut_pos);
    free_strv(s->notes);
    free(s->text);
    free(s);
}

int space_rename(space_t *s, const char *name, char *err, size_t errlen)
{
    int rc = space_check_name(name, err, errlen);
    if (rc) return rc;
    char *n = strdup(name);
    if (!n) return space__parse_nomem(err, errlen);
    free(s->set.name);
    s->set.name = n;
    return SPACE_OK;
}

int space_set_num_trials(space_t *s, size_t n, char *err, size_t errlen)
{
    if (n < s->num_trials || n > SPACE_MAX_TRIALS) {
        if (err && errlen)
            snprintf(err, errlen, "cannot grow %s from %zu to %zu trials (at most %u)", s->set.name,
                     s->num_trials, n, SPACE_MAX_TRIALS);
        return SPACE_EINVAL;
    }
    s->num_trials = n;
    return SPACE_OK;
}

const char *space_suggest(const char *word, const char *const *candidates, size_t n)
{
    return space__suggest(word, candidates, n);
}

const space_settings_t *space_settings(const space_t *s)
{
    return &s->set;
}

const char *space_note(const space_t *s, size_t i)
{
    return i < s->nnotes ? s->notes[i] : NULL;
}

const char *space_text(const space_t *s)
{
    return s->text;
}

size_t space_num_trials(const space_t *s)
{
    return s->num_trials;
}

size_t space_num_params(const space_t *s)
{
    return s->nparams;
}

const char *space_param_name(const space_t *s, size_t i)
{
    return i < s->nparams ? s->params[i].name : NULL;
}

const char *space_param_kind(const space_t *s, size_t i)
{
    return i < s->nparams ? space__parse_kind_name(s->params[i].kind) : NULL;
}
