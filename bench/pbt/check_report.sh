#!/bin/sh
# bench/pbt/check_report.sh REPORT.html [SHOT.png]: draws a `tune report` in headless
# Chromium (as tests/test_report.c does) and prints the <body> attributes the page sets
# once drawn: data-ready=1 and data-errors=0 when its script ran without error,
# data-exploits (lineage rows), data-lineage (connectors drawn: exploits with a result
# after them), data-schedule (segments of the best trial's schedule). With SHOT, also a
# screenshot. Exit 1 when the page was not drawn or had a script error.
set -eu
html=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
C=/usr/bin/chromium
[ -x "$C" ] || { echo "check_report.sh: no $C (apt-get install chromium)" >&2; exit 2; }
prof=$(mktemp -d)
trap 'rm -rf "$prof"' EXIT
run() {
    "$C" --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking \
        --disable-component-update --disable-sync --user-data-dir="$prof" --hide-scrollbars \
        --window-size=1400,2000 --virtual-time-budget=10000 "$@" "file://$html" 2>/dev/null
}
body=$(run --dump-dom | grep -o '<body[^>]*>' | head -n 1)
printf '%s\n' "$body" | tr ' ' '\n' | sed 's/>$//' | grep '^data-' | grep -v '^data-last-error' || true
[ -z "${2:-}" ] || run --screenshot="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")" >/dev/null
case $body in
*'data-ready="1"'*'data-errors="0"'* | *'data-errors="0"'*'data-ready="1"'*) exit 0 ;;
*) echo "check_report.sh: the page was not drawn without errors" >&2; exit 1 ;;
esac
