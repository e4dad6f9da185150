/* dirs.c: paths resolved beneath an open folder, one component at a time, with O_NOFOLLOW
 * (the contract is in dirs.h). A portable walk rather than openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS): the same guarantee on every Linux and libc this builds on. */
#include "dirs/dirs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Deeper trees than this are not walked: each level holds an fd. */
#define DIRS_MAX_DEPTH 256

static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return rc;
}

/* The next component of *p (empty ones skipped) into out; 0 at the end, -1 if too long. */
static int next_component(const char **p, char *out, size_t n)
{
    const char *s = *p;
    while (*s == '/')
        s++;
    if (!*s) return 0;
    size_t k = strcspn(s, "/");
    if (k >= n) return -1;
    memcpy(out, s, k);
    out[k] = 0;
    *p = s + k;
    return 1;
}

int dirs_check(const char *rel, char *err, size_t errlen)
{
    if (!rel || !*rel) return fail(err, errlen, DIRS_EOUTSIDE, "an empty path");
    if (rel[0] == '/')
        return fail(err, errlen, DIRS_EOUTSIDE, "\"%.200s\" is absolute, not inside the folder",
                    rel);
    const char *p = rel;
    char c[NAME_MAX + 1];
    int r, any = 0;
    while ((r = next_component(&p, c, sizeof c)) > 0) {
        if (strcmp(c, ".") == 0 || strcmp(c, "..") == 0)
            return fail(err, errlen, DIRS_EOUTSIDE,
                        "\"%.200s\" has a \"%s\" component: only plain names inside the folder",
                        rel, c);
        any = 1;
    }
    if (r < 0) return fail(err, errlen, DIRS_EOUTSIDE, "\"%.200s\" has a name too long", rel);
    if (!any) return fail(err, errlen, DIRS_EOUTSIDE, "\"%.200s\" names no file", rel);
    return DIRS_OK;
}

const char *dirs_beneath(const char *base, const char *path)
{
    if (!path) return NULL;
    if (path[0] != '/') return path;
    size_t n = base ? strlen(base) : 0;
    if (n && strncmp(path, base, n) == 0 && path[n] == '/') return path + n + 1;
    return NULL;
}

int dirs_open(const char *path)
{
    return open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

static int open_dir_at(int dirfd, const char *name)
{
    return openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* Opens every component of rel but the last beneath dirfd (made first when `make`), into
 * *parent (to close unless it is dirfd), the last into name. */
static int walk(int dirfd, const char *rel, int make, int *parent, char *name, char *err,
                size_t errlen)
{
    int rc = dirs_check(rel, err, errlen);
    if (rc) return rc;
    const char *p = rel;
    char c[NAME_MAX + 1];
    int cur = dirfd;
    if (next_component(&p, c, sizeof c) <= 0) return fail(err, errlen, DIRS_EOUTSIDE, "no name");
    for (;;) {
        char nx[NAME_MAX + 1];
        if (next_component(&p, nx, sizeof nx) <= 0) break;
        /* c is a folder on the way */
        if (make && mkdirat(cur, c, 0777) != 0 && errno != EEXIST) {
            rc = fail(err, errlen, DIRS_ERR, "cannot create %.200s in %.200s: %s", c, rel,
                      strerror(errno));
            goto out;
        }
        int fd = open_dir_at(cur, c);
        if (fd < 0) {
            int e = errno;
            rc = e == ELOOP || e == ENOTDIR
                     ? fail(err, errlen, DIRS_EOUTSIDE,
                            "\"%.200s\": %s is a symlink or not a folder: not followed", rel, c)
                 : e == ENOENT ? fail(err, errlen, DIRS_ENOENT, "%.200s: no such folder", rel)
                               : fail(err, errlen, DIRS_ERR, "cannot open %.200s of %.200s: %s", c,
                                      rel, strerror(e));
            goto out;
        }
        if (cur != dirfd) close(cur);
        cur = fd;
        memcpy(c, nx, sizeof c);
    }
    memcpy(name, c, sizeof c);
    *parent = cur;
    return DIRS_OK;
out:
    if (cur != dirfd) close(cur);
    return rc;
}

int dirs_openat(int dirfd, const char *rel)
{
    int parent;
    char name[NAME_MAX + 1];
    int rc = walk(dirfd, rel, 0, &parent, name, NULL, 0);
    if (rc) {
        errno = rc == DIRS_EOUTSIDE ? EXDEV : rc == DIRS_ENOENT ? ENOENT : errno;
        return -1;
    }
    int fd = open_dir_at(parent, name);
    int e = errno;
    if (parent != dirfd) close(parent);
    errno = e;
    return fd;
}

int dirs_mkdirs(int dirfd, const char *rel, char *err, size_t errlen)
{
    int parent;
    char name[NAME_MAX + 1];
    int rc = walk(dirfd, rel, 1, &parent, name, err, errlen);
    if (rc) return rc;
    if (mkdirat(parent, name, 0777) != 0 && errno != EEXIST)
        rc = fail(err, errlen, DIRS_ERR, "cannot create %.200s: %s", rel, strerror(errno));
    if (!rc) {
        int fd = open_dir_at(parent, name);
        if (fd < 0)
            rc = fail(err, errlen, DIRS_EOUTSIDE, "%.200s is a symlink or not a folder", rel);
        else
            close(fd);
    }
    if (parent != dirfd) close(parent);
    return rc;
}

/* rm -rf of name in folder parent (on device dev), depth levels down. */
static int remove_node(int parent, const char *name, dev_t dev, int depth, char *err, size_t errlen)
{
    struct stat st;
    if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? DIRS_OK
                               : fail(err, errlen, DIRS_ERR, "cannot look at %.200s: %s", name,
                                      strerror(errno));
    if (!S_ISDIR(st.st_mode)) {
        if (unlinkat(parent, name, 0) != 0 && errno != ENOENT)
            return fail(err, errlen, DIRS_ERR, "cannot delete %.200s: %s", name, strerror(errno));
        return DIRS_OK;
    }
    if (st.st_dev != dev)
        return fail(err, errlen, DIRS_EOUTSIDE, "%.200s is another file system: not entered", name);
    if (depth >= DIRS_MAX_DEPTH)
        return fail(err, errlen, DIRS_ERR, "%.200s: more than %d folders deep", name,
                    DIRS_MAX_DEPTH);
    int fd = open_dir_at(parent, name);
    if (fd < 0) /* replaced by a symlink since the look: not followed */
        return fail(err, errlen, DIRS_EOUTSIDE, "cannot enter %.200s: %s", name, strerror(errno));
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return fail(err, errlen, DIRS_ERR, "cannot read %.200s: %s", name, strerror(errno));
    }
    int rc = DIRS_OK;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        int r = remove_node(dirfd(d), e->d_name, dev, depth + 1, err, errlen);
        if (r && !rc) rc = r;
    }
    closedir(d);
    if (!rc && unlinkat(parent, name, AT_REMOVEDIR) != 0 && errno != ENOENT)
        rc = fail(err, errlen, DIRS_ERR, "cannot delete the folder %.200s: %s", name,
                  strerror(errno));
    return rc;
}

int dirs_remove(int dirfd, const char *rel, char *err, size_t errlen)
{
    int parent;
    char name[NAME_MAX + 1];
    int rc = walk(dirfd, rel, 0, &parent, name, err, errlen);
    if (rc == DIRS_ENOENT) return DIRS_OK; /* its folder is gone: so is it */
    if (rc) return rc;
    struct stat pst;
    if (fstat(parent, &pst) != 0)
        rc = fail(err, errlen, DIRS_ERR, "cannot look at %.200s: %s", rel, strerror(errno));
    else
        rc = remove_node(parent, name, pst.st_dev, 0, err, errlen);
    if (parent != dirfd) close(parent);
    return rc;
}

int dirs_remove_if(int dirfd, const char *rel, uint64_t dev, uint64_t ino, char *err, size_t errlen)
{
    int parent;
    char name[NAME_MAX + 1], aside[NAME_MAX + 1];
    int rc = walk(dirfd, rel, 0, &parent, name, err, errlen);
    if (rc == DIRS_ENOENT) return DIRS_OK;
    if (rc) return rc;
    struct stat st, pst;
#define SAME(s) ((uint64_t)(s).st_dev == dev && (uint64_t)(s).st_ino == ino)
    /* gone, or saved anew since: the common case, decided without a move */
    if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !SAME(st)) goto out;
    /* the name aside ends in ".tmp", which no checkpoint search takes for a checkpoint */
    if (snprintf(aside, sizeof aside, ".%.200s.tune-deleting.tmp", name) >= (int)sizeof aside ||
        renameat(parent, name, parent, aside) != 0)
        goto out; /* left on disk, which is safe */
    if (fstatat(parent, aside, &st, AT_SYMLINK_NOFOLLOW) == 0 && SAME(st)) {
        rc = fstat(parent, &pst) == 0 ? remove_node(parent, aside, pst.st_dev, 0, err, errlen)
                                      : fail(err, errlen, DIRS_ERR, "cannot look at %.200s", rel);
    } else if (renameat2(parent, aside, parent, name, RENAME_NOREPLACE) != 0 &&
               fstat(parent, &pst) == 0) {
        rc = remove_node(parent, aside, pst.st_dev, 0, err, errlen); /* superseded meanwhile */
    }
#undef SAME
out:
    if (parent != dirfd) close(parent);
    return rc;
}

int dirs_stat(int dirfd, const char *rel, struct stat *st)
{
    int parent;
    char name[NAME_MAX + 1];
    int rc = walk(dirfd, rel, 0, &parent, name, NULL, 0);
    if (rc) return rc;
    struct stat s;
    if (fstatat(parent, name, &s, AT_SYMLINK_NOFOLLOW) == 0)
        *st = s;
    else
        rc = errno == ENOENT ? DIRS_ENOENT : DIRS_ERR;
    if (parent != dirfd) close(parent);
    return rc;
}

int dirs_exists(int dirfd, const char *rel)
{
    struct stat st;
    return dirs_stat(dirfd, rel, &st) == DIRS_OK;
}

/* Copies regular file sname (in folder sp) to dname (in dp) byte for byte, through a
 * temporary name renamed into place, so that a copy cut short never looks whole. */
static int copy_bytes(int sp, const char *sname, int dp, const char *dname, mode_t mode,
                      dirs_copied_t *what, char *err, size_t errlen)
{
    char tmp[NAME_MAX + 1];
    if (snprintf(tmp, sizeof tmp, ".%.200s.tune-copy", dname) >= (int)sizeof tmp)
        return fail(err, errlen, DIRS_ERR, "%.200s: name too long", dname);
    int in = openat(sp, sname, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (in < 0)
        return fail(err, errlen, DIRS_ERR, "cannot read %.200s: %s", sname, strerror(errno));
    int out = openat(dp, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode & 0777);
    if (out < 0) {
        close(in);
        return fail(err, errlen, DIRS_ERR, "cannot create %.200s: %s", tmp, strerror(errno));
    }
    char buf[1 << 16];
    int rc = DIRS_OK;
    for (;;) {
        ssize_t k = read(in, buf, sizeof buf);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            rc = fail(err, errlen, DIRS_ERR, "cannot read %.200s: %s", sname, strerror(errno));
            break;
        }
        if (k == 0) break;
        for (ssize_t w = 0; w < k;) {
            ssize_t m = write(out, buf + w, (size_t)(k - w));
            if (m < 0 && errno == EINTR) continue;
            if (m < 0) {
                rc = fail(err, errlen, DIRS_ERR, "cannot write %.200s: %s", dname, strerror(errno));
                break;
            }
            w += m;
        }
        if (rc) break;
        if (what) what->bytes += (uint64_t)k;
    }
    close(in);
    if (close(out) != 0 && !rc)
        rc = fail(err, errlen, DIRS_ERR, "cannot write %.200s: %s", dname, strerror(errno));
    if (!rc && renameat(dp, tmp, dp, dname) != 0)
        rc = fail(err, errlen, DIRS_ERR, "cannot rename %.200s: %s", tmp, strerror(errno));
    if (rc)
        unlinkat(dp, tmp, 0);
    else if (what)
        what->copied++;
    return rc;
}

static int copy_node(int sp, const char *sname, int dp, const char *dname, int depth, int flags,
                     dirs_copied_t *what, char *err, size_t errlen)
{
    struct stat st;
    if (fstatat(sp, sname, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? DIRS_ENOENT
                               : fail(err, errlen, DIRS_ERR, "cannot look at %.200s: %s", sname,
                                      strerror(errno));
    if (S_ISREG(st.st_mode)) {
        struct stat dst;
        if (!(flags & DIRS_BYTES)) {
            if (linkat(sp, sname, dp, dname, 0) == 0) {
                if (what) what->linked++;
                return DIRS_OK;
            }
            if (errno == EEXIST) return DIRS_OK; /* made by an earlier try */
        }
        if (fstatat(dp, dname, &dst, AT_SYMLINK_NOFOLLOW) == 0) return DIRS_OK;
        if (flags & DIRS_LINK_ONLY)
            return fail(err, errlen, DIRS_EBYTES, "%.200s cannot be linked: only a copy would do",
                        sname);
        return copy_bytes(sp, sname, dp, dname, st.st_mode, what, err, errlen);
    }
    if (!S_ISDIR(st.st_mode)) {
        if (what) what->skipped++;
        return DIRS_OK;
    }
    if (depth >= DIRS_MAX_DEPTH)
        return fail(err, errlen, DIRS_ERR, "%.200s: more than %d folders deep", sname,
                    DIRS_MAX_DEPTH);
    if (mkdirat(dp, dname, 0777) != 0 && errno != EEXIST)
        return fail(err, errlen, DIRS_ERR, "cannot create %.200s: %s", dname, strerror(errno));
    int sfd = open_dir_at(sp, sname), dfd = sfd >= 0 ? open_dir_at(dp, dname) : -1;
    if (sfd < 0 || dfd < 0) {
        int e = errno;
        if (sfd >= 0) close(sfd);
        return fail(err, errlen, DIRS_EOUTSIDE, "cannot enter %.200s: %s", sfd < 0 ? sname : dname,
                    strerror(e));
    }
    DIR *d = fdopendir(sfd);
    if (!d) {
        close(sfd);
        close(dfd);
        return fail(err, errlen, DIRS_ERR, "cannot read %.200s: %s", sname, strerror(errno));
    }
    int rc = DIRS_OK;
    struct dirent *e;
    while (!rc && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        rc = copy_node(dirfd(d), e->d_name, dfd, e->d_name, depth + 1, flags, what, err, errlen);
        if (rc == DIRS_ENOENT) rc = DIRS_OK; /* gone while we read: nothing to copy */
    }
    closedir(d);
    close(dfd);
    return rc;
}

int dirs_copy(int srcfd, const char *src_rel, int dstfd, const char *dst_rel, int flags,
              dirs_copied_t *what, char *err, size_t errlen)
{
    int sp, dp;
    char sname[NAME_MAX + 1], dname[NAME_MAX + 1];
    int rc = walk(srcfd, src_rel, 0, &sp, sname, err, errlen);
    if (rc) return rc;
    struct stat st;
    if (fstatat(sp, sname, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        rc = errno == ENOENT ? fail(err, errlen, DIRS_ENOENT, "%.200s: no such file", src_rel)
                             : fail(err, errlen, DIRS_ERR, "cannot look at %.200s: %s", src_rel,
                                    strerror(errno));
    } else if (S_ISLNK(st.st_mode)) {
        rc = fail(err, errlen, DIRS_EOUTSIDE, "%.200s is a symlink: not followed", src_rel);
    } else if ((rc = walk(dstfd, dst_rel, 1, &dp, dname, err, errlen)) == DIRS_OK) {
        rc = copy_node(sp, sname, dp, dname, 0, flags, what, err, errlen);
        if (rc == DIRS_ENOENT) fail(err, errlen, rc, "%.200s: no such file", src_rel);
        if (dp != dstfd) close(dp);
    }
    if (sp != srcfd) close(sp);
    return rc;
}
