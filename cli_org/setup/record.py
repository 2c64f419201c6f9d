"""What `cli-org setup` wrote, kept in the user's own cli-org folder (never in a project,
so a checkout can neither plant nor read it): for each file it touched, the text before
it first did (None: setup created it), the folders it made for it, a digest of the text
it left, and which harness and scope uses each of cli-org's parts of the file
("codex:/home/dev/web" uses the instruction block of /home/dev/web/AGENTS.md).

It also keeps which agent each harness and scope was set up for ("claude-code:/home/dev/web"
is bot): the archive's importer reads it (`agent_for`) to know whose a session was.

--remove reads it: a part another user still needs stays; once no part is left, a file
nobody changed since goes back to its text before setup byte for byte (a file setup
created is deleted, with the folders it made when they are empty); a file changed since
keeps everything but cli-org's part.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..local.places import data_dir_from
from . import files

NAME = "setup-record.json"
LOCK = "setup-record.lock"


def _own(env: Mapping[str, str], name: str) -> files.Place:
    """A file of setup's own in the user's cli-org folder: the folder as the user chose it
    (a link there is theirs), the name itself never followed."""
    folder = data_dir_from(env)
    return files.place(folder / name, folder)


@contextlib.contextmanager
def held(env: Mapping[str, str]) -> Iterator[None]:
    """One setup at a time reads, changes and writes the record: two at once (two harnesses
    set up from two terminals) would each save their own copy and lose the other's parts."""
    data_dir_from(env).mkdir(parents=True, exist_ok=True, mode=0o700)
    with files.locked(_own(env, LOCK)):
        yield


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Record:
    def __init__(self, place: files.Place, data: dict[str, Any]):
        self.place = place
        self.files: dict[str, dict[str, Any]] = data.get("files", {})
        found = data.get("agents")
        self.agents: dict[str, str] = (
            {k: v for k, v in found.items() if isinstance(k, str) and isinstance(v, str)}
            if isinstance(found, dict)
            else {}
        )
        self.restores: set[str] = set()  # files put back as they were
        self.emptied: list[str] = []  # folders setup made, to take away when empty

    @classmethod
    def load(cls, env: Mapping[str, str]) -> Record:
        place = _own(env, NAME)
        raw = files.read(place) if place.root.is_dir() else None
        try:
            data = json.loads(raw) if raw else {}
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise ConfigError(
                f"{place.path}: not setup's record; move it away, then run again (nothing was changed)"
            ) from None
        return cls(place, data if isinstance(data, dict) else {})

    def users(self, key: str, part: str) -> list[str]:
        return list(self.files.get(key, {}).get("parts", {}).get(part, []))

    def has(self, key: str) -> bool:
        return bool(self.files.get(key, {}).get("parts"))

    def keeps(self, key: str) -> bool:
        return key in self.files and self.files[key]["before"] is not None

    def was_restored(self, key: str) -> bool:
        return key in self.restores

    def claim(self, key: str, part: str, user: str, before: str | None, here: files.Place) -> None:
        if key not in self.files:
            made: list[str] = []
            walked = here.root
            for name in here.folders:
                walked = walked / name
                if made or not walked.is_dir():
                    made.append(str(walked))
            self.files[key] = {"before": before, "folders": made, "left": None, "parts": {}}
        parts = self.files[key]["parts"]
        parts[part] = [*(u for u in parts.get(part, []) if u != user), user]

    def release(self, key: str, part: str, user: str) -> None:
        parts = self.files.get(key, {}).get("parts", {})
        left = [u for u in parts.get(part, []) if u != user]
        if left:
            parts[part] = left
        else:
            parts.pop(part, None)

    def restored(self, key: str, original: str | None, after: str | None, empty: Callable[[str], Any]) -> str | None:
        """What the file becomes once the last of cli-org's parts is out: as it was before
        setup when nothing changed it since, else `after`, deleted when setup created the
        file (or, with no record, when setup's part was all it held)."""
        entry = self.files.pop(key, None)
        if entry is None:
            return None if after is not None and after != original and not empty(after) else after
        self.emptied += reversed(entry["folders"])
        if original is not None and digest(original) == entry["left"]:
            if entry["before"] is not None:
                self.restores.add(key)
            return str(entry["before"]) if entry["before"] is not None else None
        if after is not None and not empty(after):  # nothing but empty objects and lists left
            if entry["before"] is None:
                return None  # setup created it
            if not empty(str(entry["before"])):  # the user's own file held nothing either (a touched one)
                self.restores.add(key)
                return str(entry["before"])
        return after

    def wrote(self, key: str, text: str) -> None:
        if key in self.files:
            self.files[key]["left"] = digest(text)

    def wired(self, user: str, agent: str | None) -> None:
        """The agent a harness and scope is set up for (None: set up no more)."""
        if agent is None:
            self.agents.pop(user, None)
        else:
            self.agents[user] = agent

    def save(self) -> None:
        if self.files or self.agents:
            kept: dict[str, Any] = {"files": self.files}
            if self.agents:
                kept["agents"] = dict(sorted(self.agents.items()))
            data = json.dumps(kept, indent=1, ensure_ascii=False) + "\n"
            files.replace(self.place, data.encode("utf-8"), mode=0o600)
        else:
            files.delete(self.place)
        for folder in self.emptied:
            files.remove_empty_folder(Path(folder))


def user_of(harness: str, project_dir: Path | None) -> str:
    """Who uses a part: the harness, and the project (its real path) or the user's home."""
    return f"{harness}:{os.path.realpath(project_dir) if project_dir is not None else '~'}"


def agent_key(harness: str, project_dir: Path | None, env: Mapping[str, str]) -> str:
    """Whose sessions a harness makes in a scope, as the record's `agents` keeps it: the
    project (its real path), or the user's home (`~` and its real path: two homes that share
    one data folder, as a shared CLI_ORG_DATA_DIR or the test suite's server do, are two
    users; one home's setup named another's sessions in the suite)."""
    if project_dir is not None:
        return user_of(harness, project_dir)
    home = env.get("HOME") or str(Path.home())
    return f"{harness}:~{os.path.realpath(home)}"


def agent_for(env: Mapping[str, str], harness: str, cwd: str | None) -> str | None:
    """The agent `cli-org setup HARNESS` wired for the project folder that holds `cwd` (the
    innermost, when set-up projects nest), else for the user's scope (of this home; a record
    from before homes were told apart says `harness:~`); None when setup wired neither, or its
    record cannot be read (the importer then assigns the session itself)."""
    try:
        agents = Record.load(env).agents
    except (ConfigError, OSError):
        return None
    if cwd:
        here = Path(os.path.realpath(cwd))
        prefix = f"{harness}:"
        best: tuple[int, str] | None = None
        for user, agent in agents.items():
            if not user.startswith(prefix) or user.startswith(f"{prefix}~"):
                continue
            folder = Path(user[len(prefix) :])
            if (folder == here or folder in here.parents) and (best is None or len(folder.parts) > best[0]):
                best = (len(folder.parts), agent)
        if best is not None:
            return best[1]
    return agents.get(agent_key(harness, None, env)) or agents.get(user_of(harness, None))
