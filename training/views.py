"""Run pages: list, launch form, run page with live status, stop / resume / duplicate / delete / merge."""
from __future__ import annotations

from django.contrib import messages
from django.http import Http404, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from curation.models import Pool
from paintapp.lib.exports import export_download_response, export_page, export_request
from paintapp.lib.storage import stored_png_response
from painting.probing import recipe_probe
from painting.selectors import UnknownRecipe, recipe_get, recipe_names
from training import gallery_selectors, selectors, services
from training import metrics as keys
from training.deletion_selectors import resume_redo, run_deletion
from training.export.model import MERGE_PENDING, ModelExportError, merge_request, merge_state
from training.forms import LaunchForm
from training.generation_speeds import generation_speeds
from training.models import Rollout, RolloutTurn, Run, RunExport, SftDataset
from training.stats import run_thirds
from training.trainer.tracking import tracking_places


@require_GET
def runs(request):
    template = "training/runs.html#table" if request.htmx else "training/runs.html"
    return render(request, template, {"runs": selectors.run_list()[:200]})


@require_http_methods(["GET", "POST"])
def launch(request):
    form_kwargs = {"recipe_names": recipe_names(), "default_base_model": services.default_base_model()}
    try:
        initial = selectors.launch_initial(request.GET)
    except (Run.DoesNotExist, SftDataset.DoesNotExist):
        raise Http404("no such run or SFT dataset") from None
    form = LaunchForm(request.POST or None, initial=initial, **form_kwargs)
    if "check" in request.POST:  # the parts table for the chosen recipe (an htmx fragment, or the page)
        context = {"form": form, "seconds_per_rollout": selectors.seconds_per_rollout(),
                   "generation_speeds": generation_speeds(), **_recipe_probe(request.POST)}
        if request.htmx:  # the table only: the button that asked is not swapped
            return render(request, "painting/_recipe_probe.html#parts", context)
        return render(request, "training/launch.html", context)
    probe = None
    if request.method == "POST" and form.is_valid():
        try:
            run = services.run_launch(
                pool=form.cleaned_data["pool"], recipe_name=form.cleaned_data["recipe"],
                base_model=form.cleaned_data["base_model"].strip(), arguments=form.arguments(),
                subjects=form.all_subjects(), seed=form.cleaned_data["seed"], name=form.cleaned_data["name"],
                created_by=request.user, kind=form.cleaned_data["kind"], sft_dataset=form.cleaned_data["sft_dataset"],
                init_run=form.cleaned_data["init_run"],
            )
        except services.LaunchError as exc:
            form.add_error(None, str(exc))
            probe = getattr(exc, "probe", None)  # an unreachable part: its table says which
        else:
            messages.success(request, f"Launched {run.name}. It starts as soon as a train worker is free.")
            return redirect("training:run", run_id=run.id)
    context = {"form": form, "seconds_per_rollout": selectors.seconds_per_rollout(),
               "generation_speeds": generation_speeds(), "probe": probe}
    return render(request, "training/launch.html", context, status=400 if form.errors else 200)


def _recipe_probe(data) -> dict:
    """{"probe": the chosen recipe's parts probed for the chosen pool} or {"probe_error": why not}."""
    try:
        recipe = recipe_get(data.get("recipe", ""))
    except UnknownRecipe as exc:
        return {"probe_error": str(exc)}
    pool_id = data.get("pool", "")
    pool = Pool.objects.filter(pk=pool_id).first() if pool_id.isdigit() else None
    return {"probe": recipe_probe(recipe, pool_id=pool.id if pool else None)}


@require_GET
def run_detail(request, run_id: int):
    run = get_object_or_404(Run.objects.select_related("pool", "created_by"), pk=run_id)
    compared = selectors.runs_to_compare(run, request.GET.getlist("compare"))
    arguments = run.arguments
    context = {
        "run": run,
        "arguments": arguments,
        "keys": keys.TEMPLATE_KEYS,
        # The charts of this run's kind, and of each overlaid run's (an SFT run beside its GRPO run).
        "charts": keys.charts(turns=arguments.turns, trained_here=not run.trained_elsewhere,
                              kinds={run.kind, *(other.kind for other in compared)}),
        "ladder": selectors.warm_start_ladder(run),
        "steps": list(selectors.run_steps(run))[-50:],
        "rollouts": selectors.latest_rollouts(run),
        "compared": compared,
        "compare_choices": selectors.compare_choices(run, selected=compared),
        "compare_sources": [
            {"id": other.id, "label": f"#{other.id} {other.name}"[:40], "url": reverse("training:metrics", args=[other.id])}
            for other in compared
        ],
        "thirds": [(r, run_thirds(r)) for r in [run, *compared]],
        "redo": resume_redo(run) if run.is_resumable else None,
        "time_left": selectors.time_left_s(run),
        "tracking": tracking_places(run),
        "merge": merge_state(run),
        "merge_pending": MERGE_PENDING,
    }
    # A poll gets the header and, out of band, what sits below the curves.
    template = "training/_run_live.html" if request.htmx else "training/run.html"
    return render(request, template, context)


@require_GET
def run_metrics(request, run_id: int):
    """Only the steps after `after`, for the run page's live curves (polled every 2 s)."""
    run = get_object_or_404(Run.objects.only("id", "status", "steps_done", "hyperparameters"), pk=run_id)
    try:
        after = int(request.GET.get("after", 0))
    except ValueError:
        after = 0
    rows = selectors.run_steps(run, after=after).values_list("step", "metrics")
    return JsonResponse({
        "run": run.id,
        "status": run.status,
        "steps_done": run.steps_done,
        "max_steps": run.max_steps,
        "keys": keys.CHART_KEYS,
        "steps": [[step] + [values.get(key) for key in keys.CHART_KEYS] for step, values in rows],
    })


@require_POST
def run_stop(request, run_id: int):
    run = services.run_stop(run=get_object_or_404(Run, pk=run_id))
    messages.info(request, f"Stop requested: {run.name} ends after its current step and keeps its adapter.")
    return redirect("training:run", run_id=run.id)


@require_POST
def run_resume(request, run_id: int):
    """POST: resume; `revisions` is the count of revisions it removes that the page showed."""
    try:
        seen = int(request.POST.get("revisions") or 0)
    except ValueError:
        seen = 0
    try:
        run = services.run_resume(run=get_object_or_404(Run, pk=run_id), revisions_seen=seen)
    except services.LaunchError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Resuming {run.name} from its last checkpoint.")
    return redirect("training:run", run_id=run_id)


@require_http_methods(["GET", "POST"])
def run_delete(request, run_id: int):
    """GET: what deleting the run removes, revisions by curators named. POST: delete it; the
    revisions count the page showed comes back as `revisions` and must still be right."""
    run = get_object_or_404(Run, pk=run_id)
    if request.method == "POST":
        try:
            seen = int(request.POST.get("revisions") or 0)
        except ValueError:
            seen = 0
        try:
            services.run_delete(run=run, revisions_seen=seen)
        except services.LaunchError as exc:
            messages.error(request, str(exc))
            return redirect("training:delete", run_id=run_id)
        messages.success(request, f"Deleted {run.name} with its steps, rollouts and files.")
        return redirect("training:runs")
    return render(request, "training/delete_confirm.html", {"run": run, "deletion": run_deletion(run)})


@require_POST
def run_merge(request, run_id: int):
    """POST: merge the run's adapter into its base model in the run's folder, on the train worker."""
    try:
        merge_request(run=get_object_or_404(Run.objects.select_related("pool"), pk=run_id))
    except ModelExportError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, "Merging the adapter into the base model: it runs on the train worker.")
    return redirect("training:run", run_id=run_id)


@require_GET
def gallery(request, run_id: int):
    """Every rollout of a run: rows per step (newest first) or ranked by reward, filtered."""
    run = get_object_or_404(Run.objects.select_related("pool"), pk=run_id)
    flt = gallery_selectors.GalleryFilter.from_query(request.GET)
    turns = run.arguments.turns
    sorts = gallery_selectors.GALLERY_SORTS if turns > 1 else {
        key: label for key, label in gallery_selectors.GALLERY_SORTS.items() if key not in gallery_selectors.CHAIN_ONLY_SORTS}
    context = {
        "run": run, "filter": flt, "page": gallery_selectors.gallery_page(run, flt), "turns": turns,
        "sorts": sorts, "states": gallery_selectors.GALLERY_STATES, "chains": gallery_selectors.GALLERY_CHAINS,
        "part_names": tuple(keys.PART),
        "keys": keys.TEMPLATE_KEYS,
    }
    template = "training/gallery.html#results" if request.htmx and not request.htmx.boosted else "training/gallery.html"
    return render(request, template, context, status=400 if flt.errors else 200)


@require_http_methods(["GET", "POST"])
def run_export(request, run_id: int):
    """The run as a Hugging Face dataset folder (parquet shards, steps.csv, run.json, card),
    zipped on a score worker: POST asks for it, the page shows it being built, then offers it."""
    run = get_object_or_404(Run, pk=run_id)
    if request.method == "POST":
        export = export_request(RunExport, owner=run, created_by=request.user)
        if not request.htmx:
            return redirect("training:export", run_id=run.id)
    else:
        export = run.exports.first()
    return export_page(
        request, model=RunExport, export=export,
        download_url=reverse("training:export-download", args=[run.id, export.pk]) if export else "",
        title=run.name, kind="run", unit="rollout", back_url=reverse("training:run", args=[run.id]),
        contents="Every rollout with its painting as data/train-*.parquet, steps.csv, run.json and a dataset "
                 "card, zipped. A run still training exports what it has stored so far.",
        command=f"manage.py export_run {run.id} DIR",
    )


@require_GET
def run_export_download(request, run_id: int, export_id: int):
    return export_download_response(get_object_or_404(RunExport, pk=export_id, run_id=run_id))


@require_GET
def rollout_image(request, run_id: int, rollout_id: int):
    rollout = get_object_or_404(Rollout, pk=rollout_id, run_id=run_id)
    if not rollout.png:
        raise Http404("this rollout has no painting")
    return stored_png_response(rollout.png)


@require_GET
def rollout_turn_image(request, run_id: int, rollout_id: int, turn: int):
    """The painting of one turn of a multi-turn rollout's chain."""
    row = get_object_or_404(RolloutTurn.objects.only("png"), rollout_id=rollout_id, rollout__run_id=run_id, turn=turn)
    if not row.png:
        raise Http404("this turn has no painting")
    return stored_png_response(row.png)
