#!/usr/bin/env bash
# Load the invented Halyard team (eval/team/facts.tsv): its agents and facts, as real
# facts through `cli-org remember`, beside whatever the database already holds. The fact
# golden set (eval/facts-golden.*.txt) asks about them. Safe to run again: existing agents
# are kept and identical facts are not duplicated.
set -euo pipefail
. "$(dirname "$0")/facts-lib.sh"
team="$(cd "$(dirname "$0")/.." && pwd)/eval/team"

cli-org init --owner mara >/dev/null
existing=$(cli-org agents list --json)
has() { grep -q "\"name\": \"$1\"" <<<"$existing"; }
has mara || cli-org agents add mara --person --owner >/dev/null
has tove || cli-org agents add tove --person --lead mara >/dev/null
for bot in relay probe pager; do
  has "$bot" || cli-org agents add "$bot" --lead tove >/dev/null
done
n=$(load_facts "$team/facts.tsv")
echo "team facts: $n loaded"
