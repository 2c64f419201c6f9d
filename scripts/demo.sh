#!/usr/bin/env bash
# A short tour on the embedded server: load the sample, write and retire a fact, recall.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
export CLI_ORG_DATABASE="${CLI_ORG_DATABASE:-org_demo}"
export ORG_ROOT="$here/eval/sample"  # where recall finds the bots' memory files

# The embedded server's data folder, as cli-org finds it (cli_org/local/places.py).
data_dir="${CLI_ORG_DATA_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/cli-org}"
echo "This demo writes to the database '$CLI_ORG_DATABASE' on the embedded server"
echo "(data folder $data_dir); the default database 'org' is not touched."
echo
bash "$here/scripts/load-sample.sh"
# A week of the team's agent sessions (eval/sample/sessions), laid out as Claude Code, Codex
# and Hermes keep them, in a temporary folder, and imported from there: never from this
# machine's own harness folders. The Sessions and Usage pages (`cli-org serve`) show them, and
# the import proposes the lasting lessons in them: the Proposals page (or `cli-org proposals`).
sessions="$(mktemp -d)"
trap 'rm -rf "$sessions"' EXIT
python3 "$here/scripts/sample-sessions.py" "$sessions" >/dev/null
# Each store is one agent's (what `cli-org setup` records on a real machine: --agent stands in).
echo "\$ cli-org archive import (the sample's sessions: builder's Claude Code, reviewer's Codex, ops's Hermes)"
cli-org archive import --claude "$sessions/claude" --agent builder
cli-org archive import --codex "$sessions/codex" --agent reviewer
cli-org archive import --hermes "$sessions/hermes" --agent ops
id=$(ORG_AGENT=builder cli-org remember "demo" "The demo ran at $(date -u +%H:%M) UTC" --source scripts/demo.sh)
echo "remembered fact $id; retiring it as the team lead:"
ORG_AGENT=mara cli-org forget "$id" "demo clean-up"
cli-org facts --all --subject demo | tail -n 2
for question in "how do we roll back a bad deploy" "when are database backups taken" "zzqx vlorp quenk"; do
  echo
  echo "\$ cli-org recall \"$question\""
  ORG_AGENT=builder cli-org recall "$question"
done
# Two saved golden runs for the web page's Evaluation page (`cli-org serve`): the sample's
# held-out golden set at k=3 and k=8 (about 30 recalls each; not logged as usage). Saved
# once: a rerun keeps the runs it finds.
runs=$(cli-org eval history --json --as mara)
for k in 3 8; do
  if grep -q "\"name\": \"mara/demo-k$k\"" <<<"$runs"; then continue; fi
  echo
  echo "\$ cli-org eval golden eval/golden.test.txt --limit $k --save demo-k$k --as mara"
  (cd "$here" && cli-org eval golden eval/golden.test.txt --limit "$k" --save "demo-k$k" --as mara | tail -n 1)
done
echo
cli-org db status
echo
echo "The demo data is in the database '$CLI_ORG_DATABASE'. To keep exploring it in this shell:"
printf '  export CLI_ORG_DATABASE=%q ORG_ROOT=%q ORG_AGENT=builder\n' "$CLI_ORG_DATABASE" "$ORG_ROOT"
echo "  cli-org facts; cli-org recall \"how do we roll back a bad deploy\"; cli-org db psql"
echo "Without CLI_ORG_DATABASE, cli-org uses the database 'org': run \`cli-org init\` to start your own."
