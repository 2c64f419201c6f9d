#!/usr/bin/env bash
# A short tour on the embedded server: an agent remembers, lists and forgets a fact.
set -euo pipefail
export CLI_ORG_DATABASE="${CLI_ORG_DATABASE:-org_demo}"

cli-org init --owner demo-owner
cli-org agents list --json | grep -q '"name": "demo-bot"' || cli-org agents add demo-bot --lead demo-owner
id=$(ORG_AGENT=demo-bot cli-org remember "demo" "The demo ran at $(date -u +%H:%M) UTC" --source scripts/demo.sh)
echo "remembered fact $id"
cli-org facts --subject demo
ORG_AGENT=demo-owner cli-org forget "$id" "demo clean-up"
cli-org facts --all --subject demo | tail -n 2
cli-org db status
