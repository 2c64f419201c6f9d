"""Shared by the test modules (moved from tests/test_web_agents.py; no test module imports another)."""

from __future__ import annotations

import dataclasses
from contextlib import ExitStack

import pytest
from fastapi.testclient import TestClient

from cli_org.db.connect import connect
from cli_org.db.pool import open_pool
from cli_org.faces.web.app import Web, create_app
from cli_org.faces.web.guard import hosts_for
from cli_org.org import Org
from cli_org.store import facts
from cli_org.vault.embed import embed_pending
from cli_org.vault.scan import scan
from tests.fakes import HashEmbedder


def remember(org, agent: str, subject: str, claim: str, **kw) -> int:
    return facts.remember(org.writer(agent), subject, claim, source=kw.pop("source", "docs/x.md"), **kw).id


@pytest.fixture
def site(org, tmp_path):
    """A project root with bots' memory files and a scanned, embedded vault; `site(agent)`
    gives a client of the page serving as agent, with the fake query embedder (or the one
    passed), over settings whose ORG_ROOT is that root."""
    root = tmp_path / "root"
    (root / ".agents/org/memory").mkdir(parents=True)
    for name, text in MEMORY.items():
        (root / ".agents/org/memory" / name).write_text(text)
    vault = tmp_path / "vault"
    for rel, text in VAULT.items():
        (vault / rel).parent.mkdir(parents=True, exist_ok=True)
        (vault / rel).write_text(text)
    with connect(org.settings) as conn:
        scan(conn, vault)
        embed_pending(conn, HashEmbedder())
    settings = dataclasses.replace(org.settings, root=str(root))
    stack = ExitStack()

    def make(agent: str | None = "boss", *, embedder=None, settings=settings) -> TestClient:
        pool = stack.enter_context(open_pool(settings, agent, max_size=2))
        held = Org(settings, agent, "web", embedder or HashEmbedder(), pool=pool)
        served = Web(held, hosts=hosts_for("127.0.0.1", 8765))
        client = TestClient(create_app(served), base_url="http://127.0.0.1:8765", follow_redirects=False)
        client.headers["Authorization"] = f"Bearer {served.token}"  # an API client's way in
        stack.enter_context(client)
        return client

    make.root, make.vault, make.settings = root, vault, settings  # type: ignore[attr-defined]
    yield make
    stack.close()


VAULT = {
    "ops/deploy.md": "# Deploy process\n\n## Rollback\n\nRun `make rollback` within fifteen minutes of a bad deploy.\n",
    "dev/squash.md": "# Squash commits\n\nFold commits together with an interactive rebase before merging.\n",
    "cooking/bread.md": "# Bread\n\nKnead the dough and let it rise overnight.\n",
    "CURRENT/today.md": "# Today\n\nRollback drill at noon, private scratch.\n",
}


MEMORY = {
    "bot.md": "# bot\n\n- the deploy runner needs the VPN profile before a rollback\n",
    "other.md": "# other\n\n- billing exports run on the first working day\n",
}
