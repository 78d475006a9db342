from django.shortcuts import render
from django.views.decorators.http import require_GET


@require_GET
def pools(request):
    return render(request, "curation/pools.html", {})
