"""Log filters beside the redaction (config/redact.py)."""

import logging


class RefusalsWithoutTraceback(logging.Filter):
    """A 403 is a permission check doing its job (a shopper on a staff
    page, a role without the right), a 400 a request's own fault (a Host
    header the site does not answer to, as every scanner of the internet
    sends): Django logs each with its exception's traceback, a screenful
    per refusal that buries the errors worth reading. Its one line stays
    ("Forbidden (Permission denied): /staff/...", "Invalid HTTP_HOST
    header: ..."), without the traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "status_code", None) in (400, 403):
            record.exc_info = None
            record.exc_text = None
        return True
