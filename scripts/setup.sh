#!/usr/bin/env bash
# Installs what tune needs (Debian packages), builds everything into build/, puts `tune` on
# PATH (scripts/install.sh) and runs the example experiment. This is
# the README's first command; .ci/run runs it as written.
# Set TUNE_SKIP_EXAMPLE=1 to build without running the example; TUNE_PREFIX, TUNE_SITE_DIR
# and TUNE_REPLACE are scripts/install.sh's.
set -euo pipefail
cd "$(dirname "$0")/.."

pkgs=(cmake make gcc pkg-config libsqlite3-dev libcjson-dev zlib1g-dev sqlite3
      dataset-fashion-mnist
      # Tests of what comes after a run: the HTML report rendered in headless Chromium,
      # the PyTorch DDP example (examples/torch_ddp) and docs/queries.md's pandas snippet
      # under /usr/bin/python3.
      chromium python3-torch python3-pandas
      # `pip install ./python` in a virtual environment (tests/python/test_install.py).
      python3-venv
      # bench/search/bench.py and its test (python.searchbench.*): Optuna 3.1, the peer
      # the search benchmark replays; scipy for its Wilcoxon test, matplotlib for figures.
      python3-optuna python3-scipy python3-matplotlib
      # Slurm's client (the slurm executor) and daemons (scripts/test.sh runs its tests
      # against a private single-host cluster; nothing is started at install time).
      slurmctld slurmd slurm-client
      # scripts/test_robust.sh: clang with its runtimes (libFuzzer, ASan) and valgrind;
      # scripts/check_format.sh (run by scripts/test.sh): clang-format.
      clang libclang-rt-dev valgrind clang-format)
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
# `tune` and `tune-train` on PATH (links in /usr/local/bin to build/bin/, TUNE_PREFIX=DIR
# for another place, "none" for none) and `import tune` under /usr/bin/python3 (a tune.pth
# in its site directory naming python/): scripts/install.sh says what it wrote, and leaves
# alone (saying so) what names another checkout unless TUNE_REPLACE=1.
echo "setup: putting tune on PATH and \`import tune\` on /usr/bin/python3's path"
scripts/install.sh
echo "setup: to undo: scripts/install.sh --uninstall (removes only what names this checkout);" \
     "for another Python or a virtual environment: pip install ./python"

if [ "${TUNE_SKIP_EXAMPLE:-0}" != 1 ]; then
  # The GPU variant where tune sees a GPU and the trainer was built with CUDA, else CPU.
  example=examples/fmnist_asha/space.json name=fmnist-asha
  if ldd build/bin/tune-train 2>/dev/null | grep -q libcublas &&
     command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
    example=examples/fmnist_asha/space-gpu.json name=fmnist-asha-gpu
  fi
  echo "setup: running the example experiment ($example)"
  rm -f build/example.db build/example.db-wal build/example.db-shm
  rm -rf build/tune_results/$name
  ./build/bin/tune run "$example" --db build/example.db
  ./build/bin/tune best "$name" --db build/example.db
fi
