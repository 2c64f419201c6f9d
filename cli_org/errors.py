"""One error hierarchy; the CLI turns each into a single line on stderr."""

from __future__ import annotations

from typing import Any


class OrgError(Exception):
    """Base of every expected failure; the message is what the user reads."""

    exit_code = 1

    @property
    def fields(self) -> dict[str, Any]:
        """What a program needs beside the message to act on the failure; a --json error
        object carries them next to "error"."""
        return {}


class InputError(OrgError):
    """The caller gave something cli-org refuses to store or act on."""


class NearDuplicate(InputError):
    """A new claim says what a current fact of the same author, subject and project already
    says, by the tidy-up's near-duplicate rule (store/duplicates.py); nothing was written."""

    def __init__(self, message: str, existing_id: int, existing_claim: str, overlap: float):
        super().__init__(message)
        self.existing_id = existing_id
        self.existing_claim = existing_claim
        self.overlap = overlap

    @property
    def fields(self) -> dict[str, Any]:
        return {"existing_id": self.existing_id, "existing_claim": self.existing_claim, "overlap": self.overlap}


class ScanRefused(InputError):
    """The write scan found a secret or a prompt injection in a field (checks/write.py): the
    message says which check and which part of the text; `text` is the field as written, which
    an owner may approve (`cli-org checks allow`)."""

    def __init__(self, message: str, field: str, text: str, found: Any):
        super().__init__(message)
        self.field = field
        self.text = text
        self.found = found

    @property
    def fields(self) -> dict[str, Any]:
        f = self.found
        return {
            "refused_field": self.field,
            "found": {"kind": f.kind, "what": f.what, "part": f.part, "at": f.at, "score": f.score,
                      "threshold": f.threshold},
        }  # fmt: skip


class NotFound(OrgError):
    """A named thing (agent, fact, file) does not exist."""


class AccessDenied(OrgError):
    """The connected role may not do this."""


class ConfigError(OrgError):
    """Settings or the environment are wrong."""


class DatabaseError(OrgError):
    """The database could not be reached or answered with an unexpected error."""


class ThresholdNotMet(OrgError):
    """A measurement ran and its result fails the check asked for (a `--min-hit` floor, a
    noise query that found something): the output stands, and the exit code says it failed."""
