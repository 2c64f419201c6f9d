#!/usr/bin/env bash
# Run the same command lines with two checkouts of cli-org against one loaded database and
# say which outputs differ: how a change that must not change behaviour shows it did not.
#
#   bash scripts/compare_outputs.sh OLD_TREE NEW_TREE
#
# Both trees run with this venv's Python (PYTHONPATH=TREE), the warm helper off, against the
# database of $CLI_ORG_DATA_DIR / $CLI_ORG_DATABASE, loaded first with
# scripts/load-sample.sh and scripts/load-team.sh. Ages ("; 20m)") and timings are
# normalised before comparing; every other byte counts, stdout, stderr and the exit code.
set -euo pipefail
old=$(cd "$1" && pwd); new=$(cd "$2" && pwd)
here=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d)
export CLI_ORG_WARM=0 ORG_ROOT="$here/eval/sample" COLUMNS=100

lines() {
  echo "--help"
  for c in init db agents remember forget restore facts notebook pin unpin pins todo tidy export import \
    context vault search recall warm eval archive usage sessions serve mcp setup hook; do
    echo "$c --help"
  done
  cat <<'LIST'
agents list
agents list --json
facts
facts --json --as mara
facts show 1 --as mara
notebook show --as builder
pins --as mara --all
todo list --as mara --all
tidy --as mara
context --as builder
context --as builder --format markdown
recall "ledger-api connection pool" --as builder --json
recall "ledger-api connection pool" --as builder --limit 0
recall "ledger-api connection pool" --as builder --limit 51
recall "" --as builder
context --as builder --for "why did the payments e2e job fail"
search "squash commits" --mode keyword
search "squash commits" --mode hybrid
search "squash commits" --mode semantic --json
eval noise eval/noise.test.txt --as builder
sessions search deploy
remember x y --as builder
remember subj "The password is hunter2hunter2" --source a.md --as builder
forget 999999 gone --as builder
LIST
  grep -v '^#' "$here/eval/golden.test.txt" | cut -d'|' -f1 | sed 's/.*/recall "&" --as builder/'
}

run() {  # run TREE DIR
  local n=0
  while IFS= read -r line; do
    n=$((n + 1))
    (cd "$here" && eval "PYTHONPATH='$1' '$here/.venv/bin/python' -m cli_org $line" >"$2/$n.out" 2>"$2/$n.err"; echo "exit $?" >>"$2/$n.err") || true
    echo "$line" >"$2/$n.cmd"
  done < <(lines)
}

normal() { sed -E 's/; ([0-9]+[smhd]|now)([];)])/; AGE\2/g; s/"(ms|ms_median|ms_p95)": [0-9.]+/"\1": N/g; s/"age": "[^"]*"/"age": A/g; s/[0-9]+ ms/N ms/g' "$1"; }

mkdir -p "$out/old" "$out/new"
run "$old" "$out/old"
run "$new" "$out/new"
differ=0 total=0
for cmd in "$out"/old/*.cmd; do
  n=$(basename "$cmd" .cmd); total=$((total + 1))
  for s in out err; do
    if ! diff -q <(normal "$out/old/$n.$s") <(normal "$out/new/$n.$s") >/dev/null; then
      differ=$((differ + 1)); echo "differs ($s): cli-org $(cat "$cmd")"
      diff <(normal "$out/old/$n.$s") <(normal "$out/new/$n.$s") | head -6 || true  # diff exits 1
      break
    fi
  done
done
echo "$differ of $total command lines differ (outputs kept in $out)"
