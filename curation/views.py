"""Curation pages: reference grid, keyboard focus view, bulk grading, pool builder, pools."""
from __future__ import annotations

import functools

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.core.files.storage import default_storage
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme, urlencode
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from curation import audit, importing, selectors, services
from curation.active import uncertain_first
from curation.agreement import agreement as agreement_report
from curation.consensus import (
    DEFAULT_LOVE_AT,
    DEFAULT_MIN_GRADERS,
    DEFAULT_OKAY_AT,
    LEFT_OUT,
    RULES,
    ConsensusSettings,
)
from curation.forms import FilterError, GradeViewForm, ReferenceFilterForm
from curation.models import GradeBatch, Pool, PoolExport, Provenance, Reference, Tier
from curation.selectors import GradeView, ReferenceFilter
from curation.thumbs import THUMB_SIZES, thumbnail
from paintapp.lib.exports import export_download_response, export_page, export_request
from paintenv.intervals import FEW_PAIRS
from painting.selectors import UnknownRecipe, default_recipe_name, recipe_names

GRID_PAGE_SIZE = 60
IMMUTABLE = "private, max-age=31536000, immutable"


def _grader(request, params):
    """Whose grades a page shows: the signed-in curator unless another one is chosen."""
    username = (params.get("grader") or "").strip()
    if username and username != request.user.get_username():
        return get_user_model().objects.filter(username=username).first() or request.user
    return request.user


def _graders():
    return get_user_model().objects.filter(grades__isnull=False).distinct().order_by("username")


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


def _bad_filter_is_400(view):
    """A view whose filter parameters cannot be read answers 400 with what was wrong."""
    @functools.wraps(view)
    def wrapped(request, *args, **kwargs):
        try:
            return view(request, *args, **kwargs)
        except FilterError as exc:
            return HttpResponseBadRequest(str(exc), content_type="text/plain; charset=utf-8")
    return wrapped


@require_GET
def pools(request):
    """The home page: whose grades (the signed-in curator's unless another is chosen) and the pools."""
    by_name: dict[str, list[Pool]] = {}
    for pool in Pool.objects.select_related("curator").order_by("name", "-version"):
        by_name.setdefault(pool.name, []).append(pool)
    latest = [(versions[0], versions, selectors.pool_balance(versions[0])) for versions in by_name.values()]
    grader = _grader(request, request.GET)
    counts = selectors.tier_counts(curator=grader)
    pool_graders = sorted({pool.curator for pool, _, _ in latest} - {grader}, key=lambda user: user.get_username())
    return render(
        request,
        "curation/pools.html#grades" if request.htmx else "curation/pools.html",
        {
            "latest": latest, "counts": counts, "reference_total": counts["all"], "grader": grader,
            "graders": _graders(), "pool_graders": pool_graders,
        },
    )


@require_GET
@_bad_filter_is_400
def reference_grid(request):
    flt = ReferenceFilterForm(request.GET).reference_filter()
    view = GradeViewForm(request.GET).grade_view()
    grader = _grader(request, request.GET)
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
        "graders": _graders(),
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
@_bad_filter_is_400
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
@_bad_filter_is_400
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


BUILD_MODES = ("single", "consensus", "per-curator")


def _consensus_settings(params) -> ConsensusSettings:
    """The builder's consensus fields; a field that is not a number is a CurationError."""
    try:
        return ConsensusSettings(
            rule=params.get("rule", "majority"), min_graders=int(params.get("min_graders", DEFAULT_MIN_GRADERS)),
            love_at=float(params.get("love_at", DEFAULT_LOVE_AT)), okay_at=float(params.get("okay_at", DEFAULT_OKAY_AT)),
        )
    except ValueError as exc:
        raise services.CurationError("minimum graders must be a whole number and the thresholds numbers") from exc


@require_http_methods(["GET", "POST"])
@_bad_filter_is_400
def pool_builder(request):
    """One curator's grades, the consensus of several, or one pool per curator: the preview
    shows what a freeze would make (and, for a consensus, what it leaves out and why)."""
    params = request.POST if request.method == "POST" else request.GET
    flt = ReferenceFilterForm(params).reference_filter()
    grader = _grader(request, params)
    tiers = params.getlist("tiers") or [Tier.LOVE, Tier.OKAY]
    mode = params.get("mode") if params.get("mode") in BUILD_MODES else "single"
    form = {
        "name": params.get("name", ""),
        "description": params.get("description", ""),
        "eval_share": params.get("eval_share", "0.2"),
        "seed": params.get("seed", "0"),
        "tiers": tiers,
        "mode": mode,
        "curators": params.getlist("curators"),
        "rule": params.get("rule", "majority"),
        "min_graders": params.get("min_graders", str(DEFAULT_MIN_GRADERS)),
        "love_at": params.get("love_at", str(DEFAULT_LOVE_AT)),
        "okay_at": params.get("okay_at", str(DEFAULT_OKAY_AT)),
    }
    error = ""
    if request.method == "POST":
        try:
            made = _freeze(request, mode=mode, form=form, flt=flt, grader=grader, params=params)
        except (services.CurationError, ValueError) as exc:
            error = str(exc) if isinstance(exc, services.CurationError) else "Eval share must be a number and seed an integer."
        else:
            if len(made) == 1:
                messages.success(request, f"Froze {made[0].label} with {made[0].members.count()} references.")
                return redirect(pool_detail_url(made[0]))
            messages.success(request, "Froze " + ", ".join(
                f"{pool.label} ({pool.members.count()})" for pool in made) + ": one pool per curator.")
            return redirect("curation:pools")
    context = {
        "flt": flt, "form": form, "error": error, "subjects": selectors.subjects(), "provenances": Provenance.choices,
        "tiers": Tier.choices, "grader": grader, "graders": _graders(), "modes": BUILD_MODES, "rules": RULES,
        "existing": Pool.objects.filter(name__iexact=form["name"]).order_by("-version").first() if form["name"] else None,
        **_builder_preview(mode=mode, form=form, flt=flt, grader=grader, params=params),
    }
    template = "curation/builder.html#preview" if request.htmx and request.method == "GET" else "curation/builder.html"
    return render(request, template, context, status=400 if error else 200)


def _freeze(request, *, mode: str, form: dict, flt: ReferenceFilter, grader, params) -> list[Pool]:
    common = {
        "name": form["name"], "tiers": form["tiers"], "flt": flt, "eval_share": float(form["eval_share"]),
        "seed": int(form["seed"]), "description": form["description"], "created_by": request.user,
    }
    if mode == "consensus":
        return [services.pool_freeze_consensus(curators=form["curators"], settings=_consensus_settings(params), **common)]
    if mode == "per-curator":
        return services.pool_freeze_per_curator(curators=form["curators"], **common)
    return [services.pool_freeze(curator=grader, **common)]


def _builder_preview(*, mode: str, form: dict, flt: ReferenceFilter, grader, params) -> dict:
    """{"balance": of what the freeze would hold, "consensus": how it came out, "per_curator":
    [(pool name, balance)], "preview_error": why there is nothing to show}."""
    tiers = form["tiers"]
    if mode == "single":
        rows = selectors.reference_list(curator=grader, flt=flt.without_tier()).filter(tier__in=tiers)
        return {"balance": selectors.balance_of([(t, "", subj) for t, subj in rows.values_list("tier", "subject")])}
    if len(form["curators"]) < (2 if mode == "consensus" else 1):
        return {"balance": selectors.balance_of([]), "preview_error": "Choose the curators (two or more for a consensus)."}
    try:
        scope = selectors.consensus_scope(usernames=form["curators"], flt=flt)
        if mode == "per-curator":
            subjects = dict(Reference.objects.filter(id__in=scope.references).values_list("id", "subject"))
            per_curator = []
            for name, grades in scope.grades.items():
                rows = [(t, "", subjects[ref]) for ref, t in grades.items() if t in tiers]
                per_curator.append((services.per_curator_name(form["name"] or "pool", name), selectors.balance_of(rows)))
            return {"balance": selectors.balance_of([]), "per_curator": per_curator}
        result = services.consensus_of(scope=scope, settings=_consensus_settings(params), tiers=tiers)
    except (selectors.UnknownCurator, services.CurationError) as exc:
        return {"balance": selectors.balance_of([]), "preview_error": str(exc)}
    subjects = dict(Reference.objects.filter(id__in=result.members).values_list("id", "subject"))
    rows = [(o.tier, "", subjects[ref]) for ref, o in result.members.items()]
    left_out = [(LEFT_OUT[reason], n, reason) for reason, n in result.left_out.items()]
    return {"balance": selectors.balance_of(rows), "consensus": result, "left_out": left_out}


def pool_detail_url(pool: Pool) -> str:
    return reverse("curation:pool", args=[pool.name, pool.version])


@require_GET
def pool_detail(request, name: str, version: int):
    pool = get_object_or_404(Pool.objects.select_related("curator", "created_by"), name=name, version=version)
    split = request.GET.get("split", "")
    tier = request.GET.get("tier", "")
    members = pool.members.select_related("reference").order_by("tier", "id")
    if split in ("train", "eval"):
        members = members.filter(split=split)
    if tier in Tier.values:
        members = members.filter(tier=tier)
    page = Paginator(members, GRID_PAGE_SIZE).get_page(request.GET.get("page"))
    balance = selectors.pool_balance(pool)
    return render(
        request,
        "curation/pool.html",
        {
            "pool": pool,
            "balance": balance,
            "page": page,
            "split": split,
            "tier": tier,
            "versions": selectors.pool_versions(pool.name),
            "taste": getattr(pool, "taste_model", None),  # the reverse one-to-one raises an AttributeError subclass
            **_audit_context(pool),
            **_graders_context(pool),
        },
    )


def _graders_context(pool: Pool) -> dict:
    """Who graded the pool and, when several did, their agreement on its members (their
    current grades), linked to the agreement page."""
    graders = selectors.pool_graders(pool)
    names = [grader.username for grader in graders]
    left_out = pool.consensus.get("left_out", {})  # jsonb keeps no key order: shown in LEFT_OUT's
    # An imported consensus pool names curators of the studio that made it, who are not this
    # studio's users (a namesake here is someone else): their agreement cannot be computed here.
    imported = pool.is_consensus and set(names) != {user.get_username() for user in pool.graders.all()}
    context = {"pool_graders": graders, "consensus_imported": imported,
               "consensus_left_out": [(text, left_out.get(reason, 0)) for reason, text in LEFT_OUT.items()]}
    if len(names) > 1 and not imported:
        scope = selectors.agreement_input(pool=pool, curators=names)
        context |= {
            "grader_agreement": agreement_report(scope.grades, scope.subjects, resamples=AGREEMENT_RESAMPLES, seed=0),
            "agreement_url": f"{reverse('curation:agreement')}?" + urlencode(
                [("pool", pool.label), *(("curator", name) for name in names)]),
        }
    return context


def _audit_context(pool: Pool, **extra) -> dict:
    latest, latest_done = selectors.pool_audits(pool)
    return {
        "pool": pool, "audit": latest, "audit_done": latest_done, "recipes": recipe_names(), "default_recipe": default_recipe_name(),
        "few_pairs": FEW_PAIRS, "max_pairs": audit.MAX_PAIRS, **extra,
    }


@require_http_methods(["GET", "POST"])
def pool_audit(request, name: str, version: int):
    """The pool page's judge audit: POST queues one for a score worker; htmx polls its progress
    here (a page without JavaScript refreshes itself meanwhile)."""
    pool = get_object_or_404(Pool, name=name, version=version)
    error = ""
    if request.method == "POST":
        try:
            audit.judge_audit_request(
                pool=pool, recipe_name=request.POST.get("recipe", ""), pairs=int(request.POST.get("pairs", "20")),
                created_by=request.user,
            )
        except (services.CurationError, UnknownRecipe) as exc:
            error = str(exc)
        except ValueError:
            error = "The number of pairs must be a whole number."
    if not request.htmx:
        if error:
            messages.error(request, error)
        return redirect(pool_detail_url(pool))
    return render(request, "curation/pool.html#audit", _audit_context(pool, audit_error=error), status=400 if error else 200)


@require_GET
def pool_diff(request, name: str):
    versions = selectors.pool_versions(name)
    if not versions.exists():
        raise Http404("no such pool")
    try:
        a = versions.get(version=int(request.GET.get("a", 0)))
        b = versions.get(version=int(request.GET.get("b", 0)))
    except (ValueError, Pool.DoesNotExist):
        newest = list(versions[:2])
        if len(newest) < 2:
            messages.info(request, "This pool has one version; freeze another to compare.")
            return redirect(pool_detail_url(newest[0]))
        return redirect(f"{reverse('curation:pool-diff', args=[name])}?a={newest[1].version}&b={newest[0].version}")
    return render(
        request,
        "curation/diff.html",
        {"name": name, "a": a, "b": b, "diff": selectors.pool_diff(a, b), "versions": versions},
    )


AGREEMENT_RESAMPLES = 1000


@require_GET
def agreement(request):
    """Agreement between curators on all references, a subject's or a pool's members: the
    pairs (percent, kappa, confusion tables), alpha over all of them, and per subject."""
    subject = request.GET.get("subject", "").strip()
    pool_label = request.GET.get("pool", "").strip()
    chosen = list(dict.fromkeys(name for name in request.GET.getlist("curator") if name.strip()))
    context = {
        "subject": subject, "pool_label": pool_label, "chosen": chosen, "graders": _graders(),
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


@require_http_methods(["GET", "POST"])
def pool_export(request, name: str, version: int):
    """The pool's export zip (imagefolder + parquet + pool.json + card), built on a score
    worker: POST asks for it, the page shows it being built and then offers the download."""
    pool = get_object_or_404(Pool, name=name, version=version)
    if request.method == "POST":
        export = export_request(PoolExport, owner=pool, created_by=request.user)
        if not request.htmx:
            return redirect("curation:pool-export", name=pool.name, version=pool.version)
    else:
        export = pool.exports.first()
    download_url = (
        reverse("curation:pool-export-download", args=[pool.name, pool.version, export.pk]) if export else ""
    )
    return export_page(
        request, model=PoolExport, export=export, download_url=download_url,
        title=pool.label, kind="pool", unit="image", back_url=pool_detail_url(pool),
        contents="A Hugging Face imagefolder (images/ + metadata.jsonl), pool.parquet, pool.json and a "
                 "dataset card, zipped; importing it restores the pool.",
        command=f"manage.py export_pool {pool.label} DIR",
    )


@require_GET
def pool_export_download(request, name: str, version: int, export_id: int):
    export = get_object_or_404(PoolExport, pk=export_id, pool__name=name, pool__version=version)
    return export_download_response(export)
