#!/usr/bin/env bash
# Runs every test with ctest (the README's second command). Expects scripts/setup.sh
# to have built build/.
set -euo pipefail
cd "$(dirname "$0")/.."

# The formatter first: a tracked .c/.h/.cu file that .clang-format would change fails the
# run, naming the files (skipped, with a message, where clang-format is missing).
scripts/check_format.sh

# Slurm executor tests: as root, with Slurm installed, bring up a private cluster (two
# fake nodes on this host, scripts/slurm/up.sh) for this run and always take it down
# again, leaving no daemon behind. Otherwise those tests skip. TUNE_SLURM_TESTS=0: skip.
slurm_dir="${SLURM_CI_DIR:-/tmp/tune-slurm-ci}"
if [ "$(id -u)" = 0 ] && [ "${TUNE_SLURM_TESTS:-1}" != 0 ] && command -v slurmctld >/dev/null; then
  trap 'SLURM_CI_DIR="$slurm_dir" scripts/slurm/down.sh --purge >&2 || true' EXIT
  if slurm_env="$(SLURM_CI_DIR="$slurm_dir" SLURM_CI_NODES=2 scripts/slurm/up.sh)"; then
    eval "$slurm_env"
    export SLURM_CONF
  else
    echo "test: the test Slurm cluster did not come up; the Slurm tests will skip" >&2
  fi
fi
ctest --test-dir build --output-on-failure -j "$(nproc)" "$@"

# The portable build (-DTUNE_PORTABLE=ON, build-portable/), on a whole run only: the
# trainer's GEMM and the Parzen sums have AVX-512 and AVX2 paths, picked at run time,
# beside the plain code other machines get; build/ runs what this CPU picks. Here only the
# plain code is built (no x86 intrinsics, no clones) and tested: the tests whose code
# differs (train, tpe, search), without the CUDA code (build/ compiles it) and the `slow`
# accuracy runs (minutes each on that path; the gradient, reference and synthetic-data
# cases check it). TUNE_PORTABLE_TESTS=0 skips it.
if [ $# -eq 0 ] && [ "${TUNE_PORTABLE_TESTS:-1}" != 0 ]; then
  t0=$SECONDS
  mkdir -p build-portable
  cmake -S . -B build-portable -DTUNE_PORTABLE=ON -DTUNE_CUDA=OFF \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo >build-portable/build.log 2>&1 ||
    { cat build-portable/build.log; exit 1; }
  cmake --build build-portable -j "$(nproc)" --target test_train tune-train test_tpe test_search \
        >>build-portable/build.log 2>&1 || { tail -50 build-portable/build.log; exit 1; }
  ctest --test-dir build-portable --output-on-failure -j "$(nproc)" -R '^(train|tpe|search)[.]' -LE slow
  echo "test: the portable build and its tests took $((SECONDS - t0)) s"
fi

# The robustness passes (ASan+UBSan suite, valgrind on the core tests, the fuzzers), on a
# whole run only (no ctest arguments given): scripts/test_robust.sh. TUNE_ROBUST=0 skips.
if [ $# -eq 0 ] && [ "${TUNE_ROBUST:-1}" != 0 ]; then
  scripts/test_robust.sh
fi
