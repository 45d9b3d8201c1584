"""Log filters beside the redaction (config/redact.py)."""

import logging


class RefusalsWithoutTraceback(logging.Filter):
    """A 403 is a permission check doing its job (a shopper on a staff
    page, a role without the right): Django logs it with the
    PermissionDenied's traceback, a screenful per refusal that buries the
    errors worth reading. Its one line stays ("Forbidden (Permission
    denied): /staff/..."), without the traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "status_code", None) == 403:
            record.exc_info = None
            record.exc_text = None
        return True
