#!/usr/bin/env bash
# Makes `import tune` work under /usr/bin/python3 without pip: writes tune.pth, naming this
# checkout's python/ folder, into the interpreter's first site directory (on Debian
# /usr/local/lib/python3.X/dist-packages, the one left to local installs; dpkg never
# touches it). scripts/install.sh (run by scripts/setup.sh) runs it. Not for virtual
# environments or another Python: there, `pip install ./python`.
# Usage: python/install-pth.sh [--uninstall] [SITE_DIR] (PYTHON=... to choose the
# interpreter). A tune.pth that names another checkout which still exists is machine-wide
# state someone else set up: it is left as it is, and said, unless TUNE_REPLACE=1; when
# replaced, the old and new folders are both said. --uninstall removes tune.pth only when
# it names this checkout.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
mode=install
if [ "${1:-}" = --uninstall ]; then mode=uninstall; shift; fi
py="${PYTHON:-/usr/bin/python3}"
site="${1:-$("$py" -c 'import site; print(site.getsitepackages()[0])')}"
pth="$site/tune.pth"
SUDO=""
if ! { mkdir -p "$site" 2>/dev/null && [ -w "$site" ]; }; then
  [ "$(id -u)" = 0 ] || SUDO="sudo"
fi
old=""
if [ -f "$pth" ]; then old="$(head -n 1 "$pth")"; fi

if [ "$mode" = uninstall ]; then
  if [ "$old" = "$here" ]; then
    $SUDO rm -f "$pth"
    echo "install-pth: removed $pth (-> $here)"
  elif [ -n "$old" ]; then
    echo "install-pth: left $pth: it names $old, not this checkout"
  fi
  exit 0
fi

if [ "$old" = "$here" ]; then
  echo "install-pth: $pth -> $here (already)"
  exit 0
fi
if [ -n "$old" ] && [ -f "$old/tune/__init__.py" ] && [ "${TUNE_REPLACE:-0}" != 1 ]; then
  echo "install-pth: warning: $pth names another checkout, $old; left as it is, so" \
       "\`import tune\` under $py imports that one. To point it here: TUNE_REPLACE=1 $0" >&2
  exit 0
fi
$SUDO mkdir -p "$site"
printf '%s\n' "$here" | $SUDO tee "$pth.tmp" >/dev/null
$SUDO mv -f "$pth.tmp" "$pth"
if [ -n "$old" ]; then
  state="replaced: it named $old"
  [ -f "$old/tune/__init__.py" ] || state="$state, which holds no tune package any more"
  echo "install-pth: $pth -> $here ($state)"
else
  echo "install-pth: $pth -> $here (new)"
fi
