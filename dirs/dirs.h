/* dirs: every deletion, link and copy tune makes on behalf of a trial or an experiment,
 * resolved beneath a directory tune made and holds open, never by a path's text. A name a
 * trial or a database hands tune ("checkpoint": "../x", an experiment called "a/../..", a
 * symlink a trial planted) can name anything; here each component is opened in turn with
 * O_NOFOLLOW from the folder below it, "." and ".." are refused, and nothing is followed
 * out of the folder (container runtimes resolve a container's paths the same way: runc's
 * openat2(RESOLVE_BENEATH)). Not for: choosing what to delete (the callers' rules). */
#ifndef TUNE_DIRS_H
#define TUNE_DIRS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#define DIRS_OK 0
#define DIRS_ERR (-1)      /* a system call failed; the message says which */
#define DIRS_EOUTSIDE (-2) /* the path would leave the folder: "..", ".", absolute, a symlink */
#define DIRS_ENOENT (-3)   /* nothing there (removing it is then done) */
#define DIRS_EBYTES (-4)   /* dirs_copy with DIRS_LINK_ONLY: a file would need its bytes copied */

/* dirs_copy's flags */
#define DIRS_LINK_ONLY 1 /* link, or stop with DIRS_EBYTES where only a byte copy would do */
#define DIRS_BYTES 2     /* copy every file's bytes, never link */

/* Whether rel is a path tune may resolve beneath a folder: relative, not empty, no "." or
 * ".." component (empty components, as in "a//b" or "a/", are skipped). DIRS_OK or
 * DIRS_EOUTSIDE with the reason in err. */
int dirs_check(const char *rel, char *err, size_t errlen);

/* path's part beneath folder `base` (both as text: base absolute, without a trailing
 * '/'): path itself when relative, the rest after "base/" when absolute and under base,
 * NULL when absolute and elsewhere. Only text: dirs_* resolve the result safely. */
const char *dirs_beneath(const char *base, const char *path);

/* Opens the directory at path (tune's own: the results folder) with O_NOFOLLOW on its
 * last component. An fd (the caller closes it) or -1 with errno. */
int dirs_open(const char *path);

/* Opens directory rel beneath dirfd, following no symlink in any component. An fd (the
 * caller closes it) or -1 with errno: ELOOP or ENOTDIR where a component is a symlink or
 * not a folder, EXDEV where rel fails dirs_check. */
int dirs_openat(int dirfd, const char *rel);

/* mkdir -p of rel beneath dirfd, no symlink followed. DIRS_OK, DIRS_EOUTSIDE or DIRS_ERR. */
int dirs_mkdirs(int dirfd, const char *rel, char *err, size_t errlen);

/* rm -rf of rel beneath dirfd: a file, a symlink (itself, never what it points to) or a
 * whole tree, never crossing a symlink or a mount point. DIRS_OK (also when nothing was
 * there), DIRS_EOUTSIDE (refused, nothing deleted) or DIRS_ERR (partly deleted). */
int dirs_remove(int dirfd, const char *rel, char *err, size_t errlen);

/* dirs_remove of rel only if it is still the file with this device and inode: the name is
 * moved aside first (within its folder, atomically), the file moved is the one checked,
 * and another one is put back (unless the name was taken again meanwhile, which supersedes
 * it). A trial saving a new file under the same name at any moment never loses it, as a
 * look and then an unlink of the name would make it. DIRS_OK (also when nothing matching
 * was there), DIRS_EOUTSIDE or DIRS_ERR. */
int dirs_remove_if(int dirfd, const char *rel, uint64_t dev, uint64_t ino, char *err,
                   size_t errlen);

/* What dirs_copy did. */
typedef struct dirs_copied {
    uint64_t linked, copied; /* files hard-linked, files copied byte for byte */
    uint64_t bytes;          /* bytes copied */
    uint64_t skipped;        /* symlinks and special files left out, never followed */
} dirs_copied_t;

/* Copies src_rel beneath srcfd (a file or a tree) to dst_rel beneath dstfd, whose parent
 * folders are made: each regular file hard-linked where the file system allows it (a
 * checkpoint of gigabytes costs nothing), else copied (flags: DIRS_LINK_ONLY, DIRS_BYTES,
 * or 0); symlinks, devices and the like are left out, never followed; a file already at
 * the destination is kept (a resume making the copy again). `what` (may be NULL) counts
 * what was done. DIRS_OK, DIRS_EOUTSIDE, DIRS_ENOENT (no source), DIRS_EBYTES or DIRS_ERR. */
int dirs_copy(int srcfd, const char *src_rel, int dstfd, const char *dst_rel, int flags,
              dirs_copied_t *what, char *err, size_t errlen);

/* Whether rel beneath dirfd exists (not followed if a symlink): 1, 0, or 0 when rel fails
 * dirs_check. */
int dirs_exists(int dirfd, const char *rel);

/* lstat of rel beneath dirfd (a symlink is described, not followed). DIRS_OK,
 * DIRS_EOUTSIDE, DIRS_ENOENT or DIRS_ERR; *st untouched on error. */
int dirs_stat(int dirfd, const char *rel, struct stat *st);

#endif
