"""The SFT datasets page: build a dataset from the studio's data with each source counted in a
preview, freeze it as a version, look through it and download it; a dataset's page launches an
SFT run on it."""
from __future__ import annotations

from django.contrib import messages
from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods
from django_htmx.http import HttpResponseClientRedirect

from training import services, sft_selectors
from training.forms import SftDatasetForm
from training.models import SftDataset
from training.sft_dataset import SOURCES, build_dataset, jsonl_lines

EXAMPLES_SHOWN = 200


@require_http_methods(["GET", "POST"])
def sft_datasets(request):
    """GET: the frozen datasets and the builder. POST `preview`: the counts each source gives (an
    htmx fragment, or the page); POST `freeze`: the next version of the name, then its page."""
    form = SftDatasetForm(request.POST or None, initial={"pool": request.GET.get("pool")})
    preview, status = None, 200
    if request.method == "POST" and form.is_valid():
        try:
            if "freeze" in request.POST:
                dataset = services.sft_dataset_freeze(name=form.cleaned_data["name"], sources=form.sources(),
                                                      created_by=request.user)
                messages.success(request, f"Froze {dataset.label}: {len(dataset.examples)} examples.")
                if request.htmx:
                    return HttpResponseClientRedirect(reverse("training:sft-dataset", args=[dataset.id]))
                return redirect("training:sft-dataset", dataset_id=dataset.id)
            preview = build_dataset(form.sources())
        except (services.LaunchError, ValueError, FileNotFoundError) as exc:
            form.add_error(None, str(exc))
    if form.errors:
        status = 400
    context = {"form": form, "preview": preview, "sources": SOURCES, "datasets": sft_selectors.sft_datasets()}
    template = "training/sft_datasets.html#builder" if request.htmx else "training/sft_datasets.html"
    return render(request, template, context, status=status)


@require_GET
def sft_dataset(request, dataset_id: int):
    dataset = get_object_or_404(SftDataset.objects.select_related("pool", "created_by"), pk=dataset_id)
    context = {
        "dataset": dataset, "sources": SOURCES, "counts": [(name, dataset.counts.get(name, {})) for name in SOURCES],
        "examples": dataset.examples[:EXAMPLES_SHOWN], "runs": dataset.runs.order_by("-created_at"),
    }
    return render(request, "training/sft_dataset.html", context)


@require_GET
def sft_dataset_download(request, dataset_id: int):
    """The frozen examples as JSON lines (training/sft_dataset.jsonl_lines)."""
    dataset = get_object_or_404(SftDataset, pk=dataset_id)
    response = StreamingHttpResponse(jsonl_lines(dataset.examples), content_type="application/jsonl")
    response["Content-Disposition"] = f'attachment; filename="sft-{dataset.name}-v{dataset.version}.jsonl"'
    return response
