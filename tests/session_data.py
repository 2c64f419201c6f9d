"""The test session's own data folder, made once per process however many times conftest runs
(a test that imports `tests.conftest` runs that module a second time, as another module, which
once gave the rest of the session a new, empty folder: no model, no server data)."""

import tempfile

FOLDER = tempfile.mkdtemp(prefix="cli-org-test-")
