"""Settings from the environment (prefix ``ADVISOR_``). Only the web and settings edges use pydantic."""

from __future__ import annotations

from pathlib import Path

from pydantic_settings import BaseSettings, SettingsConfigDict


def _default_store() -> str:
    return str(Path.home() / ".local" / "share" / "db-advisor" / "advisor.duckdb")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ADVISOR_", extra="ignore")

    store: str = _default_store()  # ADVISOR_STORE: path of the DuckDB file
    device: str = "auto"  # ADVISOR_DEVICE: auto | cpu | cuda (model training)
    debug: bool = False  # ADVISOR_DEBUG: tracebacks on errors


def get_settings() -> Settings:
    return Settings()
