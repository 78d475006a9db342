"""Curation pages: the pools list, reference grid, keyboard focus view, bulk grading, the
agreement report and uploads (the pool builder and a pool's pages: curation/pool_views.py)."""
from __future__ import annotations

from django.contrib import messages
from django.core.files.storage import default_storage
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme, urlencode
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from curation import importing, selectors, services
from curation.active import uncertain_first
from curation.agreement import agreement as agreement_report
from curation.forms import GradeViewForm, ReferenceFilterForm
from curation.models import GradeBatch, Pool, Provenance, Reference, Tier
from curation.selectors import GradeView, ReferenceFilter
from curation.thumbs import THUMB_SIZES, thumbnail
from curation.view_params import AGREEMENT_RESAMPLES, GRID_PAGE_SIZE, bad_filter_is_400, grader_of, graders

IMMUTABLE = "private, max-age=31536000, immutable"


def _filter_query(flt: ReferenceFilter, view: GradeView | None = None, **extra) -> str:
    params = flt.to_params() | (view.to_params() if view else {}) | {k: v for k, v in extra.items() if v not in (None, "")}
    return urlencode(params, doseq=True)


BLIND_KEY = "curation_blind"


def _blind(request) -> bool:
    """Whether the signed-in curator grades blind: others' grades hidden on a reference until
    they have graded it. Kept in the session, so every page and endpoint honours it."""
    return bool(request.session.get(BLIND_KEY, False))


def _active_order(request, view: GradeView, queryset):
    """The most-uncertain-first order when the view asks for it (curation.active), else None."""
    return uncertain_first(curator=request.user, queryset=queryset) if view.order == "uncertain" else None


def _in_order(queryset, ids: list[int]) -> list:
    """The queryset's rows with `ids` first in that order, then the rest by id."""
    rank = {ref: i for i, ref in enumerate(ids)}
    return sorted(queryset, key=lambda row: (rank.get(row.id, len(rank)), row.id))


def _with_curator_grades(references, *, viewer, blind: bool):
    """Each reference with `curator_grades`: every curator's tier (hidden where blind says so)."""
    grades = selectors.curator_grades([r.id for r in references], viewer=viewer, blind=blind)
    for reference in references:
        reference.curator_grades = grades[reference.id]
        reference.others_hidden = any(g.tier is None for g in grades[reference.id])
    return references


@require_GET
def pools(request):
    """The home page: whose grades (the signed-in curator's unless another is chosen) and the pools."""
    by_name: dict[str, list[Pool]] = {}
    for pool in Pool.objects.select_related("curator").order_by("name", "-version"):
        by_name.setdefault(pool.name, []).append(pool)
    latest = [(versions[0], versions, selectors.pool_balance(versions[0])) for versions in by_name.values()]
    grader = grader_of(request, request.GET)
    counts = selectors.tier_counts(curator=grader)
    pool_graders = sorted({pool.curator for pool, _, _ in latest} - {grader}, key=lambda user: user.get_username())
    return render(
        request,
        "curation/pools.html#grades" if request.htmx else "curation/pools.html",
        {
            "latest": latest, "counts": counts, "reference_total": counts["all"], "grader": grader,
            "graders": graders(), "pool_graders": pool_graders,
        },
    )


@require_GET
@bad_filter_is_400
def reference_grid(request):
    flt = ReferenceFilterForm(request.GET).reference_filter()
    view = GradeViewForm(request.GET).grade_view()
    grader = grader_of(request, request.GET)
    blind = _blind(request)
    qs = selectors.grade_view_list(curator=grader, viewer=request.user, flt=flt, view=view, blind=blind)
    active = _active_order(request, view, qs) if grader == request.user else None
    rows = _in_order(qs, active.ids) if active and active.ids is not None else qs
    page = Paginator(rows, GRID_PAGE_SIZE).get_page(request.GET.get("page"))
    if view.shows_others:
        _with_curator_grades(page.object_list, viewer=request.user, blind=blind)
    context = {
        "flt": flt,
        "view": view,
        "blind": blind,
        "active": active,
        "grader": grader,
        "graders": graders(),
        "page": page,
        "counts": selectors.tier_counts(curator=grader, flt=flt, view=view, viewer=request.user, blind=blind),
        "disagreement": _disagreement_counts(request, grader, flt, view, blind),
        "subjects": selectors.subjects(),
        "provenances": Provenance.choices,
        "tiers": Tier.choices,
        "query": _filter_query(flt, view, grader=grader.get_username() if grader != request.user else None),
        "result_count": page.paginator.count,
        "last_bulk": selectors.last_bulk_action(request.user),
    }
    template = "curation/grid.html#results" if request.htmx and not request.htmx.boosted else "curation/grid.html"
    return render(request, template, context)


def _disagreement_counts(request, grader, flt: ReferenceFilter, view: GradeView, blind: bool) -> dict:
    """How many references (under the filter's other criteria) the chosen curators disagree on,
    of those two or more of them graded; a blind curator's counts cover what they graded."""
    base = selectors.reference_list(curator=grader, flt=flt.without_tier())
    if blind:
        base = selectors.graded_by(base, request.user)
    return {
        "disagree": selectors.disagreed(base, among=view.among).count(),
        "shared": selectors.shared_count(among=view.among, references=base),
    }


@require_GET
@bad_filter_is_400
def reference_focus(request, reference_id: int):
    flt = ReferenceFilterForm(request.GET).reference_filter()
    view = GradeViewForm(request.GET).grade_view()
    blind = _blind(request)
    reference = get_object_or_404(selectors.with_tier(Reference.objects.all(), request.user), pk=reference_id)
    active = _active_order(request, view, selectors.grade_view_list(
        curator=request.user, viewer=request.user, flt=flt, view=view, blind=blind))
    walk = selectors.focus_walk(curator=request.user, flt=flt, reference_id=reference.id, view=view, blind=blind,
                                order=active.ids if active else None)
    position = walk.ids.index(reference.id)
    if view.shows_others:
        _with_curator_grades([reference], viewer=request.user, blind=blind)
    return render(
        request,
        "curation/focus.html",
        {
            "reference": reference,
            "flt": flt,
            "view": view,
            "blind": blind,
            "active": active,
            "query": _filter_query(flt, view),
            "previous_id": walk.ids[position - 1] if position > 0 else None,
            "next_id": walk.ids[position + 1] if position + 1 < len(walk.ids) else None,
            "ids": walk.ids,
            "graded_ids": walk.graded_ids,
            "position": position + 1,
            "tiers": Tier.choices,
            "history": selectors.grade_history(reference, viewer=request.user, blind=blind),
        },
    )


@require_GET
def reference_history(request, reference_id: int):
    """The focus view's grade history of one reference (the focus view swaps it in as it walks)."""
    reference = get_object_or_404(Reference, pk=reference_id)
    history = selectors.grade_history(reference, viewer=request.user, blind=_blind(request))
    return render(request, "curation/focus.html#history", {"reference": reference, "history": history})


@require_GET
def reference_curators(request, reference_id: int):
    """Every curator's grade of one reference (the focus view swaps it in as it walks and after a grade)."""
    reference = get_object_or_404(Reference, pk=reference_id)
    _with_curator_grades([reference], viewer=request.user, blind=_blind(request))
    return render(request, "curation/focus.html#curators", {"reference": reference})


@require_POST
def grading_blind(request):
    """Turn blind grading on or off for the signed-in curator, then back to the page."""
    request.session[BLIND_KEY] = request.POST.get("blind") == "on"
    next_url = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(next_url, allowed_hosts={request.get_host()}):
        next_url = reverse("curation:grid")
    return redirect(next_url)


@require_GET
def reference_details(request):
    """JSON for the focus view's client: the references it is about to show."""
    try:
        ids = [int(i) for i in request.GET.get("ids", "").split(",") if i][:100]
    except ValueError:
        return HttpResponseBadRequest("ids must be comma-separated integers")
    rows = _with_curator_grades(list(selectors.with_tier(Reference.objects.filter(id__in=ids), request.user)),
                                viewer=request.user, blind=_blind(request))
    return JsonResponse({"items": [_reference_json(r) for r in rows]})


def _reference_json(reference: Reference) -> dict:
    return {
        "id": reference.id,
        "tier": reference.tier,
        "curators": [{"curator": g.curator, "tier": g.tier} for g in reference.curator_grades],
        "subject": reference.subject,
        "provenance": reference.get_provenance_display(),
        "width": reference.width,
        "height": reference.height,
        "source": reference.source,
        "seed": reference.seed,
        "image_url": reverse("curation:image", args=[reference.sha256]),
        "focus_url": reverse("curation:focus", args=[reference.id]),
    }


@require_POST
def reference_grade(request, reference_id: int):
    """Set or clear a grade. JSON for the focus view's client; a redirect for plain forms."""
    reference = get_object_or_404(Reference, pk=reference_id)
    tier = request.POST.get("tier", "")
    source = request.POST.get("source", "ui")
    if source not in {"ui", "keyboard", "undo", "grid"}:
        source = "ui"
    try:
        grade = services.grade_set(
            reference=reference, curator=request.user, tier=None if tier == "none" else tier, source=source
        )
    except services.CurationError as exc:
        if _wants_json(request):
            return JsonResponse({"error": str(exc)}, status=400)
        messages.error(request, str(exc))
        return redirect(reverse("curation:focus", args=[reference.id]))
    if _wants_json(request):
        return JsonResponse({"id": reference.id, "tier": grade.tier if grade else None, "saved": True})
    if request.htmx:  # the grid's card, now showing the others' grades a blind curator may see
        reference.tier = grade.tier if grade else None
        _with_curator_grades([reference], viewer=request.user, blind=_blind(request))
        response = render(request, "curation/grid.html#card", {
            "reference": reference, "query": request.POST.get("query", ""), "grader": request.user,
            "view": GradeView(show="all"), "tiers": Tier.choices, "next_url": request.POST.get("next", ""),
        })
        response["HX-Trigger"] = "grades-changed"  # the grid refreshes its counts
        return response
    next_url = request.POST.get("next") or reverse("curation:focus", args=[reference.id])
    if not url_has_allowed_host_and_scheme(next_url, allowed_hosts={request.get_host()}):
        next_url = reverse("curation:focus", args=[reference.id])
    return redirect(next_url)


def _wants_json(request) -> bool:
    return "application/json" in request.headers.get("Accept", "")


@require_http_methods(["GET", "POST"])
@bad_filter_is_400
def bulk_grade(request):
    """Grade the whole server-side filter result, after a confirmation that shows the count."""
    params = request.POST if request.method == "POST" else request.GET
    flt = ReferenceFilterForm(params).reference_filter()
    tier = params.get("bulk_tier", "")
    count = selectors.reference_list(curator=request.user, flt=flt).count()
    label = dict(Tier.choices).get(tier, "ungraded" if tier == "none" else None)
    if label is None:
        messages.error(request, "Choose a tier for the bulk action.")
        return redirect(f"{reverse('curation:grid')}?{_filter_query(flt)}")
    confirmed = request.method == "POST" and params.get("confirm_count") == str(count)
    if request.method == "POST" and confirmed:
        batch = services.grade_bulk(curator=request.user, flt=flt, tier=None if tier == "none" else tier)
        messages.success(
            request,
            f"Graded {batch.changed} reference{pluralize(batch.changed)} as {label.lower()} "
            f"({batch.matched - batch.changed} already were). Undo it above the results.",
        )
        return redirect(f"{reverse('curation:grid')}?{_filter_query(flt)}")
    stale = request.method == "POST" and not confirmed
    return render(
        request,
        "curation/bulk_confirm.html",
        {"flt": flt, "tier": tier, "label": label, "count": count, "query": _filter_query(flt), "stale": stale},
    )


@require_POST
def bulk_undo(request, batch_id: int):
    """Put back the grades one bulk action replaced (grades changed since are kept)."""
    batch = get_object_or_404(GradeBatch, pk=batch_id, curator=request.user)
    try:
        undone = services.grade_bulk_undo(batch=batch, curator=request.user)
    except services.CurationError as exc:
        messages.error(request, str(exc))
    else:
        text = f"Undid the bulk action: {undone.restored} grade{pluralize(undone.restored)} put back as they were."
        if undone.kept:
            text += f" {undone.kept} changed again since then {pluralize(undone.kept, 'was,were')} kept."
        messages.success(request, text)
    next_url = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(next_url, allowed_hosts={request.get_host()}):
        next_url = reverse("curation:grid")
    return redirect(next_url)


@require_GET
def image(request, sha256: str):
    reference = get_object_or_404(Reference, sha256=sha256)
    size = request.GET.get("thumb")
    if size:
        if not size.isdigit() or int(size) not in THUMB_SIZES:
            raise Http404("unknown thumbnail size")
        response = HttpResponse(thumbnail(reference.image, reference.sha256, int(size)), content_type="image/webp")
    else:
        with default_storage.open(reference.image, "rb") as fh:
            response = HttpResponse(fh.read(), content_type="image/png")
    response["Cache-Control"] = IMMUTABLE  # the URL names the content
    return response




@require_GET
def agreement(request):
    """Agreement between curators on all references, a subject's or a pool's members: the
    pairs (percent, kappa, confusion tables), alpha over all of them, and per subject."""
    subject = request.GET.get("subject", "").strip()
    pool_label = request.GET.get("pool", "").strip()
    chosen = list(dict.fromkeys(name for name in request.GET.getlist("curator") if name.strip()))
    context = {
        "subject": subject, "pool_label": pool_label, "chosen": chosen, "graders": graders(),
        "subjects": selectors.subjects(), "pools": Pool.objects.order_by("name", "-version"), "error": "",
    }
    try:
        pool = selectors.pool_get(pool_label) if pool_label else None
        scope = selectors.agreement_input(subject=subject, pool=pool, curators=chosen or None)
    except (Pool.DoesNotExist, ValueError):
        context["error"] = f"No pool {pool_label!r}: choose one as name:vN from the list."
    except selectors.UnknownCurator as exc:
        context["error"] = f"{str(exc).capitalize()}: choose from the curators listed."
    else:
        context |= {"scope": scope, "report": agreement_report(
            scope.grades, scope.subjects, resamples=AGREEMENT_RESAMPLES, seed=0)}
    template = "curation/agreement.html#agreement" if request.htmx and not request.htmx.boosted else "curation/agreement.html"
    return render(request, template, context, status=400 if context["error"] else 200)


MAX_UPLOAD_BYTES = 512 * 1024 * 1024


@require_http_methods(["GET", "POST"])
def upload(request):
    """Upload images and/or zips (drag and drop); every file gets a row in the report."""
    report, error = None, ""
    if request.method == "POST":
        files = request.FILES.getlist("files")
        total = sum(f.size for f in files)
        if not files:
            error = "Choose or drop at least one image or zip."
        elif total > MAX_UPLOAD_BYTES:
            error = f"That is {total / 2**20:.0f} MB; upload at most {MAX_UPLOAD_BYTES // 2**20} MB at a time, or use manage.py import_refs."
        else:
            report = importing.import_uploads(
                [(f.name, f.read()) for f in files],
                curator=request.user,
                subject=request.POST.get("subject", "").strip()[:120],
            )
            if report.nothing_importable:
                error = (
                    f"Nothing importable: none of the {len(report.rows)} file{pluralize(len(report.rows))} listed "
                    "below is an image that could be stored."
                    if report.rows else "Nothing importable: the upload held no file to read."
                )
    template = "curation/upload.html#report" if request.htmx and request.method == "POST" else "curation/upload.html"
    # An error answers 400 (no file, too big) or 422 (read, but nothing importable); the page's
    # script swaps either into the report, so the message always reaches the curator.
    status = (422 if report is not None else 400) if error else 200
    return render(
        request, template, {"report": report, "error": error, "subjects": selectors.subjects()}, status=status,
    )
