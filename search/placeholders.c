/* search/placeholders.c: the "command" template of space.json: its {placeholders} checked
 * against the parameters (a name, a nested path, trial_id, trial_dir, max_t) with a
 * did-you-mean over every path a placeholder could name, and validate's notes about
 * parameters no placeholder uses or placeholders only some branches have. Not for:
 * rendering argv for a trial (render.c) or the parameters themselves (parse.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/parse_int.h"

/* ---- placeholders ------------------------------------------------------------------- */
/* Whether the name[0..len) path exists below node P: 0 never, 1 in some configurations (a
 * branch of a choice or grid_search), 2 always. len 0 is P itself. */
static int reach(const space_param_t *P, const char *name, size_t len);

static int reach_json(const cJSON *v, const char *name, size_t len)
{
    int head = 0;
    return len == 0 || space__lookup(v, name, len, &head) ? 2 : 0;
}

static int reach(const space_param_t *P, const char *name, size_t len)
{
    if (len == 0) return 2;
    if (P->kind == SPACE_P_CONSTANT) return reach_json(P->values, name, len);
    if (P->kind == SPACE_P_OBJECT) {
        int best = 0;
        for (size_t m = 0; m < P->nmembers; m++) {
            const char *key = P->members[m].name;
            size_t kl = strlen(key);
            if (kl == len && memcmp(key, name, len) == 0) return 2;
            if (kl < len && name[kl] == '.' && memcmp(key, name, kl) == 0) {
                int r = reach(&P->members[m], name + kl + 1, len - kl - 1);
                if (r > best) best = r;
            }
        }
        return best;
    }
    if (P->kind != SPACE_P_CHOICE && P->kind != SPACE_P_GRID) return 0;
    int all = 1, any = 0;
    for (size_t i = 0; i < P->nvalues; i++) {
        int r = P->alts ? reach(&P->alts[i], name, len)
                        : reach_json(cJSON_GetArrayItem(P->values, (int)i), name, len);
        all &= r == 2;
        any |= r > 0;
    }
    return all ? 2 : any;
}

/* Candidate names for a did-you-mean: every dotted path a placeholder could name. */
struct names {
    const char **v;
    char **own; /* the dotted ones, freed after */
    size_t n, cap, nown;
};

static void names_add(struct names *nm, const char *s, int owned)
{
    if (nm->n == nm->cap) {
        if (owned) free((char *)s);
        return;
    }
    nm->v[nm->n++] = s;
    if (owned) nm->own[nm->nown++] = (char *)s;
}

static void names_json(struct names *nm, const char *prefix, const cJSON *v, int depth);

static void names_under(struct names *nm, const char *prefix, const char *key, int depth,
                        const space_param_t *P, const cJSON *v)
{
    if (nm->n == nm->cap || depth > 8) return;
    size_t n = strlen(prefix) + strlen(key) + 2;
    char *path = malloc(n);
    if (!path) return;
    snprintf(path, n, "%s.%s", prefix, key);
    names_add(nm, path, 1); /* there is room: checked above */
    if (v) {
        names_json(nm, path, v, depth + 1);
        return;
    }
    for (size_t m = 0; m < P->nmembers; m++)
        names_under(nm, path, P->members[m].name, depth + 1, &P->members[m], NULL);
    for (size_t i = 0; P->alts && i < P->nvalues; i++)
        for (size_t m = 0; m < P->alts[i].nmembers; m++)
            names_under(nm, path, P->alts[i].members[m].name, depth + 1, &P->alts[i].members[m],
                        NULL);
    if (P->kind == SPACE_P_CONSTANT) names_json(nm, path, P->values, depth + 1);
    if ((P->kind == SPACE_P_CHOICE || P->kind == SPACE_P_GRID) && !P->alts)
        for (const cJSON *e = P->values->child; e; e = e->next)
            names_json(nm, path, e, depth + 1);
}

static void names_json(struct names *nm, const char *prefix, const cJSON *v, int depth)
{
    if (!cJSON_IsObject(v)) return;
    for (const cJSON *m = v->child; m; m = m->next)
        if (m->string) names_under(nm, prefix, m->string, depth, NULL, m);
}

/* Whether a placeholder can have a value: 2 always (a parameter, trial_id, trial_dir, or a
 * nested value every configuration has), 1 in some configurations, 0 never. Marks the
 * top-level parameter it reaches into in used[]. */
static int placeholder_reach(const space_t *sp, const char *name, size_t len, char *used)
{
    if ((len == 8 && memcmp(name, "trial_id", 8) == 0) ||
        (len == 9 && memcmp(name, "trial_dir", 9) == 0))
        return 2;
    int best = 0;
    for (size_t j = 0; j < sp->nparams; j++) {
        const char *pn = sp->params[j].name;
        size_t kl = strlen(pn);
        if (kl == len && memcmp(pn, name, len) == 0) {
            used[j] = 1;
            best = 2;
        } else if (kl < len && name[kl] == '.' && memcmp(pn, name, kl) == 0) {
            used[j] = 1;
            int r = reach(&sp->params[j], name + kl + 1, len - kl - 1);
            if (r > best) best = r;
        }
    }
    /* {max_t}: the scheduler's max_t (a parameter of that name comes first) */
    if (best == 0 && space__is_max_t(name, len) && space__has_max_t(&sp->set)) best = 2;
    return best;
}

/* Every {placeholder} in the command must name a parameter, a nested value (a.b), or
 * trial_id / trial_dir. Notes what validate should mention: parameters no placeholder
 * uses, and placeholders only some branches have. */
static int check_command(struct space__parse_ctx *c, space_t *sp, const sj_node_t *cmd)
{
    char *used = calloc(sp->nparams + 1, 1);
    if (!used) return space__parse_nomem(c->err, c->errlen);
    int rc = 0;
    size_t i = 0;
    const sj_node_t *prev = NULL;
    for (const sj_node_t *e = cmd->child; e && !rc; prev = e, e = e->next, i++) {
        const char *p = e->str, *bad = NULL;
        space_tmpl_piece_t piece;
        char msg[128];
        int r, whole = 0;
        while ((r = space__tmpl_next(&p, &piece, &bad, msg, sizeof msg)) > 0) {
            if (!piece.is_name) continue;
            char name[128];
            snprintf(name, sizeof name, "%.*s", (int)(piece.len < 100 ? piece.len : 100), piece.s);
            whole = piece.s == e->str + 1 && piece.len + 2 == strlen(e->str);
            int reach_kind = placeholder_reach(sp, piece.s, piece.len, used);
            if (reach_kind == 1 && i == 0) {
                rc =
                    space__parse_at(c, e->off,
                                    "command[0] (the program) cannot use \"{%s}\", which only some "
                                    "configurations have",
                                    name);
                break;
            }
            if (reach_kind == 1) {
                const char *opt = prev ? prev->str : NULL;
                if (whole && opt && opt[0] == '-' && !strchr(opt, '{'))
                    space__parse_note(
                        sp,
                        "command[%zu]: \"{%s}\" has a value only in some branches of a "
                        "choice or grid_search; a trial without it runs without "
                        "command[%zu], but \"%s\" before it stays: write them as one "
                        "element, \"%s={%s}\"",
                        i, name, i, opt, opt, name);
                else
                    space__parse_note(
                        sp,
                        "command[%zu]: \"{%s}\" has a value only in some branches of a "
                        "choice or grid_search; a trial without it runs without "
                        "command[%zu]",
                        i, name, i);
            }
            if (reach_kind > 0) continue;
            if (space__is_max_t(piece.s, piece.len)) {
                rc = space__parse_at(
                    c, e->off,
                    "command[%zu]: \"{max_t}\" is the scheduler's max_t, and the %s "
                    "scheduler has none: use asha or median, give pbt a \"max_t\", or "
                    "write the number",
                    i, space_sched_name(sp->set.sched.type));
                break;
            }
            /* No parameter at all: suggest the closest name, dotted paths included. */
            struct names nm = {0};
            nm.cap = 512;
            nm.v = calloc(nm.cap, sizeof *nm.v);
            nm.own = calloc(nm.cap, sizeof *nm.own);
            char dym[160] = "";
            if (nm.v && nm.own) {
                for (size_t j = 0; j < sp->nparams; j++)
                    names_add(&nm, sp->params[j].name, 0);
                names_add(&nm, "trial_id", 0);
                names_add(&nm, "trial_dir", 0);
                for (size_t j = 0; j < sp->nparams; j++) {
                    const space_param_t *P = &sp->params[j];
                    for (size_t m = 0; m < P->nmembers; m++)
                        names_under(&nm, P->name, P->members[m].name, 0, &P->members[m], NULL);
                    for (size_t a = 0; P->alts && a < P->nvalues; a++)
                        for (size_t m = 0; m < P->alts[a].nmembers; m++)
                            names_under(&nm, P->name, P->alts[a].members[m].name, 0,
                                        &P->alts[a].members[m], NULL);
                    if (P->kind == SPACE_P_CONSTANT) names_json(&nm, P->name, P->values, 0);
                    if ((P->kind == SPACE_P_CHOICE || P->kind == SPACE_P_GRID) && !P->alts)
                        for (const cJSON *v = P->values->child; v; v = v->next)
                            names_json(&nm, P->name, v, 0);
                }
                space__parse_did_you_mean(name, nm.v, nm.n, dym, sizeof dym);
            }
            for (size_t k = 0; k < nm.nown; k++)
                free(nm.own[k]);
            free(nm.own);
            free(nm.v);
            rc = space__parse_at(c, e->off, "command[%zu]: \"{%s}\" names no parameter%s", i, name,
                                 dym);
            break;
        }
        if (!rc && r < 0) rc = space__parse_at(c, e->off, "command[%zu]: %s", i, msg);
    }
    for (size_t j = 0; !rc && j < sp->nparams; j++)
        if (!used[j])
            space__parse_note(
                sp,
                "parameter \"%s\" is not used in command; the trial sees it only through "
                "TUNE_CONFIG",
                sp->params[j].name);
    free(used);
    return rc;
}

static int parse_command(struct space__parse_ctx *c, space_settings_t *s, const sj_node_t *n)
{
    if (!n)
        return space__parse_at_path(c, "command",
                                    "required key is missing (the argv of a trial, such as "
                                    "[\"python\", \"train.py\", \"--lr\", \"{lr}\"])");
    if (n->type != SJ_ARRAY)
        return space__parse_at(
            c, n->off, "\"command\" must be an array of strings (an argv; no shell runs it)");
    if (n->n == 0) return space__parse_at(c, n->off, "\"command\" must not be empty");
    int rc = space__parse_str_array(c, n, "command", &s->command, &s->command_argc);
    if (rc) return rc;
    if (!*s->command[0])
        return space__parse_at(c, n->child->off, "command[0] (the program) must not be empty");
    return 0;
}

/* "command": the argv template, then its placeholders. */
int space__parse_command(struct space__parse_ctx *c, space_t *sp, const sj_node_t *n)
{
    int rc = parse_command(c, &sp->set, n);
    return rc ? rc : check_command(c, sp, n);
}
