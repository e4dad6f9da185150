#!/usr/bin/env bash
# Records a learning-curve table with tune itself (docs/simulate.md): a FIFO run of
# tune-train reporting every epoch, nothing stopped early, then `tune export --table`.
# usage: bench/tables/record.sh mlp|cnn [DB]   (resumable: run it again to continue)
# Writes bench/tables/NAME.csv.gz. Not a test; hours of CPU (see README.md here).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
top="$(cd "$here/../.." && pwd)"
kind="${1:?usage: record.sh mlp|cnn [DB]}"
db="${2:-$here/recording.db}"
space="$here/$kind.space.json"
name=$(sed -n 's/.*"name": *"\([^"]*\)".*/\1/p' "$space" | head -1)
tune="$top/build/bin/tune"
start=$(date +%s)
# --resume: a recording that was interrupted continues where it stopped.
nice -n 19 "$tune" run "$space" --db "$db" --resume --status-interval 300 || true
"$tune" export "$name" --table --db "$db" | gzip -9 > "$here/$kind.csv.gz"
echo "record.sh: $kind: $(( $(date +%s) - start )) s this run; table in $here/$kind.csv.gz"
sqlite3 "$db" "SELECT status, count(*) FROM trials t JOIN experiments e ON e.id = t.experiment_id WHERE e.name = '$name' GROUP BY status"
