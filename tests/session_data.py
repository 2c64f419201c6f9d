"""The test run's own folders, made once per run however many processes it has and however
many times conftest runs (a module run twice as two modules once gave the rest of the
session a new, empty folder: no model, no server data).

One run is one folder, `ROOT`: the process that starts pytest makes it and names it in
CLI_ORG_TEST_RUN_DIR, which the pytest-xdist workers it starts inherit, so every worker
shares one data folder (`FOLDER`: one embedded server, one query model built once under its
lock) and one home (`HOME`). Only that first process (`OWNER`) removes the folder at the
end. A worker started with no run folder (never by pytest-xdist) makes its own."""

import json
import os
import tempfile

RUN_VARIABLE = "CLI_ORG_TEST_RUN_DIR"
WORKER = os.environ.get("PYTEST_XDIST_WORKER")  # "gw0", "gw1", ...; None outside a worker

if WORKER and os.environ.get(RUN_VARIABLE):
    ROOT = os.environ[RUN_VARIABLE]
    OWNER = False
else:
    ROOT = tempfile.mkdtemp(prefix="cli-org-test-")
    os.environ[RUN_VARIABLE] = ROOT
    OWNER = True

FOLDER = os.path.join(ROOT, "data")  # CLI_ORG_DATA_DIR: the embedded server and the query model
HOME = os.path.join(ROOT, "home")  # HOME and the XDG folders: never the user's own
for folder in (FOLDER, HOME):
    os.makedirs(folder, mode=0o700, exist_ok=True)

# The suite's own knobs, kept; every other CLI_ORG_* and ORG_* variable is the user's.
TEST_KNOBS = {
    "CLI_ORG_TEST_DATABASE_URL",
    RUN_VARIABLE,
    "CLI_ORG_ATTACK_REPORT",
    "CLI_ORG_FUZZ_REPORT",
    "CLI_ORG_FUZZ_EXAMPLES",
    "CLI_ORG_SCREENS",
    "CLI_ORG_CHROMIUM",
    "CLI_ORG_CHECK_CONNECTIONS",
    "CLI_ORG_WARM",
}
USERS_OWN = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "HERMES_HOME", "XDG_RUNTIME_DIR", "PGSERVICEFILE", "PGPASSFILE")


def sealed(env: "os._Environ[str] | dict[str, str]") -> None:
    """Point `env` at the run's own folders and drop the user's own settings: the data folder,
    HOME and the XDG folders, the warm helpers' folder; no CLI_ORG_DATABASE, ORG_AGENT,
    ORG_ROOT (the demo's exports), CODEX_HOME and the like."""
    for name in list(env):
        if (name.startswith(("CLI_ORG_", "ORG_")) and name not in TEST_KNOBS) or name in USERS_OWN:
            del env[name]
    env["CLI_ORG_DATA_DIR"] = FOLDER
    env["HOME"] = HOME
    xdg = {"DATA": ".local/share", "CONFIG": ".config", "CACHE": ".cache", "STATE": ".local/state"}
    for kind, folder in xdg.items():
        env[f"XDG_{kind}_HOME"] = os.path.join(HOME, folder)
    env["CLI_ORG_WARM_DIR"] = os.path.join(FOLDER, "warm")


# Where the user's own data folder is (tests/test_sealed.py): kept in the run's folder by the
# process that made it, since a worker starts from an environment already sealed.
if OWNER:
    USER_ENV = {name: os.environ[name] for name in ("HOME", "XDG_DATA_HOME", "CLI_ORG_DATA_DIR") if name in os.environ}
    with open(os.path.join(ROOT, "user-env.json"), "w") as kept:
        json.dump(USER_ENV, kept)
else:
    with open(os.path.join(ROOT, "user-env.json")) as kept:
        USER_ENV = json.load(kept)
sealed(os.environ)  # before cli_org loads, and inherited by every process a test starts
