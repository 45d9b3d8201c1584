"""The key Django signs with: from the environment, or generated once per
installation and kept under ``var/`` (mode 0600), as self-hosted apps do.

Never a key that is public in the repository: ``DEV_SECRET_KEY`` is named
here only so the system check (``accounts/checks.py``) can refuse it.
"""

import os
import secrets
from pathlib import Path

# The key Marquee once shipped with. It is public: a deployment using it
# could have its sessions, password-reset links and messages forged.
DEV_SECRET_KEY = "marquee-dev-only-secret-key-change-me-in-production"
KEY_FILE = "secret_key"


def secret_key(var_dir: Path) -> str:
    """``DJANGO_SECRET_KEY``, else the installation's own key under
    ``var_dir``, made on first use (written to a private temporary file,
    then linked into place: concurrent first runs agree on one key)."""
    configured = os.environ.get("DJANGO_SECRET_KEY", "").strip()
    if configured:
        return configured
    path = var_dir / KEY_FILE
    if not path.exists():
        var_dir.mkdir(parents=True, exist_ok=True)
        temporary = var_dir / f".{KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(secrets.token_urlsafe(50))
        try:
            os.link(temporary, path)  # fails if another process won
        except FileExistsError:
            pass
        finally:
            temporary.unlink()
    return path.read_text().strip()
