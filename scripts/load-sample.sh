#!/usr/bin/env bash
# Load the shipped sample (eval/sample): agents, facts, and the vault, scanned and embedded.
# Safe to run again: existing agents are kept and identical facts are not duplicated.
# --facts-only loads agents and facts beside a vault indexed elsewhere.
set -euo pipefail
. "$(dirname "$0")/facts-lib.sh"
sample="$(cd "$(dirname "$0")/.." && pwd)/eval/sample"

cli-org init --owner mara >/dev/null
existing=$(cli-org agents list --json)
has() { grep -q "\"name\": \"$1\"" <<<"$existing"; }
has mara || cli-org agents add mara --person --owner >/dev/null
for bot in builder reviewer ops; do
  has "$bot" || cli-org agents add "$bot" --lead mara >/dev/null
done
n=$(load_facts "$sample/facts.tsv")
echo "facts: $n loaded"
[[ "${1:-}" == "--facts-only" ]] || cli-org vault scan "$sample/vault" --embed --replace
# Loaded as a user would: the first `remember` builds the query model, and each stores its
# fact's vector as it writes (no `facts embed` step a user would not know to take).
