#!/usr/bin/env bash
# Makes `import tune` work under /usr/bin/python3 without pip: writes tune.pth, naming this
# checkout's python/ folder, into the interpreter's first site directory (on Debian
# /usr/local/lib/python3.X/dist-packages, the one left to local installs; dpkg never
# touches it). scripts/setup.sh runs it. Not for virtual environments: there,
# `pip install ./python`. Usage: python/install-pth.sh [SITE_DIR] (PYTHON=... to choose).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
py="${PYTHON:-/usr/bin/python3}"
site="${1:-$("$py" -c 'import site; print(site.getsitepackages()[0])')}"
SUDO=""
if ! { mkdir -p "$site" 2>/dev/null && [ -w "$site" ]; }; then
  [ "$(id -u)" = 0 ] || SUDO="sudo"
fi
$SUDO mkdir -p "$site"
printf '%s\n' "$here" | $SUDO tee "$site/tune.pth" >/dev/null
echo "install-pth: $site/tune.pth -> $here"
