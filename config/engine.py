"""Which embedded MongoDB-compatible server Marquee runs, and how it is built.

SecantusDB ships two servers over the same WiredTiger on-disk format, so one
data directory can be opened by either:

* ``rust`` (the default): ``secantusd-rs`` from the crate ``secantus-mdb``,
  multi-threaded, close to mongod's speed. It is compiled from crates.io
  once per machine (a few minutes) into a per-user cache outside the clone,
  so a fresh clone, CI and every later run reuse it.
* ``python``: ``secantusd-py`` from the ``secantusdb`` wheel, installed with
  Marquee's Python packages. Several times slower (bench/RESULTS.md); the
  fallback when there is no Rust toolchain, and a second conformance target
  for the tests.

``MARQUEE_DB_ENGINE`` chooses; ``MONGODB_URI`` overrides both (no embedded
server is started at all). This module is the one place that knows the
pinned versions, the cache path and the build command.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

# The crate version whose on-disk format matches the pinned ``secantusdb``
# wheel (pyproject.toml): the wheel's metadata names this build. Move both
# together.
RUST_CRATE = "secantus-mdb"
RUST_VERSION = "0.5.3-beta.193"
RUST_BINARY = "secantusd-rs"
PYTHON_BINARY = "secantusd-py"
ENGINES = ("rust", "python")

# Debian packages the crate's build needs besides gcc (WiredTiger is
# compiled from its bundled C source with CMake; zlib is linked in).
BUILD_PACKAGES = {"cmake": "cmake", "/usr/include/zlib.h": "zlib1g-dev"}

HOW_TO_GET_RUST = (
    "install Rust (https://rustup.rs) and run `make run` again, "
    "or set MARQUEE_DB_ENGINE=python to choose the slow server on purpose"
)


def cache_dir() -> Path:
    """Where the Rust server is installed: per user, per version, outside
    every clone, so it is built once per machine."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "marquee" / f"{RUST_CRATE}-{RUST_VERSION}"


def rust_executable() -> Path:
    return cache_dir() / "bin" / RUST_BINARY


def python_executable() -> str | None:
    # Installed beside the interpreter running Marquee (the virtualenv).
    candidate = Path(sys.executable).with_name(PYTHON_BINARY)
    return str(candidate) if candidate.exists() else shutil.which(PYTHON_BINARY)


@dataclass(frozen=True)
class Engine:
    """The server to start: its name, its executable, and, when it is not
    the one asked for, the one line that says why."""

    name: str
    executable: str | None
    fallback_reason: str | None = None


def resolve(requested: str | None = None) -> Engine:
    """The embedded server to run for ``requested`` (default: the setting).

    Asking for ``rust`` when it has not been built falls back to the Python
    server with a reason a person can act on; nothing is built here (that
    is ``ensure_engine``'s job, run by ``make``), so starting a test session
    or ``serve`` never blocks on a compiler.
    """
    requested = requested or settings.MARQUEE_DB_ENGINE
    if requested == "rust":
        executable = rust_executable()
        if executable.exists():
            return Engine("rust", str(executable))
        why = (
            "no Rust toolchain (cargo) on this machine"
            if shutil.which("cargo") is None
            else "it is not built yet (`python manage.py ensure_engine` builds it)"
        )
        reason = (
            "Using SecantusDB's Python server, several times slower: the Rust "
            f"server is not available ({why}); {HOW_TO_GET_RUST}."
        )
        return Engine("python", python_executable(), fallback_reason=reason)
    return Engine("python", python_executable())


def missing_build_packages() -> list[str]:
    """Debian packages the Rust build needs that this machine lacks."""
    missing = []
    for probe, package in BUILD_PACKAGES.items():
        found = Path(probe).exists() if probe.startswith("/") else shutil.which(probe)
        if not found:
            missing.append(package)
    return missing


def build_command() -> list[str]:
    """``cargo install`` of the pinned crate into the cache.

    ``--locked`` builds exactly the dependency versions the crate was
    published with. ``--ignore-rust-version``: the crate declares a newer
    minimum rustc than some stable toolchains ship, yet builds with them;
    a real incompatibility still fails the build with the compiler's error.
    """
    return [
        "cargo",
        "install",
        "--locked",
        "--ignore-rust-version",
        RUST_CRATE,
        "--version",
        f"={RUST_VERSION}",
        "--root",
        str(cache_dir()),
    ]


def build() -> subprocess.CompletedProcess:
    """Run the build, cargo's own progress going to this process's output."""
    cache_dir().mkdir(parents=True, exist_ok=True)
    return subprocess.run(build_command(), check=False)
