from django.shortcuts import render
from django.views.decorators.http import require_GET

from system.selectors import base_models_in_use, system_status


@require_GET
def system_page(request):
    # The fragment is polled by htmx; the full page renders the same partial once, and the
    # base models (their configs are read from disk) only then.
    if request.htmx:
        return render(request, "system/system.html#status", {"status": system_status()})
    return render(request, "system/system.html", {"status": system_status(), "base_models": base_models_in_use()})
