"""The rollout page and its editor: lint, render, score, ask the model, compare revisions, promote.

Views are thin: writes are in `training.editor.services`, reads in `.selectors`, and what
the page shows is shaped by `.presenters`. htmx requests get fragments of
templates/training/rollout.html (partials); the same URLs without htmx get the full page,
so every action also works as a plain form post.
"""
from __future__ import annotations

import json

from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from paintapp.lib.storage import stored_png_response
from paintenv.gate import MAX_SOURCE_CHARS
from training.chain_selectors import rollout_chain
from training.editor import presenters, preview, selectors, services
from training.failures import failure_label
from training.models import Revision, Rollout

TEMPLATE = "training/rollout.html"
REVISIONS_SHOWN = 50


def _rollout(run_id: int, rollout_id: int) -> Rollout:
    return get_object_or_404(
        Rollout.objects.select_related("run", "run__pool"), pk=rollout_id, run_id=run_id
    )


def _revision(rollout: Rollout, revision_id: int) -> Revision:
    revision = get_object_or_404(Revision.objects.select_related("created_by", "parent"), pk=revision_id, rollout=rollout)
    revision.rollout = rollout  # already loaded with its run
    return revision


def _image_url(rollout: Rollout, revision: Revision | None = None) -> str | None:
    if revision is not None:
        return reverse("training:revision-image", args=[rollout.run_id, rollout.id, revision.id]) if revision.png else None
    return reverse("training:rollout-image", args=[rollout.run_id, rollout.id]) if rollout.png else None


def _side(rollout: Rollout, key: str) -> presenters.Side:
    if key == "original":
        return presenters.side_of_original(rollout, _image_url(rollout))
    if not key.isdigit():
        raise Http404("compare a revision id or 'original'")
    revision = _revision(rollout, int(key))
    return presenters.side_of_revision(revision, _image_url(rollout, revision))


def _panel_context(rollout: Rollout, revision: Revision | None) -> dict:
    original = presenters.side_of_original(rollout, _image_url(rollout))
    edited = presenters.side_of_revision(revision, _image_url(rollout, revision)) if revision else None
    return {
        "rollout": rollout,
        "run": rollout.run,
        "revision": revision,
        "original": original,
        "edited": edited,
        "parts": presenters.parts_table(selectors.rollout_recipe(rollout), original, edited),
        "revision_status": presenters.revision_status(revision) if revision else None,
        "revision_author": presenters.author_label(revision) if revision else "",
        "revision_model": presenters.model_used(revision) if revision else "",
        "elapsed_s": selectors.revision_elapsed_s(revision) if revision else 0.0,
        "deadline_s": settings.EDITOR_RENDER_DEADLINE_S,
        "render_settings": selectors.rollout_render_settings(rollout),
        "revision_diagnostics": _revision_diagnostics(revision),
    }


def _revision_diagnostics(revision: Revision | None) -> dict | None:
    """The render errors of a finished revision, for the editor to show while its code is unchanged."""
    if revision is None or revision.is_pending or not revision.render:
        return None
    return {"revision": revision.id, "code": revision.code,
            "diagnostics": presenters.render_diagnostics(revision.render.get("errors", []))}


def _revisions_context(rollout: Rollout, selected: Revision | None, oob: bool = False) -> dict:
    revisions = list(rollout.revisions.select_related("created_by").order_by("-created_at")[:REVISIONS_SHOWN])
    comparable = rollout.reward is not None
    rows = [
        {"revision": r, "status": presenters.revision_status(r), "author": presenters.author_label(r),
         "delta": r.reward - rollout.reward if comparable and r.reward is not None else None}
        for r in revisions
    ]
    newest = selected or (revisions[0] if revisions else None)
    return {"rollout": rollout, "run": rollout.run, "revision_rows": rows, "revision": selected,
            "compare_b": str(newest.id) if newest else "original", "oob": oob}


def _page_context(request, rollout: Rollout, revision: Revision | None) -> dict:
    previous, following = selectors.rollout_neighbours(rollout)
    context = {
        **_panel_context(rollout, revision),
        **_revisions_context(rollout, revision),
        "previous": previous,
        "following": following,
        "references": selectors.reference_verdicts(rollout, revision),
        "promoted": selectors.promoted_reference(rollout),
        "promotion_refusal": services.promotion_refusal(rollout),
        "original_failure": failure_label(rollout.violations) if not rollout.passed else "",
        "chain": rollout_chain(rollout),
        "editor_config": {
            "rolloutId": rollout.id,
            "lintUrl": reverse("training:sketch-lint"),
            "originalCode": rollout.code,
            "originalDiagnostics": presenters.render_diagnostics(rollout.errors),
            "draftKey": f"paintapp.editorDraft.rollout.{rollout.id}",
            "preview": preview.preview_config(selectors.rollout_render_settings(rollout)),
        },
    }
    return context


def _with_oob(request, rollout: Rollout, revision: Revision, changed: bool, status: int = 200) -> HttpResponse:
    """The revision panel, plus the revision list and verdicts when the revision changed state."""
    html = render_to_string(f"{TEMPLATE}#panel", _panel_context(rollout, revision), request=request)
    if changed:
        html += render_to_string(f"{TEMPLATE}#revisions", _revisions_context(rollout, revision, oob=True), request=request)
        verdicts = {"rollout": rollout, "revision": revision, "oob": True,
                    "references": selectors.reference_verdicts(rollout, revision)}
        html += render_to_string(f"{TEMPLATE}#references", verdicts, request=request)
    return HttpResponse(html, status=status)


def _refusal(request, rollout: Rollout, error: services.EditorError, revision: Revision | None = None) -> HttpResponse:
    """A refused action: a message fragment for htmx, else the page with the message, with the 4xx status."""
    if request.htmx:
        html = render_to_string(f"{TEMPLATE}#editor-message", {"editor_error": error.message}, request=request)
        response = HttpResponse(html, status=error.status)
        response["HX-Retarget"] = "#editor-message"
        response["HX-Reswap"] = "outerHTML"
        return response
    context = {**_page_context(request, rollout, revision), "editor_error": error.message}
    return render(request, TEMPLATE, context, status=error.status)


# --- pages ------------------------------------------------------------------------------------


@require_GET
def rollout_page(request, run_id: int, rollout_id: int):
    rollout = _rollout(run_id, rollout_id)
    chosen = request.GET.get("revision", "")
    if chosen.isdigit():
        revision = _revision(rollout, int(chosen))
    elif chosen:
        raise Http404("no such revision")
    else:  # the newest revision of this person, so a reload shows their last render
        revision = rollout.revisions.filter(created_by=request.user).select_related("created_by").first()
        if revision is not None:
            revision.rollout = rollout
    if revision is not None:
        revision = services.revision_sync(revision=revision)
    return render(request, TEMPLATE, _page_context(request, rollout, revision))


@require_GET
def revision_panel(request, run_id: int, rollout_id: int, revision_id: int):
    """Polled every second while a revision renders or scores: collects results, shows progress."""
    rollout = _rollout(run_id, rollout_id)
    revision = _revision(rollout, revision_id)
    if not request.htmx:
        return redirect(f"{reverse('training:rollout', args=[run_id, rollout_id])}?revision={revision.id}")
    # The state the page shows: a train worker moves a model's revision on by itself, so the
    # row may have changed before this poll collected anything.
    before = request.GET.get("shown", revision.status)
    revision = services.revision_sync(revision=revision)
    return _with_oob(request, rollout, revision, changed=revision.status != before)


@require_GET
def revision_image(request, run_id: int, rollout_id: int, revision_id: int):
    revision = _revision(_rollout(run_id, rollout_id), revision_id)
    if not revision.png:
        raise Http404("this revision has no painting")
    return stored_png_response(revision.png)


@require_GET
def revision_compare(request, run_id: int, rollout_id: int):
    """Two of {original, revisions} side by side: paintings, rewards and every part."""
    rollout = _rollout(run_id, rollout_id)
    a_key, b_key = request.GET.get("a", "original"), request.GET.get("b", "")
    if not b_key:
        return HttpResponse("Choose two versions to compare.", status=400, content_type="text/plain")
    a, b = _side(rollout, a_key), _side(rollout, b_key)
    context = {"rollout": rollout, "a": a, "b": b,
               "compare_parts": presenters.parts_table(selectors.rollout_recipe(rollout), a, b)}
    if request.htmx:
        return render(request, f"{TEMPLATE}#compare", context)
    return render(request, TEMPLATE, {**_page_context(request, rollout, None), **context})


# --- actions ----------------------------------------------------------------------------------


@require_POST
def sketch_lint(request):
    """The static gate on the editor's text (~4 ms), for CodeMirror's linter as the user types."""
    try:
        payload = json.loads(request.body or b"{}")
    except (ValueError, UnicodeDecodeError):
        return JsonResponse({"error": "Send JSON: {\"code\": \"...\"}."}, status=400)
    code = payload.get("code") if isinstance(payload, dict) else None
    if not isinstance(code, str):
        return JsonResponse({"error": "Send JSON with the sketch as a string in \"code\"."}, status=400)
    if len(code) > MAX_SOURCE_CHARS:
        return JsonResponse({"error": f"The code is {len(code):,} characters; the gate analyses at most "
                                      f"{MAX_SOURCE_CHARS:,}."}, status=413)
    return JsonResponse(services.lint_diagnostics(code))


@require_POST
def preview_kit(request):
    """The stub module and sketch wrapper for the editor's in-browser preview, made for the
    global names of the curator's browser (asked once per page, not per repaint)."""
    try:
        payload = json.loads(request.body or b"{}")
    except (ValueError, UnicodeDecodeError):
        return JsonResponse({"error": "Send JSON: {\"names\": [...]}."}, status=400)
    try:
        return JsonResponse(preview.preview_kit(payload.get("names") if isinstance(payload, dict) else None))
    except services.EditorError as error:
        return JsonResponse({"error": error.message}, status=error.status)


@require_POST
def revision_render(request, run_id: int, rollout_id: int):
    rollout = _rollout(run_id, rollout_id)
    try:
        revision = services.revision_render(rollout=rollout, code=request.POST.get("code"), created_by=request.user)
    except services.EditorError as error:
        return _refusal(request, rollout, error)
    revision.rollout = rollout
    if request.htmx:
        return _with_oob(request, rollout, services.revision_sync(revision=revision), changed=True)
    return redirect(f"{reverse('training:rollout', args=[run_id, rollout_id])}?revision={revision.id}")


@require_POST
def revision_ask_model(request, run_id: int, rollout_id: int, revision_id: int | None = None):
    """"Ask the model to revise" the rollout (or one of its revisions): a new revision the
    train worker writes, shown beside like any other."""
    rollout = _rollout(run_id, rollout_id)
    source = _revision(rollout, revision_id) if revision_id is not None else None
    try:
        revision = services.revision_ask_model(rollout=rollout, source=source, requested_by=request.user)
    except services.EditorError as error:
        return _refusal(request, rollout, error, source)
    revision.rollout = rollout
    if request.htmx:
        return _with_oob(request, rollout, services.revision_sync(revision=revision), changed=True)
    return redirect(f"{reverse('training:rollout', args=[run_id, rollout_id])}?revision={revision.id}")


@require_POST
def revision_score(request, run_id: int, rollout_id: int, revision_id: int):
    rollout = _rollout(run_id, rollout_id)
    revision = _revision(rollout, revision_id)
    try:
        revision = services.revision_score(revision=revision)
    except services.EditorError as error:
        return _refusal(request, rollout, error, revision)
    revision.rollout = rollout
    if request.htmx:
        return _with_oob(request, rollout, services.revision_sync(revision=revision), changed=True)
    return redirect(f"{reverse('training:rollout', args=[run_id, rollout_id])}?revision={revision.id}")


@require_POST
def revision_cancel(request, run_id: int, rollout_id: int, revision_id: int):
    rollout = _rollout(run_id, rollout_id)
    revision = _revision(rollout, revision_id)
    try:
        revision = services.revision_cancel(revision=revision, cancelled_by=request.user)
    except services.EditorError as error:
        return _refusal(request, rollout, error, revision)
    revision.rollout = rollout
    if request.htmx:
        return _with_oob(request, rollout, revision, changed=True)
    return redirect(f"{reverse('training:rollout', args=[run_id, rollout_id])}?revision={revision.id}")


@require_POST
def rollout_promote(request, run_id: int, rollout_id: int):
    rollout = _rollout(run_id, rollout_id)
    try:
        reference, created = services.rollout_promote(rollout=rollout, created_by=request.user)
    except services.EditorError as error:
        return _refusal(request, rollout, error)
    if created:
        messages.success(request, f"Promoted: the painting is reference #{reference.id}, with its sketch, "
                                  "ready to grade and to go into a later pool version.")
    else:
        messages.info(request, f"Already in the reference library as #{reference.id}; nothing was added.")
    return redirect("training:rollout", run_id=run_id, rollout_id=rollout_id)
