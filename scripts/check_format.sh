#!/usr/bin/env bash
# Fails (exit 1, naming the files) when a tracked .c, .h or .cu file is not formatted as
# .clang-format says; scripts/test.sh runs it before the tests. Fix with
# `clang-format -i FILE...`. Skips, saying so, where clang-format or git is missing.
# Not for: formatting anything itself.
set -euo pipefail
cd "$(dirname "$0")/.."

fmt="${CLANG_FORMAT:-clang-format}"
if ! command -v "$fmt" >/dev/null; then
  echo "check_format: $fmt is not installed (apt-get install clang-format): formatting NOT checked" >&2
  exit 0
fi
if ! files="$(git ls-files -- '*.c' '*.h' '*.cu' 2>/dev/null)"; then
  echo "check_format: not a git checkout: formatting NOT checked" >&2
  exit 0
fi
bad=()
while IFS= read -r f; do
  [ -f "$f" ] || continue # tracked but deleted in this work tree
  "$fmt" --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done <<<"$files"
if ((${#bad[@]})); then
  echo "check_format: ${#bad[@]} file(s) not formatted as .clang-format says ($("$fmt" --version | head -1)):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  echo "check_format: run: $fmt -i ${bad[*]}" >&2
  exit 1
fi
echo "check_format: $(wc -l <<<"$files") files formatted"
