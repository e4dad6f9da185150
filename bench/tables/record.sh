#!/usr/bin/env bash
# Records a learning-curve table with tune itself (docs/simulate.md): a FIFO run of
# tune-train reporting every epoch, nothing stopped early, then `tune export --table`.
# usage: bench/tables/record.sh mlp|cnn [DB]   (resumable: run it again to continue)
# Writes bench/tables/KIND.csv.gz. Not a test; hours of CPU (see README.md here).
#
# The MLP table is recorded in two parts (mlp.space.json: 179 configurations, seed 2026;
# mlp-b.space.json: 222 more, seed 2028) because the first recording's database was lost
# after its 179th configuration; the table is the two exports one after the other, the
# second part's trials named b_trial_NNNNN so that every configuration keeps its own name.
# (The committed table lacks b_trial_00054, killed by a stray signal: see README.md.)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
top="$(cd "$here/../.." && pwd)"
kind="${1:?usage: record.sh mlp|cnn [DB]}"
db="${2:-$here/recording.db}"
tune="$top/build/bin/tune"
case "$kind" in
  mlp) parts=(mlp mlp-b) ;;
  cnn) parts=(cnn) ;;
  *) echo "record.sh: unknown table '$kind' (mlp or cnn)" >&2; exit 2 ;;
esac
start=$(date +%s)
out="$here/$kind.csv"
rm -f "$out.tmp"
for part in "${parts[@]}"; do
  space="$here/$part.space.json"
  name=$(sed -n 's/.*"name": *"\([^"]*\)".*/\1/p' "$space" | head -1)
  # --resume: a recording that was interrupted continues where it stopped.
  nice -n 19 "$tune" run "$space" --db "$db" --resume --status-interval 300 || true
  prefix=""
  [ "$part" = mlp-b ] && prefix=b_
  "$tune" export "$name" --table --db "$db" |
    awk -v p="$prefix" -v first="$([ -s "$out.tmp" ] && echo 0 || echo 1)" \
      'NR == 1 { if (first) print; next } { print p $0 }' >> "$out.tmp"
  sqlite3 "$db" "SELECT '$name', status, count(*) FROM trials t JOIN experiments e ON e.id = t.experiment_id WHERE e.name = '$name' GROUP BY status"
done
gzip -9 -c "$out.tmp" > "$out.gz"
rm -f "$out.tmp"
echo "record.sh: $kind: $(( $(date +%s) - start )) s this run; table in $out.gz"
