from django.shortcuts import render
from django.views.decorators.http import require_GET


@require_GET
def runs(request):
    return render(request, "training/runs.html", {})
