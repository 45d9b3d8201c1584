"""gunicorn settings used by ``manage.py serve``."""

import os

from gunicorn.glogging import Logger

from config.redact import redact_args, redact_path, redact_request_line, redact_url

# A page waits at most half a second for a MongoDB server to answer before
# it says "back in a moment" (503, config.middleware), rather than the five
# seconds a job or a command may wait. Set MONGODB_TIMEOUT_MS to choose.
os.environ.setdefault("MONGODB_TIMEOUT_MS", "500")

# Each worker imports Django after the fork, so each opens its own MongoDB
# pool (config.mongo connects lazily); no preload, no shared sockets.
preload_app = False
worker_class = "gthread"
threads = 4
graceful_timeout = 10
timeout = 30
accesslog = "-"
access_log_format = '%(h)s "%(r)s" %(s)s %(b)s %(M)sms'


class AccessLog(Logger):
    """gunicorn's logger, with the secrets of links (an order's, a password
    reset's) hidden (config.redact): in the access log's request line, path
    and referrer (a page opened from an order's link names it), and in the
    error log's "Error handling request <uri>"."""

    def atoms(self, resp, req, environ, request_time):
        atoms = super().atoms(resp, req, environ, request_time)
        atoms["r"] = redact_request_line(atoms["r"])
        atoms["U"] = redact_path(atoms["U"] or "")
        atoms["f"] = redact_url(atoms["f"])
        for name in ("{raw_uri}e", "{path_info}e", "{http_referer}e"):
            if atoms.get(name):
                atoms[name] = redact_url(atoms[name])
        return atoms

    def error(self, msg, *args, **kwargs):
        super().error(msg, *redact_args(args), **kwargs)

    def exception(self, msg, *args, **kwargs):
        super().exception(msg, *redact_args(args), **kwargs)


logger_class = AccessLog


def post_worker_init(worker):
    """Connect to MongoDB before taking requests: a page's wait for a server
    is short (above), a worker's first connection on a busy machine may not
    be."""
    from config import mongo

    mongo.warm_up()


def worker_exit(server, worker):
    """Write out the activity events this worker still queues (the log's
    batching writer loses at most the last second only to a hard crash) and
    announce the payments it holds (else the reconciler would, later), and
    release the claims of the carts it completed."""
    from activity.services.writer import shutdown
    from shop.services import settle, tidy

    shutdown()
    settle.shutdown()
    tidy.shutdown()
