"""One error hierarchy; the CLI turns each into a single line on stderr."""


class OrgError(Exception):
    """Base of every expected failure; the message is what the user reads."""

    exit_code = 1


class InputError(OrgError):
    """The caller gave something cli-org refuses to store or act on."""


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
