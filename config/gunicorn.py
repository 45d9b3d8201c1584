"""gunicorn settings used by ``manage.py serve``."""

# Each worker imports Django after the fork, so each opens its own MongoDB
# pool (config.mongo connects lazily); no preload, no shared sockets.
preload_app = False
worker_class = "gthread"
threads = 4
graceful_timeout = 10
timeout = 30
accesslog = "-"
access_log_format = '%(h)s "%(r)s" %(s)s %(b)s %(M)sms'
