"""Real processes for the cart's race and crash tests.

Each child is forked, makes its own MongoClient (``config.mongo.connect``)
on the test's database, and waits at a Barrier so that all of them start
their work at the same moment. Results come back through a Queue.
"""

import multiprocessing
import queue as queue_module
import traceback

from config import mongo

CTX = multiprocessing.get_context("fork")
# Generous bounds: they only matter if something hangs.
START_TIMEOUT = 60
RUN_TIMEOUT = 120


def _child(index, work, args, uri, db_name, barrier, results):
    try:
        mongo.connect(uri, db=db_name)
        if barrier is not None:
            barrier.wait(timeout=START_TIMEOUT)
        results.put((index, "ok", work(*args)))
    except BaseException as exc:  # reported to the parent, which fails the test
        results.put((index, "error", f"{exc!r}\n{traceback.format_exc()}"))


def run_together(work, args_list, *, uri: str, db_name: str) -> list:
    """Run ``work(*args)`` in one process per args, released together.

    Returns the results in args order; raises if any child failed.
    """
    barrier = CTX.Barrier(len(args_list))
    results = CTX.Queue()
    procs = [
        CTX.Process(target=_child, args=(i, work, args, uri, db_name, barrier, results))
        for i, args in enumerate(args_list)
    ]
    for proc in procs:
        proc.start()
    outcomes = {}
    try:
        for _ in procs:
            index, status, value = results.get(timeout=RUN_TIMEOUT)
            outcomes[index] = (status, value)
    except queue_module.Empty:
        raise AssertionError(f"only {len(outcomes)} of {len(procs)} reported") from None
    finally:
        for proc in procs:
            proc.join(timeout=RUN_TIMEOUT)
            if proc.is_alive():
                proc.kill()
    errors = [value for status, value in outcomes.values() if status == "error"]
    assert not errors, errors[0]
    return [outcomes[i][1] for i in range(len(args_list))]


def run_until_crash(work, args, *, uri: str, db_name: str) -> int:
    """Run ``work(*args)`` in one child process; return its exit code."""
    proc = CTX.Process(
        target=_child, args=(0, work, args, uri, db_name, None, CTX.Queue())
    )
    proc.start()
    proc.join(timeout=RUN_TIMEOUT)
    if proc.is_alive():
        proc.kill()
        raise AssertionError("the child did not finish")
    return proc.exitcode
