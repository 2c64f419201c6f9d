# Shared by load-sample.sh and load-team.sh: source it, then `load_facts FILE`.
# FILE is tab-separated: agent, subject, claim, source, project, kind (# starts a comment).
# Each fact goes in through `cli-org remember` as its agent; prints how many were loaded.
# A refused fact stops it with status 1 (errexit does not reach into `$(...)`).
load_facts() {
  local n=0 agent subject claim source project kind
  # Tabs become \037 first: `read` folds runs of whitespace separators, which would shift
  # every field after an empty one.
  while IFS=$'\037' read -r agent subject claim source project kind; do
    [[ -z "$agent" || "$agent" == \#* ]] && continue
    ORG_AGENT="$agent" cli-org remember "$subject" "$claim" --source "$source" \
      ${project:+--project "$project"} --kind "${kind:-fact}" >/dev/null || return 1
    n=$((n + 1))
  done < <(tr '\t' '\037' <"$1")
  echo "$n"
}
