"""What the curation pages read from a request alike: whose grades to show, the curators who
graded, and a filter that cannot be read answered as a 400."""
from __future__ import annotations

import functools

from django.contrib.auth import get_user_model
from django.http import HttpResponseBadRequest

from curation.forms import FilterError

GRID_PAGE_SIZE = 60  # references (or pool members) on one page of a grid
AGREEMENT_RESAMPLES = 1000  # bootstrap resamples behind each agreement interval


def grader_of(request, params):
    """Whose grades a page shows: the signed-in curator unless another one is chosen."""
    username = (params.get("grader") or "").strip()
    if username and username != request.user.get_username():
        return get_user_model().objects.filter(username=username).first() or request.user
    return request.user


def graders():
    return get_user_model().objects.filter(grades__isnull=False).distinct().order_by("username")


def bad_filter_is_400(view):
    """A view whose filter parameters cannot be read answers 400 with what was wrong."""
    @functools.wraps(view)
    def wrapped(request, *args, **kwargs):
        try:
            return view(request, *args, **kwargs)
        except FilterError as exc:
            return HttpResponseBadRequest(str(exc), content_type="text/plain; charset=utf-8")
    return wrapped
