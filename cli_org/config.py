"""Settings read from the environment and an optional .env file."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from .errors import ConfigError


def _default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "cli-org"


class Settings(BaseModel):
    """Everything cli-org reads from the environment, validated once."""

    database_url: str | None = None
    database_name: str = Field(default="org", pattern=r"^[a-z][a-z0-9_]{0,40}$")
    data_dir: Path = Field(default_factory=_default_data_dir)
    agent: str | None = None
    via: str | None = None

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        if env is None:
            _load_dotenv()
            env = dict(os.environ)
        values = {
            "database_url": env.get("CLI_ORG_DATABASE_URL") or None,
            "database_name": env.get("CLI_ORG_DATABASE") or "org",
            "agent": env.get("ORG_AGENT") or None,
            "via": env.get("ORG_VIA") or None,
        }
        if env.get("CLI_ORG_DATA_DIR"):
            values["data_dir"] = Path(env["CLI_ORG_DATA_DIR"]).expanduser()
        try:
            return cls(**values)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"])
            raise ConfigError(f"bad setting {field}: {first['msg']}") from None

    @property
    def embedded(self) -> bool:
        return self.database_url is None


def _load_dotenv() -> None:
    # Only the current folder's .env: a parent's file belongs to another project.
    if Path(".env").is_file():
        from dotenv import load_dotenv

        load_dotenv(".env", override=False)
