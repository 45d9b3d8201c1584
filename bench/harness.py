"""The open-loop load generator: worker processes, thread pools, one timeline.

Arrivals are scheduled, not reactive: user ``i`` of a run at ``rate`` users/s
is due at ``t0 + i / rate`` whatever happened to the users before it, as the
seed's simulator schedules them ("linear", sliced over each second). A flow's
latency runs from its *due* time to its confirmed order, so time spent waiting
for a free thread or connection counts: a slow system cannot hide its queue by
slowing the arrivals down (no coordinated omission).

Arrivals are dealt round-robin to ``processes`` worker processes (Python's GIL
makes a threads-only generator measure itself), each dispatching its share
into a pool of ``threads`` threads over one MongoClient of ``pool``
connections, like the simulator's 4 processes with pool 50. All processes read
the same clock (CLOCK_MONOTONIC is system-wide on Linux) and the same ``t0``.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import random
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from pymongo import MongoClient
from pymongo.errors import PyMongoError

from bench import dbserver, levels, monitor
from bench.levels import Check, Outcome
from bench.scenarios import CartParams, Scenario, TheaterParams
from bench.stats import Summary, summarize

# A worker that has not reported ready by then is considered dead.
READY_TIMEOUT_S = 120
# Head start between "all workers ready" and the first arrival.
LEAD_S = 0.25
# Keep the first few error messages of a run to print them.
ERROR_SAMPLES = 5


@dataclass(frozen=True)
class RunSpec:
    """One load run: a scenario's data and an arrival schedule."""

    scenario: Scenario
    params: CartParams | TheaterParams
    rate: float
    duration: float
    seed: int = 1

    @property
    def users(self) -> int:
        return max(1, round(self.rate * self.duration))

    def offset(self, user: int) -> float:
        """Seconds after the run's start at which ``user`` arrives."""
        return user / self.rate

    def rng(self, user: int) -> random.Random:
        """The user's own random choices: the same whichever process runs it."""
        return random.Random(self.seed * 1_000_003 + user)


@dataclass(frozen=True)
class Shape:
    """How the load generator is built."""

    processes: int = 2
    threads: int = 50
    pool: int = 50
    # Count every command of every flow in the load workers (a pymongo
    # command listener). Off, only the probe is counted and the server's
    # opcounters give the operations per flow: the listener's events cost the
    # measured processes CPU of their own (bench/RESULTS.md, "The command
    # counter in the load").
    count_flows: bool = True


class FlowContext:
    """What a level's ``user_flow`` and ``probe`` get besides their rng."""

    def __init__(self, db, run: RunSpec, user: int, tally: monitor.Tally, fanout):
        # ``db`` is whatever the level's ``connect`` returned in this process.
        self.db = db
        self.run = run
        self.user = user
        self.tally = tally
        self._fanout: ThreadPoolExecutor | None = fanout

    def action(self, name: str):
        """Count the commands issued inside as one ``name`` action."""
        return monitor.action(name)

    def parallel(self, calls: list[Callable[[], object]]) -> list[object]:
        """Run ``calls`` concurrently (as the simulator adds items); their results.

        Each runs on the process's fan-out pool with this flow's tally bound,
        so its commands still count for this flow.
        """
        if self._fanout is None or len(calls) < 2:
            return [call() for call in calls]
        futures = [self._fanout.submit(self._bound, call) for call in calls]
        return [future.result() for future in futures]

    def _bound(self, call: Callable[[], object]) -> object:
        with monitor.bound(self.tally):
            return call()


@dataclass
class Recording:
    """What one process saw; merged across processes into a ``RunResult``."""

    latencies: list[float] = field(default_factory=list)
    kinds: Counter = field(default_factory=Counter)
    got: Counter = field(default_factory=Counter)
    ops: Counter = field(default_factory=Counter)
    actions: dict[str, Counter] = field(default_factory=dict)
    # How late flows started running after their due time (thread queueing).
    start_lags: list[float] = field(default_factory=list)
    # When each confirmed order came, in seconds after the first arrival.
    completions: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    last_end: float = 0.0
    peak_kib: int | None = None
    # CPU seconds the worker processes spent during the load, all threads.
    cpu_s: float = 0.0

    def merge(self, other: Recording) -> None:
        self.latencies += other.latencies
        self.kinds.update(other.kinds)
        self.got.update(other.got)
        self.ops.update(other.ops)
        for name, counts in other.actions.items():
            self.actions.setdefault(name, Counter()).update(counts)
        self.start_lags += other.start_lags
        self.completions += other.completions
        self.errors += other.errors[: max(0, ERROR_SAMPLES - len(self.errors))]
        self.last_end = max(self.last_end, other.last_end)
        self.cpu_s += other.cpu_s
        if other.peak_kib is not None:
            self.peak_kib = max(self.peak_kib or 0, other.peak_kib)


@dataclass
class RunResult:
    level: str
    run: RunSpec
    shape: Shape
    runtime_s: float
    latency: Summary | None
    recording: Recording
    probe_actions: dict[str, Counter]
    check: Check | None
    setup_s: float
    setup_note: str
    measures: Measures

    @property
    def completed(self) -> int:
        return self.recording.kinds.get("ok", 0)

    @property
    def flows_per_s(self) -> float:
        return self.completed / self.runtime_s if self.runtime_s > 0 else 0.0

    @property
    def db_peak_kib(self) -> int | None:
        return self.measures.db_peak_kib

    @property
    def worker_cpu_share(self) -> float:
        """Share of one core the load workers used, all processes together."""
        return self.recording.cpu_s / (self.runtime_s + LEAD_S)

    @property
    def cpu_per_flow_s(self) -> float | None:
        """CPU seconds per completed flow: the daemon's, the load workers'
        and (http) the web workers' together. Unlike flows/s it does not
        depend on whether a level kept up with the offered rate, so two
        levels compare by it in any hour."""
        m = self.measures
        if not self.completed or m.db_cpu_share is None or m.wall_s is None:
            return None
        shares = m.db_cpu_share + (m.web_cpu_share or 0.0)
        return (shares * m.wall_s + self.recording.cpu_s) / self.completed

    @property
    def errors(self) -> int:
        """Flows that ended in an exception rather than a domain refusal."""
        return sum(n for k, n in self.recording.kinds.items() if k.startswith("error"))

    def actions(self) -> dict[str, Counter]:
        """Commands per action, over the load and the probe together."""
        merged: dict[str, Counter] = {}
        for source in (self.recording.actions, self.probe_actions):
            for name, counts in source.items():
                merged.setdefault(name, Counter()).update(counts)
        return merged


@dataclass(frozen=True)
class Measures:
    """What the parent saw of the database and the machine during the load."""

    # The daemon's resident-set high-water mark over the load alone.
    db_peak_kib: int | None
    # Share of one core the daemon used (1.0 = one core).
    db_cpu_share: float | None
    # Data operations the server counted (serverStatus opcounters).
    server_ops: int | None
    # The machine's 1-minute load average before and after: the machine may
    # be shared, and this says how much.
    load_average: tuple[float, float]
    # Round trips of a bare ``ping`` every PING_EVERY_S: the floor any
    # operation pays on this machine at that moment.
    ping: Summary | None
    # The whole machine's CPU over the load, as shares (busy, idle, stolen
    # by the host for other guests): a run that ran short of CPU says so,
    # and whether its own processes or the host's neighbours took it.
    machine: tuple[float, float, float] | None = None
    # The level's own server processes (web workers), when it has some:
    # the largest one's high-water mark, and their CPU together.
    web_peak_kib: int | None = None
    web_cpu_share: float | None = None
    # Seconds the shares above were taken over.
    wall_s: float | None = None


PING_EVERY_S = 0.1


class Watch:
    """Measures the daemon and the machine from now until ``stop``."""

    def __init__(self, target: dbserver.Target, web_pids: list[int] = ()):
        self._target = target
        self._web = list(web_pids)
        dbserver.reset_peak_rss(target.pid)
        self._cpu = dbserver.cpu_seconds(target.pid)
        for pid in self._web:
            dbserver.reset_peak_rss(pid)
        self._web_cpu = _cpu_total(self._web)
        self._ops = target.data_ops()
        self._load = os.getloadavg()[0]
        self._machine = dbserver.machine_ticks()
        self._began = time.monotonic()
        self._pings: list[float] = []
        self._stopping = threading.Event()
        self._pinger = threading.Thread(target=self._ping, daemon=True)
        self._pinger.start()

    def _ping(self) -> None:
        client = MongoClient(self._target.uri, serverSelectionTimeoutMS=5000)
        try:
            while not self._stopping.wait(PING_EVERY_S):
                began = time.perf_counter()
                client.admin.command("ping")
                self._pings.append((time.perf_counter() - began) * 1000)
        except PyMongoError:
            pass  # no floor figure then; the load's own figures still stand
        finally:
            client.close()

    def stop(self) -> Measures:
        self._stopping.set()
        self._pinger.join()
        wall = time.monotonic() - self._began
        cpu = dbserver.cpu_seconds(self._target.pid)
        ops = self._target.data_ops()
        web_cpu = _cpu_total(self._web)
        web_peaks = [dbserver.peak_rss_kib(pid) for pid in self._web]
        web_peaks = [kib for kib in web_peaks if kib is not None]
        return Measures(
            db_peak_kib=dbserver.peak_rss_kib(self._target.pid),
            db_cpu_share=None
            if cpu is None or self._cpu is None
            else (cpu - self._cpu) / wall,
            server_ops=None if ops is None or self._ops is None else ops - self._ops,
            load_average=(self._load, os.getloadavg()[0]),
            ping=summarize(self._pings),
            machine=dbserver.machine_shares(self._machine, dbserver.machine_ticks()),
            web_peak_kib=max(web_peaks) if web_peaks else None,
            web_cpu_share=None
            if web_cpu is None or self._web_cpu is None
            else (web_cpu - self._web_cpu) / wall,
            wall_s=wall,
        )


def _cpu_total(pids: list[int]) -> float | None:
    """CPU seconds of these processes together; None when one cannot be read."""
    if not pids:
        return None
    seconds = [dbserver.cpu_seconds(pid) for pid in pids]
    return None if None in seconds else sum(seconds)


# --- Worker processes ----------------------------------------------------


def _worker_main(
    level_name: str,
    run: RunSpec,
    shape: Shape,
    uri: str,
    db_name: str,
    index: int,
    start_at,
    go,
    results,
) -> None:
    try:
        if shape.count_flows:
            monitor.install()
        level = levels.get(level_name)
        workload = level.workloads[run.scenario.name]
        db = level.connect(uri, db_name, shape.pool)
        results.put(("ready", index, None))
        go.wait()
        cpu_before = time.process_time()
        recording = _drive(workload, db, run, shape, index, start_at.value)
        recording.cpu_s = time.process_time() - cpu_before
        recording.peak_kib = dbserver.peak_rss_kib(os.getpid())
        results.put(("done", index, recording))
    except BaseException:
        results.put(("failed", index, traceback.format_exc()))


def _drive(workload, db, run, shape, index, t0) -> Recording:
    """Dispatch this process's arrivals on time; wait for every flow to end."""
    recording = Recording()
    lock = threading.Lock()
    fanout = ThreadPoolExecutor(shape.threads, thread_name_prefix="fanout")
    flows = ThreadPoolExecutor(shape.threads, thread_name_prefix="flow")

    def one_user(user: int, due: float) -> None:
        started = time.monotonic()
        tally = monitor.Tally()
        ctx = FlowContext(db, run, user, tally, fanout)
        error = None
        with monitor.bound(tally):
            try:
                outcome = workload.user_flow(ctx, run.rng(user))
            except Exception as exc:
                outcome = Outcome(kind=f"error: {type(exc).__name__}", got="nothing")
                error = f"user {user}: {type(exc).__name__}: {exc}"
        end = time.monotonic()
        with lock:
            if outcome.completed:
                recording.latencies.append((end - due) * 1000)
                recording.completions.append(end - t0)
            recording.kinds[outcome.kind] += 1
            recording.got[outcome.got or "nothing"] += 1
            if shape.count_flows:
                recording.ops[tally.total] += 1
                monitor.merge_actions(recording.actions, tally)
            recording.start_lags.append((started - due) * 1000)
            if error and len(recording.errors) < ERROR_SAMPLES:
                recording.errors.append(error)
            recording.last_end = max(recording.last_end, end)

    for user in range(index, run.users, shape.processes):
        due = t0 + run.offset(user)
        delay = due - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        flows.submit(one_user, user, due)
    flows.shutdown(wait=True)
    fanout.shutdown(wait=True)
    return recording


# --- The parent ------------------------------------------------------------


def probe(workload, db, run: RunSpec) -> dict[str, Counter]:
    """Run the level's probe once, in this process; commands per action."""
    tally = monitor.Tally()
    ctx = FlowContext(db, run, -1, tally, None)
    with monitor.bound(tally):
        workload.probe(ctx, run.rng(-1))
    actions: dict[str, Counter] = {}
    monitor.merge_actions(actions, tally)
    return actions


def run_level(
    level: levels.Level,
    run: RunSpec,
    shape: Shape,
    target: dbserver.Target,
    *,
    keep_db: bool = False,
    log: Callable[[str], None] = lambda line: None,
) -> RunResult:
    """Set up a fresh database, probe, load it open-loop, check invariants."""
    monitor.install()
    workload = level.workloads[run.scenario.name]
    db_name = dbserver.fresh_name(level.name, run.scenario.name)
    db = level.connect(target.uri, db_name, shape.pool)
    try:
        began = time.monotonic()
        setup_note = workload.setup(db, run)
        setup_s = time.monotonic() - began
        log(f"  {level.name}: {setup_note} ({setup_s:.1f} s)")
        probe_actions = probe(workload, db, run)
        log(
            f"  {level.name}: {run.users} users at {run.rate:g}/s for "
            f"{run.duration:g} s, {shape.processes} processes x {shape.threads} "
            f"threads, pool {shape.pool}, "
            + ("every command counted" if shape.count_flows else "flows uncounted")
        )
        web_pids = level.server_pids(db) if level.server_pids else []
        t0, recording, measures = _load(level, run, shape, target, db_name, web_pids)
        check = workload.check(db, run)
    finally:
        if level.close is not None:
            level.close(db)
        if not keep_db:
            target.drop(db_name)
    runtime = max(recording.last_end - t0, 0.0)
    return RunResult(
        level=level.name,
        run=run,
        shape=shape,
        runtime_s=runtime,
        latency=summarize(recording.latencies),
        recording=recording,
        probe_actions=probe_actions,
        check=check,
        setup_s=setup_s,
        setup_note=setup_note,
        measures=measures,
    )


def _load(level, run, shape, target, db_name, web_pids=()):
    """Start the workers, release them at once; (t0, recording, measures)."""
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    go = context.Event()
    start_at = context.Value("d", 0.0)
    workers = [
        context.Process(
            target=_worker_main,
            args=(
                level.name,
                run,
                shape,
                target.uri,
                db_name,
                i,
                start_at,
                go,
                results,
            ),
            name=f"bench-worker-{i}",
        )
        for i in range(shape.processes)
    ]
    for worker in workers:
        worker.start()
    try:
        _collect(results, workers, "ready", READY_TIMEOUT_S)
        watch = Watch(target, web_pids)
        t0 = time.monotonic() + LEAD_S
        start_at.value = t0
        go.set()
        try:
            recordings = _collect(results, workers, "done", None)
        finally:
            measures = watch.stop()
    except BaseException:
        # The others would wait for "go" (or keep loading) for nothing.
        for worker in workers:
            worker.kill()
        raise
    finally:
        for worker in workers:
            worker.join(timeout=30)
            if worker.is_alive():
                worker.kill()
                worker.join()
    merged = Recording()
    for recording in recordings:
        merged.merge(recording)
    return t0, merged, measures


def _collect(results, workers, wanted: str, timeout: float | None) -> list:
    """One ``wanted`` message per worker; a failed or dead worker aborts the run."""
    got = {}
    deadline = None if timeout is None else time.monotonic() + timeout
    while len(got) < len(workers):
        message = _next_message(results, workers, got)
        if message is None:
            if deadline is not None and time.monotonic() > deadline:
                raise RuntimeError(f"workers not {wanted} within {timeout:.0f} s")
            continue
        kind, index, payload = message
        if kind == "failed":
            raise RuntimeError(f"worker {index} failed:\n{payload}")
        if kind == wanted:
            got[index] = payload
    return [got[i] for i in sorted(got)]


def _next_message(results, workers, got):
    try:
        return results.get(timeout=1.0)
    except queue.Empty:
        pass
    dead = [w.name for i, w in enumerate(workers) if i not in got and not w.is_alive()]
    if not dead:
        return None
    try:
        # A worker may exit right after queueing its last message.
        return results.get(timeout=2.0)
    except queue.Empty:
        raise RuntimeError(f"worker(s) died: {', '.join(dead)}") from None
