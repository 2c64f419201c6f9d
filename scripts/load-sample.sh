#!/usr/bin/env bash
# Load the shipped sample (eval/sample): agents, facts, and the vault, scanned and embedded.
# Safe to run again: existing agents are kept and identical facts are not duplicated.
# --facts-only loads agents and facts beside a vault indexed elsewhere.
set -euo pipefail
sample="$(cd "$(dirname "$0")/.." && pwd)/eval/sample"

cli-org init --owner mara >/dev/null
existing=$(cli-org agents list --json)
has() { grep -q "\"name\": \"$1\"" <<<"$existing"; }
has mara || cli-org agents add mara --person --owner >/dev/null
for bot in builder reviewer ops; do
  has "$bot" || cli-org agents add "$bot" --lead mara >/dev/null
done
n=0
# Tabs become \037 first: `read` folds runs of whitespace separators, which would shift
# every field after an empty one.
while IFS=$'\037' read -r agent subject claim source project kind; do
  [[ -z "$agent" || "$agent" == \#* ]] && continue
  ORG_AGENT="$agent" cli-org remember "$subject" "$claim" --source "$source" \
    ${project:+--project "$project"} --kind "${kind:-fact}" >/dev/null
  n=$((n + 1))
done < <(tr '\t' '\037' <"$sample/facts.tsv")
echo "facts: $n loaded"
[[ "${1:-}" == "--facts-only" ]] || cli-org vault scan "$sample/vault" --embed --replace
