#!/usr/bin/env bash
# Puts this checkout's build on PATH and its Python package on /usr/bin/python3's path, or
# takes both back. scripts/setup.sh runs it after building; it says every file it writes,
# replaces or removes. Not for: copying binaries (that is `cmake --install build --prefix P`)
# or virtual environments (`pip install ./python`).
#
#   scripts/install.sh              links PREFIX/bin/tune and tune-train to build/bin/, and
#                                   writes tune.pth (python/install-pth.sh)
#   scripts/install.sh --uninstall  removes them, but only where they name this checkout
#
# TUNE_PREFIX: where bin/ is (default /usr/local, on every user's PATH; ~/.local for
# yourself alone; "none" for no links). TUNE_SITE_DIR: the site directory for tune.pth
# (default /usr/bin/python3's first, "none" for none). A link or a tune.pth that names
# another checkout which still exists is left as it is, and said, unless TUNE_REPLACE=1.
# Links, not copies: a rebuild is what `tune` runs next, and tune finds tune-train (and the
# examples' programs) beside its real path, build/bin.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
prefix="${TUNE_PREFIX:-/usr/local}"
mode=install
case "${1:-}" in
  "") ;;
  --uninstall) mode=uninstall ;;
  *) echo "usage: scripts/install.sh [--uninstall]" >&2; exit 2 ;;
esac

# sudo only where the folder is not ours to write (as setup.sh does for apt-get).
as_needed() {
  local dir="$1"; shift
  if [ -w "$dir" ] || [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

if [ "$prefix" != none ]; then
  bindir="$prefix/bin"
  for prog in tune tune-train; do
    dst="$bindir/$prog" src="$root/build/bin/$prog"
    old=""
    if [ -L "$dst" ]; then old="$(readlink "$dst")"; fi
    if [ "$mode" = uninstall ]; then
      if [ "$old" = "$src" ]; then
        as_needed "$bindir" rm -f "$dst"
        echo "install: removed $dst (-> $src)"
      elif [ -e "$dst" ] || [ -L "$dst" ]; then
        echo "install: left $dst: it is not this checkout's (${old:-a file})"
      fi
      continue
    fi
    if [ "$old" = "$src" ]; then
      echo "install: $dst -> $src (already)"
      continue
    fi
    if [ -e "$dst" ] && [ "${TUNE_REPLACE:-0}" != 1 ]; then
      # Another checkout's link, or a copy (cmake --install, a package): not ours to change.
      echo "install: warning: $dst is ${old:+a link to }${old:-a file of its own}, not this" \
           "checkout's; left as it is, so \`$prog\` runs that one. To point it here:" \
           "TUNE_REPLACE=1 scripts/install.sh (or TUNE_PREFIX=DIR for another place)" >&2
      continue
    fi
    if [ -n "$old" ]; then
      state="replaced: it was -> $old"
      [ -e "$dst" ] || state="$state, which is gone"
    elif [ -e "$dst" ]; then
      state="replaced a file of its own"
    else
      state="new"
    fi
    mkdir -p "$bindir" 2>/dev/null || sudo mkdir -p "$bindir"
    as_needed "$bindir" ln -sfn "$src" "$dst"
    echo "install: $dst -> $src ($state)"
  done
  if [ "$mode" = install ]; then
    case ":$PATH:" in
      *":$bindir:"*) ;;
      *) echo "install: note: $bindir is not on this shell's PATH; add it (export" \
              "PATH=\"$bindir:\$PATH\", e.g. in ~/.profile) to type \`tune\`" >&2 ;;
    esac
  fi
fi

if [ "${TUNE_SITE_DIR:-}" != none ]; then
  if [ "$mode" = uninstall ]; then
    "$root/python/install-pth.sh" --uninstall ${TUNE_SITE_DIR:+"$TUNE_SITE_DIR"}
  else
    "$root/python/install-pth.sh" ${TUNE_SITE_DIR:+"$TUNE_SITE_DIR"}
  fi
fi
