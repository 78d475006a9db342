"""Pool pages: the pool builder (preview and freeze), a pool's page, its judge audit, the diff of
two versions, and its export."""
from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_http_methods

from curation import audit, selectors, services
from curation.agreement import agreement as agreement_report
from curation.consensus import (
    DEFAULT_LOVE_AT,
    DEFAULT_MIN_GRADERS,
    DEFAULT_OKAY_AT,
    LEFT_OUT,
    RULES,
    ConsensusSettings,
)
from curation.forms import ReferenceFilterForm
from curation.models import Pool, PoolExport, Provenance, Reference, Tier
from curation.selectors import ReferenceFilter
from curation.view_params import AGREEMENT_RESAMPLES, GRID_PAGE_SIZE, bad_filter_is_400, grader_of, graders
from paintapp.lib.exports import export_download_response, export_page, export_request
from paintenv.intervals import FEW_PAIRS
from painting.selectors import UnknownRecipe, default_recipe_name, recipe_names

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
@bad_filter_is_400
def pool_builder(request):
    """One curator's grades, the consensus of several, or one pool per curator: the preview
    shows what a freeze would make (and, for a consensus, what it leaves out and why)."""
    params = request.POST if request.method == "POST" else request.GET
    flt = ReferenceFilterForm(params).reference_filter()
    grader = grader_of(request, params)
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
        "tiers": Tier.choices, "grader": grader, "graders": graders(), "modes": BUILD_MODES, "rules": RULES,
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
    who = selectors.pool_graders(pool)  # not `graders` (view_params.graders, every grader)
    names = [grader.username for grader in who]
    left_out = pool.consensus.get("left_out", {})  # jsonb keeps no key order: shown in LEFT_OUT's
    # An imported consensus pool names curators of the studio that made it, who are not this
    # studio's users (a namesake here is someone else): their agreement cannot be computed here.
    imported = pool.is_consensus and set(names) != {user.get_username() for user in pool.graders.all()}
    context = {"pool_graders": who, "consensus_imported": imported,
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
