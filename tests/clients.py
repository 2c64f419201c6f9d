"""The real harnesses the agents' loop is tested with, installed by name and version from
their registries into the clone's own `.clients/` folder (package caches included: nothing
is kept outside the clone), once, on first use; a later run finds them there.

- Claude Code: npm `@anthropic-ai/claude-code`, 2.1.197 (the newest that runs on Node 20)
  and 2.1.332 (its binary runs on Node 20 too; npm warns about the engine);
- Codex: npm `@openai/codex` 0.169.0;
- Hermes Agent: PyPI `hermes-agent[mcp]` 0.19.0 (the plain package lacks the MCP client), in
  a virtualenv of its own, so its pins never meet the project's.

A test that needs one asks `client("codex")` for the path of its program; an install that
fails fails the test (this tier is never skipped: CI always runs it).
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1] / ".clients"


@dataclass(frozen=True)
class Client:
    name: str  # the folder under .clients/
    registry: str  # npm or pypi
    package: str
    version: str
    program: str  # the command it installs

    @property
    def folder(self) -> Path:
        return ROOT / self.name

    @property
    def path(self) -> Path:
        if self.registry == "npm":
            return self.folder / "node_modules" / ".bin" / self.program
        return self.folder / "bin" / self.program


CLIENTS = {
    c.name: c
    for c in (
        Client("claude-code-2.1.197", "npm", "@anthropic-ai/claude-code", "2.1.197", "claude"),
        Client("claude-code-2.1.332", "npm", "@anthropic-ai/claude-code", "2.1.332", "claude"),
        Client("codex-0.169.0", "npm", "@openai/codex", "0.169.0", "codex"),
        Client("hermes-0.19.0", "pypi", "hermes-agent[mcp]", "0.19.0", "hermes"),
    )
}


def _install(c: Client) -> None:
    done = c.folder / ".installed"
    if done.is_file() and done.read_text() == c.version and c.path.exists():
        return
    c.folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "npm_config_cache": str(ROOT / ".npm-cache"), "npm_config_update_notifier": "false"}
    if c.registry == "npm":
        command = ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(c.folder), f"{c.package}@{c.version}"]
        subprocess.run(command, env=env, check=True, capture_output=True, timeout=900)
    else:
        if not (c.folder / "bin" / "pip").exists():
            subprocess.run([sys.executable, "-m", "venv", str(c.folder)], check=True, capture_output=True)
        pip = [str(c.folder / "bin" / "pip"), "install", "-q", "--cache-dir", str(ROOT / ".pip-cache")]
        subprocess.run([*pip, f"{c.package}=={c.version}"], check=True, capture_output=True, timeout=900)
    if not c.path.exists():
        raise RuntimeError(f"{c.package} {c.version} installed no {c.program} at {c.path}")
    done.write_text(c.version)


def client(name: str) -> Path:
    """The program of a harness (a key of CLIENTS, or its first part: "codex", "hermes",
    "claude-code" meaning the oldest), installed if it is not there yet."""
    c = CLIENTS.get(name) or next(v for k, v in CLIENTS.items() if k.startswith(name + "-"))
    ROOT.mkdir(exist_ok=True)
    with open(ROOT / ".lock", "w") as lock:  # pytest-xdist workers or two runs: one installs
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            _install(c)
        except subprocess.CalledProcessError as exc:
            tail = (exc.stderr or b"").decode(errors="replace")[-2000:]
            raise RuntimeError(f"installing {c.package} {c.version} failed:\n{tail}") from None
    return c.path


def trust_folder(home: Path, folder: Path) -> None:
    """What Claude Code writes when the user accepts its first question in a folder ("Do you
    trust the files in this folder?"): the folder trusted in HOME/.claude.json. Claude Code
    2.1.332 counts a project's .claude/settings.local.json (where setup approves cli-org's
    server) only in a trusted folder; 2.1.197 also in an untrusted git work tree."""
    import json

    config = home / ".claude.json"
    data = json.loads(config.read_text()) if config.exists() else {}
    data.setdefault("projects", {}).setdefault(os.path.realpath(folder), {})["hasTrustDialogAccepted"] = True
    config.write_text(json.dumps(data, indent=2) + "\n")


if __name__ == "__main__":  # python tests/clients.py: install them all, say where
    for key in CLIENTS:
        print(key, client(key))


def query_model(org: Any) -> Any:
    """The query model a user's `remember` stores a fact's vector with (built once per test
    session in its data folder, tests/conftest.py): facts a session is seeded with carry
    their vectors, as a user's do, so recall adds no "facts without a vector" notice."""
    from cli_org.vault.embedders import query_embedder

    model, why = query_embedder(org.settings)
    assert model is not None, why
    return model
