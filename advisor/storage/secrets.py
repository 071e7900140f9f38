"""Encryption at rest of target credentials (a DSN with its password), with Fernet (AES-128-CBC + HMAC-SHA256).

The key comes from ``ADVISOR_SECRET_KEY``, else from a key file (``ADVISOR_KEY_FILE``, default ``secret.key``
beside the store), which is created with mode 0600 the first time it is needed. Decrypted DSNs live only in
memory, for the duration of one operation; nothing returns or logs them (``connectors.postgres.connection.redact``).
"""

from __future__ import annotations

import os
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken

from advisor.core.errors import StoreError
from advisor.storage.database import is_postgres


class Vault:
    def __init__(self, key: bytes):
        try:
            self._fernet = Fernet(key)
        except (ValueError, TypeError):
            raise StoreError("the secret key is not a valid Fernet key (32 url-safe base64-encoded bytes); "
                             "make one with: python -c 'from cryptography.fernet import Fernet; "
                             "print(Fernet.generate_key().decode())'") from None

    def encrypt(self, text: str) -> str:
        return self._fernet.encrypt(text.encode()).decode()

    def decrypt(self, token: str) -> str:
        try:
            return self._fernet.decrypt(token.encode()).decode()
        except InvalidToken:
            raise StoreError("cannot decrypt the stored credentials: the secret key is not the one they were "
                             "encrypted with (ADVISOR_SECRET_KEY / the key file changed); register the target "
                             "again") from None


def key_file_for(store_path: str, configured: str | None) -> Path:
    if configured:
        return Path(configured)
    if store_path == ":memory:":
        raise StoreError("an in-memory store has no key file: set ADVISOR_SECRET_KEY")
    if is_postgres(store_path):  # every process sharing the store must encrypt with the same key
        raise StoreError("a PostgreSQL store has no directory for a key file: set ADVISOR_SECRET_KEY (or "
                         "ADVISOR_KEY_FILE), the same for every process that shares the store")
    return Path(store_path).parent / "secret.key"


def load_or_create_key(path: Path) -> bytes:
    """The key in ``path``; a new one written there with mode 0600 when the file does not exist. A key file that
    others can read is refused."""
    if path.exists():
        mode = path.stat().st_mode & 0o777
        if mode & 0o077:
            raise StoreError(f"the key file {path} is readable by others (mode {mode:o}); chmod 600 it")
        return path.read_bytes().strip()
    path.parent.mkdir(parents=True, exist_ok=True)
    key = Fernet.generate_key()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(key + b"\n")
    return key


def vault_for(store_path: str) -> Vault:
    from advisor.core.settings import get_settings

    settings = get_settings()
    if settings.secret_key is not None:
        return Vault(settings.secret_key.get_secret_value().encode())
    return Vault(load_or_create_key(key_file_for(store_path, settings.key_file)))
