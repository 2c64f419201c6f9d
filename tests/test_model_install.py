"""Issue 33, the query model from the install: a new team's facts, written before any vault
was embedded, must be found by their meaning once it is, and recall must say while some are
not. The facts and the questions below were written before any result was looked at (held
out: no threshold, shaping constant or model was tuned on them); the questions and task
prompts ask in other words than the facts'.

Before the fix, the facts of a fresh install were written with no query model (none was
built before `vault embed`), so they never got a vector, and nothing said so. Here they are
written the same way (remember with no model), then the vault is embedded as a new team
would: `vault embed` now stores their vectors as well."""

from __future__ import annotations

import json

import pytest

from cli_org.db.connect import connect
from cli_org.recall.answer import recall
from cli_org.session.hooks import claude_code_hook, parse_hook_input
from cli_org.store import facts
from cli_org.vault.embedders import model_file, query_model

pytestmark = pytest.mark.vectors

# (agent, subject, claim, source)
FACTS = [
    (
        "bot",
        "billing export",
        "The nightly billing export to the warehouse starts at 01:30 UTC and takes about forty minutes.",
        "ops/billing.md",
    ),  # noqa: E501
    (
        "other",
        "search cluster",
        "The search cluster runs three Elasticsearch 8.11 nodes in the eu-west-1 region.",
        "infra/search.tf",
    ),  # noqa: E501
    (
        "bot",
        "image resizer",
        "The image resizer service caps uploads at 25 MB and rejects larger files with HTTP 413.",
        "svc/resizer/README.md",
    ),  # noqa: E501
    (
        "lead",
        "staging database",
        "The staging Postgres is refreshed from an anonymised production snapshot every Sunday night.",
        "ops/staging.md",
    ),  # noqa: E501
    (
        "other",
        "mobile release",
        "The Android app ships to the Play Store on the second Tuesday of each month.",
        "mobile/RELEASE.md",
    ),  # noqa: E501
    (
        "bot",
        "feature flags",
        "Feature flags are stored in LaunchDarkly under the project key tern-web.",
        "docs/flags.md",
    ),
    (
        "lead",
        "on-call rota",
        "The on-call rota rotates every Monday at 10:00 and is kept in PagerDuty schedule PX12.",
        "ops/oncall.md",
    ),  # noqa: E501
    (
        "other",
        "cdn",
        "Static assets are served through Fastly with a one-year cache lifetime on hashed file names.",
        "infra/cdn.md",
    ),  # noqa: E501
    (
        "bot",
        "password hashing",
        "User passwords are hashed with argon2id using 64 MB of memory and three iterations.",
        "svc/auth/hash.go",
    ),  # noqa: E501
    (
        "other",
        "email provider",
        "Transactional email goes out through Postmark; marketing email through Mailchimp.",
        "docs/email.md",
    ),  # noqa: E501
    (
        "bot",
        "test suite",
        "The backend test suite takes about eleven minutes on CI and runs in four parallel shards.",
        "ci/pipeline.yml",
    ),  # noqa: E501
    (
        "lead",
        "log retention",
        "Application logs are kept for 30 days in Loki and archived to S3 Glacier for a year.",
        "ops/logging.md",
    ),  # noqa: E501
    (
        "bot",
        "payment retries",
        "Failed card payments are retried three times, after one, three and seven days.",
        "svc/billing/retry.py",
    ),  # noqa: E501
    (
        "other",
        "python version",
        "The data pipeline is pinned to Python 3.11 because a dependency does not build on 3.12 yet.",
        "pipeline/pyproject.toml",
    ),  # noqa: E501
    ("boss", "lisbon office", "The Lisbon office moved to the Rua Augusta building in March 2025.", "admin/offices.md"),
    (
        "bot",
        "api rate limit",
        "The public API allows 600 requests per minute per token before answering 429.",
        "svc/api/limits.go",
    ),  # noqa: E501
    (
        "lead",
        "backups",
        "Production database backups are taken every six hours and restored as a drill once a month.",
        "ops/backup.md",
    ),  # noqa: E501
    (
        "other",
        "design system",
        "The web front end uses the Tern UI component library, version 4, built on Radix primitives.",
        "web/package.json",
    ),  # noqa: E501
    (
        "boss",
        "customer support",
        "Support tickets are handled in Zendesk and escalate to engineering after 48 hours without an answer.",
        "docs/support.md",
    ),  # noqa: E501
    (
        "bot",
        "kafka topics",
        "Order events are published on the Kafka topic orders.v2 with 12 partitions.",
        "svc/orders/events.go",
    ),
    (
        "lead",
        "deploy freeze",
        "No production deploys happen from December 20 to January 3 each year.",
        "docs/freeze.md",
    ),
    ("boss", "cost alert", "The AWS budget alert fires when monthly spend passes 18,000 dollars.", "infra/budget.tf"),
    (
        "other",
        "dns",
        "DNS for tern.example is managed in Route 53; the zone's records live in infra/dns.tf.",
        "infra/dns.tf",
    ),
    (
        "other",
        "load balancer",
        "The load balancer closes idle connections after 60 seconds, so long polls reconnect every minute.",
        "infra/lb.tf",
    ),  # noqa: E501
    (
        "boss",
        "account deletion",
        "Account deletion requests are completed within 30 days; a job purges personal data every night.",
        "docs/privacy.md",
    ),  # noqa: E501
    (
        "bot",
        "recommendations",
        "The recommendation model is retrained every week on the last 90 days of clicks.",
        "ml/README.md",
    ),
    (
        "lead",
        "checkout slo",
        "The checkout service has an availability objective of 99.9 percent over 30 days.",
        "ops/slo.md",
    ),
    (
        "bot",
        "sessions",
        "Session data lives in a Redis 7 cluster with a two-hour expiry on each key.",
        "svc/session/store.go",
    ),
    (
        "lead",
        "code review",
        "Pull requests need one approval, and two for changes under svc/billing.",
        "docs/review.md",
    ),
    ("other", "analytics", "Product analytics are collected with a self-hosted PostHog instance.", "docs/analytics.md"),
    (
        "other",
        "translations",
        "The app is translated into Portuguese, Spanish and German through Crowdin.",
        "web/i18n.md",
    ),
    (
        "bot",
        "scheduled jobs",
        "Scheduled jobs run as Kubernetes CronJobs in the jobs namespace since the old cron box was retired.",
        "infra/jobs.md",
    ),  # noqa: E501
    (
        "lead",
        "service credentials",
        "Service credentials are kept in HashiCorp Vault and injected at pod start.",
        "infra/vault.md",
    ),
    (
        "other",
        "ios crashes",
        "Crashes in the iOS app are reported to the Sentry project tern-ios.",
        "mobile/ios/README.md",
    ),
    (
        "boss",
        "invoice numbers",
        "Invoice numbers are sequential per country and never reused after a cancellation.",
        "svc/billing/invoice.py",
    ),  # noqa: E501
    (
        "boss",
        "engineering sync",
        "The weekly engineering sync is on Thursdays at 15:00 Lisbon time.",
        "docs/meetings.md",
    ),
    (
        "other",
        "landing bundle",
        "The landing page bundle is built with Vite and is kept under 300 KB gzipped.",
        "web/vite.config.ts",
    ),
    (
        "bot",
        "queue workers",
        "The queue workers are limited to 512 MB of memory each and restart when they exceed it.",
        "infra/workers.yaml",
    ),  # noqa: E501
    (
        "lead",
        "time zones",
        "All timestamps in the database are stored in UTC; the UI converts them to the user's zone.",
        "docs/time.md",
    ),  # noqa: E501
    (
        "boss",
        "map vendor",
        "The contract with the map tiles vendor renews every April and is owned by the finance team.",
        "admin/vendors.md",
    ),  # noqa: E501
]

# A question in other words, and the subject of the fact that answers it.
QUESTIONS = [
    ("when does the nightly money data dump to the analytics store begin?", "billing export"),
    ("what is the largest picture someone can upload?", "image resizer"),
    ("how often is the pre-production database reloaded with real data?", "staging database"),
    ("which day do we publish the phone app to Google?", "mobile release"),
    ("when does the emergency support shift hand over each week?", "on-call rota"),
    ("which algorithm protects stored login credentials?", "password hashing"),
    ("which service sends receipts and reset messages to customers?", "email provider"),
    ("how long does CI take to run the server tests?", "test suite"),
    ("for how long is service output kept before it goes to cold storage?", "log retention"),
    ("what happens when a customer's card charge does not go through?", "payment retries"),
    ("why can't the data pipeline move to the newest interpreter?", "python version"),
    ("how many calls can a client make to our public endpoints before being throttled?", "api rate limit"),
    ("how frequently do we snapshot the main database?", "backups"),
    ("which message stream carries new purchases?", "kafka topics"),
    ("can we ship to production over the Christmas holidays?", "deploy freeze"),
    ("at what monthly cloud bill do we get warned?", "cost alert"),
    ("why do long-lived requests drop every minute?", "load balancer"),
    ("how quickly must we erase a user who asks to leave?", "account deletion"),
    ("how often is the suggestions engine trained again?", "recommendations"),
    ("what is the reliability goal for the payment page?", "checkout slo"),
    ("where do we keep logged-in user state and when does it expire?", "sessions"),
    ("how many reviewers does a change to the billing code need?", "code review"),
    ("which languages does the product come in?", "translations"),
    ("where do services get their database passwords from?", "service credentials"),
    ("what is the RAM ceiling for background job processors?", "queue workers"),
    ("which timezone are times saved in?", "time zones"),
]

# A task an agent is given, and the subject of the fact it needs.
TASKS = [
    ("Add a friendly error message when a photo upload is too big.", "image resizer"),
    ("Change how we handle declined card charges so customers get a reminder email.", "payment retries"),
    ("Plan a production rollout of the new search page for December 27.", "deploy freeze"),
    ("Write a client library for our public API that backs off when throttled.", "api rate limit"),
    ("Users get logged out unexpectedly after a couple of hours, investigate.", "sessions"),
    ("The background job processors keep restarting under load, find out why.", "queue workers"),
    ("Our long polling endpoint disconnects clients every minute, fix it.", "load balancer"),
    ("Upgrade the data pipeline to the latest Python release.", "python version"),
    ("Add French to the list of languages the app supports.", "translations"),
    ("Speed up the backend tests on CI.", "test suite"),
    ("Move the nightly billing export later so it stops clashing with the warehouse load.", "billing export"),
    ("Retrain the recommendation model daily instead.", "recommendations"),
]

# Everyday instructions: the hook should stay quiet.
EVERYDAY = [
    "Rename the variable x to count in utils.py.",
    "Fix the typo in the README heading.",
    "Run the linter and tell me what it says.",
    "Explain what this regular expression does.",
    "Sort the imports in main.py.",
    "Add a docstring to the parse function.",
]


def _found(conn, settings, model, ids) -> int:
    """How many questions have their fact among recall's hits."""
    n = 0
    for question, subject in QUESTIONS:
        result = recall(conn, question, settings=settings, embedder=model, log=False)
        n += any(h.arm == "fact" and h.data["id"] == ids[subject] for h in result.hits)
    return n


def _hooked(conn, settings, model, ids, session: str) -> tuple[int, int]:
    """Task prompts whose needed fact the prompt hook delivers, and everyday ones it is quiet on."""
    delivered = quiet = 0
    for i, (prompt, subject) in enumerate(TASKS):
        hook = parse_hook_input(json.dumps({"session_id": f"{session}-{i}", "prompt": prompt, "cwd": "/nowhere"}))
        out = claude_code_hook(conn, "prompt", hook, settings=settings, embedder=model, log=False)
        delivered += bool(out) and f"#{ids[subject]}" in json.loads(out)["hookSpecificOutput"]["additionalContext"]
    for i, prompt in enumerate(EVERYDAY):
        hook = parse_hook_input(json.dumps({"session_id": f"{session}-q{i}", "prompt": prompt, "cwd": "/nowhere"}))
        quiet += not claude_code_hook(conn, "prompt", hook, settings=settings, embedder=model, log=False)
    return delivered, quiet


@pytest.mark.slow
def test_a_new_teams_facts_are_found_by_meaning_once_the_vault_is_embedded(org, cli, tmp_path, capsys):
    ids = {}
    for agent, subject, claim, source in FACTS:  # written as before the fix: no query model
        ids[subject] = facts.remember(org.writer(agent), subject, claim, source=source).id
    assert len(ids) == len(FACTS) == 40
    model = query_model(model_file(org.settings.data_dir))
    assert model is not None

    with connect(org.settings, "bot") as conn:
        before = _found(conn, org.settings, model, ids)
        hook_before = _hooked(conn, org.settings, model, ids, "before")
        said = recall(conn, "anything about the deploy freeze?", settings=org.settings, embedder=model, log=False)
    assert said.vectors_notice and said.vectors_notice.startswith("40 facts have no vector yet")
    assert "cli-org vault embed" in said.vectors_notice

    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "welcome.md").write_text("# Welcome\n\nThe team wiki: how we work, who to ask.\n")
    code, out, err = cli("vault", "scan", str(vault), "--embed")
    assert code == 0, err
    assert "40 fact vectors stored" in out

    with connect(org.settings, "bot") as conn:
        after = _found(conn, org.settings, model, ids)
        hook_after = _hooked(conn, org.settings, model, ids, "after")
        said = recall(conn, "anything about the deploy freeze?", settings=org.settings, embedder=model, log=False)
    assert said.vectors_notice is None
    with capsys.disabled():
        print(
            f"\n[issue 33] recall found {before} of {len(QUESTIONS)} before, {after} after; the prompt hook "
            f"delivered the needed fact on {hook_before[0]} of {len(TASKS)} before, {hook_after[0]} after; "
            f"quiet on {hook_before[1]} and {hook_after[1]} of {len(EVERYDAY)} everyday prompts"
        )
    assert after >= before + 5 and after >= 0.75 * len(QUESTIONS)
    assert hook_after[0] >= hook_before[0] + 3
    assert hook_after[1] >= len(EVERYDAY) - 1


@pytest.mark.slow
def test_a_fact_remembered_on_a_fresh_install_has_its_vector_at_once(org, cli):
    # After the fix the first remember builds the model (the session built it once, as a user's
    # first command would), so a fact written before any vault has its vector and recall says
    # nothing is missing.
    code, out, err = cli(
        "remember", "deploy freeze", "No production deploys happen from December 20 to January 3 each year.",
        "--source", "docs/freeze.md", agent="bot",
    )  # fmt: skip
    assert code == 0, err
    with org.admin() as conn:
        stored = conn.execute("SELECT count(*) AS n FROM memory_fact_vectors WHERE fact_id = %s", (int(out),))
        assert stored.fetchone()["n"] == 1
        assert conn.execute("SELECT count(*) AS n FROM memory_facts_unembedded").fetchone()["n"] == 0
    code, out, err = cli("recall", "can we ship to production over the Christmas holidays?", "--json", agent="bot")
    assert code == 0 and "no vector" not in (json.loads(out)["notice"] or "")


@pytest.mark.slow
@pytest.mark.attack("sql")
def test_a_member_cannot_silence_the_notice_or_edit_its_list(org):
    # Through its own login: a vector it computes for another agent's fact does not count
    # (recall trusts only the author's for everyone), and the list is read-only to members.
    import psycopg

    fact = facts.remember(org.writer("other"), "search cluster", FACTS[1][2], source="infra/search.tf").id
    with org.login(f"{org.name}_bot", "bot-pw") as bot:
        vector = "[" + ",".join(["0.05"] * 384) + "]"
        bot.execute(
            "INSERT INTO memory_fact_vectors (fact_id, model, embedding) VALUES (%s, %s, %s::vector)",
            (fact, "sentence-transformers/all-MiniLM-L6-v2", vector),
        )
        bot.commit()
        listed = bot.execute("SELECT org_facts_unembedded(10) AS ids").fetchone()["ids"]
        assert listed == [fact]  # its own vector of another's fact does not take it off
        for statement in (
            "SELECT * FROM memory_facts_unembedded",
            "DELETE FROM memory_facts_unembedded",
            "UPDATE memory_facts_unembedded SET author = 'bot'",
            "INSERT INTO memory_facts_unembedded (fact_id, author) VALUES (1, 'bot')",
            "TRUNCATE memory_facts_unembedded",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                bot.execute(statement)
            bot.rollback()
        assert bot.execute("SELECT org_facts_unembedded(10) AS ids").fetchone()["ids"] == [fact]


@pytest.mark.slow
def test_two_processes_needing_the_model_at_once_build_it_once(tmp_path):
    # A fresh data folder and two commands at once (an agent's hook and its MCP server, say):
    # one builds, the other waits for its copy; both go on with a whole model.
    import subprocess
    import sys
    from pathlib import Path

    from cli_org.vault.embedders import OnnxEmbedder

    pytest.importorskip("onnx")
    # model_files: the float32 graph, then its int8 copy for indexing (two quantizing at once
    # once removed each other's work file: both are made under the build's lock).
    code = (
        "import sys; from dataclasses import replace; from pathlib import Path; "
        "from cli_org.config import Settings; from cli_org.vault.embedders import model_files; "
        "model_files(replace(Settings.from_env({}), data_dir=Path(sys.argv[1])))"
    )
    root = str(Path(__file__).resolve().parents[1])
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": root, "HOME": str(tmp_path)}
    runs = [
        subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], env=env, stderr=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    said = [run.communicate(timeout=300)[1] for run in runs]
    assert [run.returncode for run in runs] == [0, 0, 0], said
    assert "".join(said).count("building the query model") == 1
    assert not [p for p in (tmp_path / "models").iterdir() if p.name.startswith(".build-")]
    model = model_file(tmp_path)
    assert OnnxEmbedder(model).embed(["the deploy job runs at night"]).shape == (1, 384)
    made = sorted(p.name for p in model.parent.iterdir())
    assert made == ["model.int8.onnx", "model.onnx", "tokenizer.json", "weights.bin"]
