"""Build the embedded Rust server once per machine, when it is the one asked for.

``make run`` and ``make test`` call this before anything starts. It does
nothing when ``MONGODB_URI`` is set, when the Python server was chosen, or
when the pinned build is already in the cache; otherwise it installs what
the build needs from Debian (as root; else it says the one command to run)
and runs ``cargo install`` with cargo's own progress on the terminal. It
never fails the caller: without cargo, or when the build fails, Marquee
runs on the Python server and says so in one line.
"""

import os
import shutil
import subprocess

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from config import engine


class Command(BaseCommand):
    help = "Build SecantusDB's Rust server into the per-user cache if it is missing."

    def add_arguments(self, parser):
        parser.add_argument(
            "--require",
            action="store_true",
            help="exit 1 unless the Rust server is built (CI: test the default "
            "server, never the fallback by accident)",
        )

    def handle(self, *args, **opts):
        if settings.MONGODB_URI or settings.MARQUEE_DB_ENGINE != "rust":
            return
        if not engine.rust_executable().exists():
            self._build()
        if opts["require"] and not engine.rust_executable().exists():
            raise CommandError("SecantusDB's Rust server is required but not built.")

    def _build(self) -> None:
        if not self._have_build_tools():
            self.stderr.write(engine.resolve().fallback_reason or "")
            return
        self.stdout.write(
            f"Building SecantusDB's Rust server ({engine.RUST_CRATE} "
            f"{engine.RUST_VERSION}) into {engine.cache_dir()}.\n"
            "This happens once per machine and takes a few minutes; "
            "later runs and fresh clones reuse it."
        )
        self.stdout.flush()
        if engine.build().returncode != 0 or not engine.rust_executable().exists():
            self.stderr.write(
                "The Rust server did not build (cargo's error is above). "
                "Marquee will run on SecantusDB's Python server, several times slower."
            )

    def _have_build_tools(self) -> bool:
        """cargo, plus the Debian packages the C part of the build needs."""
        if shutil.which("cargo") is None:
            return False
        missing = engine.missing_build_packages()
        if not missing:
            return True
        if os.geteuid() != 0:
            self.stderr.write(
                "The Rust server's build needs "
                + ", ".join(missing)
                + f": run 'sudo apt-get install {' '.join(missing)}', then "
                "`make run` again. Using the Python server meanwhile."
            )
            return False
        self.stdout.write(f"Installing {', '.join(missing)} for the Rust build...")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        quiet = {"env": env, "stdout": subprocess.DEVNULL, "check": False}
        subprocess.run(["apt-get", "update", "-qq"], **quiet)
        subprocess.run(["apt-get", "install", "-y", "-qq", *missing], **quiet)
        return not engine.missing_build_packages()
