"""Run the whole of Marquee on one machine with one command.

Order of start: MongoDB (embedded unless MONGODB_URI), Django migrations,
Mongo indexes, django-q2 schedules, demo data on a first run, then the
qcluster and the web server as child processes. While they run, the
embedded server is supervised: if it dies it is restarted on the same data
and port (config.embedded.Supervisor), and pages answer 503 meanwhile.
Ctrl-C or SIGTERM stops the children first and the database last, so no
worker writes to a closing server, and no process is left behind.
"""

import os
import signal
import subprocess
import sys
import time

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from config import engine, mongo
from config.embedded import EmbeddedServer, Supervisor

# A Unix socket's path may not be longer than this (108 bytes with the NUL).
_SOCKET_PATH_MAX = 100


def control_socket_args(port: int) -> list[str]:
    """gunicorn's control socket in this tree's var/run/, one per port: never
    the machine-wide default (~/.gunicorn/gunicorn.ctl), which every
    gunicorn of the user shares and the first to stop deletes. Off when the
    path would be too long for a Unix socket."""
    path = settings.VAR_DIR / "run" / f"gunicorn-{port}.ctl"
    if len(str(path)) > _SOCKET_PATH_MAX:
        return ["--no-control-socket"]
    path.parent.mkdir(parents=True, exist_ok=True)
    return ["--control-socket", str(path)]


# A demo load cut short (Ctrl-C during a first run) leaves a database that is
# no longer empty, yet holds part of a catalogue and no staff account: the
# mark, set while it loads, has the next start load it again.
_DEMO_MARK = {"_id": "demo_load"}


def _demo_unfinished() -> bool:
    return mongo.db().setup_marks.count_documents(_DEMO_MARK) > 0


def _mark_demo_unfinished(unfinished: bool) -> None:
    marks = mongo.db().setup_marks
    if unfinished:
        marks.replace_one(_DEMO_MARK, _DEMO_MARK, upsert=True)
    else:
        marks.delete_one(_DEMO_MARK)


class Children:
    """Child processes, each in its own session so the whole group can be stopped."""

    def __init__(self, log=print):
        self.procs: dict[str, subprocess.Popen] = {}
        self.log = log

    def spawn(self, name: str, args: list[str], env: dict) -> None:
        self.procs[name] = subprocess.Popen(
            args,
            env=env,
            cwd=settings.BASE_DIR,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )

    def first_exited(self) -> tuple[str, int] | None:
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                return name, proc.returncode
        return None

    def stop(self, timeout: float = 15.0) -> None:
        # Each child is asked, not its group: gunicorn's master and
        # django-q2's cluster stop their own workers. A cluster whose
        # processes all get the signal at once hangs (its sentinel dies
        # with a lock the cluster then waits on) until it is killed, its
        # running job with it.
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.terminate()
        for name, proc in self.procs.items():
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.log(f"{name} did not stop within {timeout:g} s: killed")
                _signal_group(proc, signal.SIGKILL)
                proc.wait()
        # A group may outlive its leader (qcluster's workers): sweep it.
        for proc in self.procs.values():
            _signal_group(proc, signal.SIGKILL)


def _interrupt(signum, frame):
    """Stop, once. Further signals are ignored from here on: one SIGTERM to
    ``make run``'s process group reaches serve twice (directly, and again
    from make, which passes it on to its child), and a second interrupt in
    the middle of the clean-up would cut it short with a second traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise KeyboardInterrupt


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass


class Command(BaseCommand):
    help = "Start MongoDB (embedded unless MONGODB_URI), qcluster and the web server."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument(
            "--dev", action="store_true", help="runserver with autoreload, DEBUG on"
        )
        parser.add_argument(
            "--workers", type=int, default=2, help="gunicorn worker processes"
        )
        demo = parser.add_mutually_exclusive_group()
        demo.add_argument(
            "--demo", action="store_true", default=None, help="load demo data now"
        )
        demo.add_argument("--no-demo", dest="demo", action="store_false")
        parser.add_argument("--demo-items", type=int, default=1000)
        parser.add_argument(
            "--db-restart-backoff",
            type=float,
            default=0.5,
            help="seconds before the first restart of a dead embedded server "
            "(doubling for each further one)",
        )

    def handle(self, *args, **opts):
        # SIGTERM behaves like Ctrl-C, at any stage, start-up included, so a
        # stop request always runs the clean-up below.
        signal.signal(signal.SIGTERM, _interrupt)
        embedded = None
        supervisor = None
        children = Children(log=self.stderr.write)
        try:
            uri = settings.MONGODB_URI
            if uri is None:
                embedded = self._embedded()
                uri = embedded.start()
                supervisor = Supervisor(
                    embedded, log=self.stderr.write, backoff=opts["db_restart_backoff"]
                )
            mongo.check(uri)
            mongo.connect(uri)
            self._prepare(opts)
            env = {**os.environ, "MONGODB_URI": uri}
            # Links in emails point where this serve answers, unless the
            # deployment names its public address.
            env.setdefault("MARQUEE_SITE_URL", self._site_url(opts))
            if opts["dev"]:
                env["MARQUEE_DEBUG"] = "1"
            children.spawn("qcluster", self._manage("qcluster"), env)
            children.spawn("web", self._web_command(opts), env)
            self.stdout.write(
                f"Marquee is serving on http://{opts['host']}:{opts['port']}/ "
                "(Ctrl-C stops it)"
            )
            self.stdout.flush()
            while (exited := children.first_exited()) is None:
                if supervisor is not None:
                    supervisor.check()
                time.sleep(0.5)
            raise CommandError(f"{exited[0]} exited with code {exited[1]}")
        except KeyboardInterrupt:
            self.stdout.write("stopping Marquee")
        except mongo.MongoUnavailable as exc:
            raise CommandError(str(exc)) from None
        finally:
            # A second Ctrl-C must not cut the clean-up short.
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            children.stop()
            if embedded is not None:
                embedded.stop()
        self.stdout.write("Marquee stopped")

    def _embedded(self) -> EmbeddedServer:
        """The embedded server the chosen engine runs (not started yet)."""
        chosen = engine.resolve()
        if chosen.fallback_reason:
            self.stderr.write(chosen.fallback_reason)
        embedded = EmbeddedServer(
            settings.MONGO_EMBEDDED_DIR,
            settings.MONGO_EMBEDDED_LOG,
            engine=chosen,
            cache_size=settings.MONGO_EMBEDDED_CACHE,
        )
        self.stdout.write(
            f"starting embedded MongoDB (SecantusDB, {chosen.name} server) "
            f"in {embedded.data_dir}"
        )
        return embedded

    def _prepare(self, opts) -> None:
        quiet = {"verbosity": 0}
        # Read before anything writes: the conversions may record a fact even
        # in an empty database (the sales counters' time zone), and a first
        # run must still get its demo data and staff account.
        first_run = mongo.is_empty()
        call_command("migrate", interactive=False, **quiet)
        call_command("mongo_setup", **quiet)
        call_command("convert_data", **quiet)
        call_command("setup_schedules", **quiet)
        demo = opts["demo"]
        unfinished = _demo_unfinished()
        if demo or (demo is None and (first_run or unfinished)):
            _mark_demo_unfinished(True)
            self.stdout.write(
                "loading demo data"
                + (" (the last start stopped before it was done)" if unfinished else "")
            )
            call_command("load_demo", items=opts["demo_items"])
            _mark_demo_unfinished(False)
        if not opts["dev"]:
            call_command("collectstatic", interactive=False, **quiet)

    @staticmethod
    def _site_url(opts) -> str:
        host = opts["host"]
        if host in ("0.0.0.0", "::", ""):
            host = "127.0.0.1"  # every interface: this machine's own name
        elif ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{opts['port']}"

    @staticmethod
    def _manage(*args: str) -> list[str]:
        return [sys.executable, str(settings.BASE_DIR / "manage.py"), *args]

    def _web_command(self, opts) -> list[str]:
        address = f"{opts['host']}:{opts['port']}"
        if opts["dev"]:
            return self._manage("runserver", address)
        return [
            sys.executable,
            "-m",
            "gunicorn",
            "config.wsgi:application",
            "--config",
            "python:config.gunicorn",
            "--bind",
            address,
            "--workers",
            str(opts["workers"]),
            *control_socket_args(opts["port"]),
        ]
