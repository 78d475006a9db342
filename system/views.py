from django.shortcuts import render
from django.views.decorators.http import require_GET

from system.selectors import system_status


@require_GET
def system_page(request):
    # The fragment is polled by htmx; the full page renders the same partial once.
    template = "system/system.html#status" if request.htmx else "system/system.html"
    return render(request, template, {"status": system_status()})
