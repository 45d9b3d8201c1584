"""What every app's views share: the typed request, one page-or-partial
render, and the one path from a refusal (a DomainError) to a response.

A view parses its input with a form, calls one selector or service and
renders. It does not catch the service's refusal: ``answers_refusals``
hands it to the app's answer (a toast, a redirect with a message, a
problem page), and an answer that means "no such thing" raises Http404.
"""

from collections.abc import Callable
from functools import wraps

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.cache import patch_vary_headers
from django_htmx.middleware import HtmxDetails

from config.errors import DomainError, InvalidInput

Answer = Callable[..., HttpResponse]


class HtmxHttpRequest(HttpRequest):
    """A request as django-htmx's middleware leaves it (for type checkers)."""

    htmx: HtmxDetails


def answers_refusals(answer: Answer):
    """Decorate a view: a DomainError it raises becomes
    ``answer(request, exc, *args, **kwargs)``, the app's one way to say no.

    The view's own arguments are passed on, so the answer can redraw the
    page the request came from.
    """

    def decorate(view):
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            try:
                return view(request, *args, **kwargs)
            except DomainError as exc:
                return answer(request, exc, *args, **kwargs)

        return wrapper

    return decorate


def not_found(exc: DomainError) -> Http404:
    """The Http404 for a refusal that means the thing does not exist."""
    return Http404(exc.message)


def valid(form):
    """The form, validated; InvalidInput (its first error) when it is not."""
    if not form.is_valid():
        raise InvalidInput(first_error(form))
    return form


def first_error(form) -> str:
    """The form's first error, as a toast says it: a message the form gave
    the field itself (``error_messages=``) as it is; any other (Django's
    "This field is required.", a validator's bound, one added in ``clean``)
    after the field's label, so the toast says which field it is about."""
    for name, errors in form.errors.items():
        message = errors[0]
        field = form.fields.get(name)
        if field is None or not field.label or message in _written_for(field):
            return message
        return f"{field.label}: {message}"
    return InvalidInput.message


def _written_for(field) -> set[str]:
    """The messages a form gave this field itself (``error_messages=``),
    not the defaults of its class."""
    defaults: dict = {}
    for cls in reversed(type(field).__mro__):
        defaults.update(getattr(cls, "default_error_messages", {}))
    return {
        str(text)
        for key, text in field.error_messages.items()
        if str(text) != str(defaults.get(key))
    }


def wants_partial(request: HttpRequest) -> bool:
    """An htmx swap wants the partial; a history restore (the back button
    with a cold cache) wants the whole page."""
    htmx = getattr(request, "htmx", None)
    return bool(htmx) and not htmx.history_restore_request


def render_page_or_partial(
    request: HttpRequest,
    template: str,
    partial: str,
    context: dict,
    *,
    status: int = 200,
    as_partial: bool | None = None,
    vary: bool = False,
) -> HttpResponse:
    """The ``partial`` of ``template`` or the whole page.

    ``as_partial`` None: as ``wants_partial`` says. ``vary``: the same URL
    answers with a page or a fragment, so caches must tell them apart.
    """
    if as_partial is None:
        as_partial = wants_partial(request)
    name = f"{template}#{partial}" if as_partial else template
    response = render(request, name, context, status=status)
    if vary:
        patch_vary_headers(response, ["HX-Request"])
    return response
