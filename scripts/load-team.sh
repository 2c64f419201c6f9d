#!/usr/bin/env bash
# Load the invented Halyard team (eval/team/facts.tsv): its agents and facts, as real
# facts through `cli-org remember`, beside whatever the database already holds. The fact
# golden set (eval/facts-golden.*.txt) asks about them. Safe to run again: existing agents
# are kept and identical facts are not duplicated.
set -euo pipefail
team="$(cd "$(dirname "$0")/.." && pwd)/eval/team"

cli-org init --owner mara >/dev/null
existing=$(cli-org agents list --json)
has() { grep -q "\"name\": \"$1\"" <<<"$existing"; }
has mara || cli-org agents add mara --person --owner >/dev/null
has tove || cli-org agents add tove --person --lead mara >/dev/null
for bot in relay probe pager; do
  has "$bot" || cli-org agents add "$bot" --lead tove >/dev/null
done
n=0
# Tabs become \037 first: `read` folds runs of whitespace separators (see load-sample.sh).
while IFS=$'\037' read -r agent subject claim source project kind; do
  [[ -z "$agent" || "$agent" == \#* ]] && continue
  ORG_AGENT="$agent" cli-org remember "$subject" "$claim" --source "$source" \
    ${project:+--project "$project"} --kind "${kind:-fact}" >/dev/null
  n=$((n + 1))
done < <(tr '\t' '\037' <"$team/facts.tsv")
echo "team facts: $n loaded"
