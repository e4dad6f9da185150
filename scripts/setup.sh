#!/usr/bin/env bash
# Installs what tune needs (Debian packages), builds everything into build/, and runs the
# example experiment. This is the README's first command; .ci/run runs it as written.
# Set TUNE_SKIP_EXAMPLE=1 to build without running the example.
set -euo pipefail
cd "$(dirname "$0")/.."

pkgs=(cmake make gcc pkg-config libsqlite3-dev libcjson-dev zlib1g-dev sqlite3
      dataset-fashion-mnist)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo ${TUNE_CMAKE_ARGS:-}
cmake --build build -j "$(nproc)"

if [ "${TUNE_SKIP_EXAMPLE:-0}" != 1 ]; then
  echo "setup: running the example experiment (examples/fmnist_asha/space.json)"
  rm -f build/example.db build/example.db-wal build/example.db-shm
  rm -rf build/tune_results/fmnist-asha
  ./build/bin/tune run examples/fmnist_asha/space.json --db build/example.db
  ./build/bin/tune best fmnist-asha --db build/example.db
fi
