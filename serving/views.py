"""The studio's page for environment tokens: create one per outside trainer (its secret shown
once), revoke it when that trainer should stop."""
from __future__ import annotations

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from serving import services
from serving.models import EnvToken
from serving.selectors import DEPLOYMENT_TOKEN_NAME, tokens

SHOWN_ONCE = "serving:new-secret"  # the session key holding a new secret until its page shows it


@require_http_methods(["GET", "POST"])
def token_list(request):
    if request.method == "POST":
        try:
            token, secret = services.token_create(name=request.POST.get("name", ""), created_by=request.user)
        except services.TokenError as exc:
            messages.error(request, str(exc))
            return render(request, "serving/tokens.html", _context(request, name=request.POST.get("name", "")),
                          status=400)
        request.session[SHOWN_ONCE] = {"name": token.name, "secret": secret}
        return redirect("serving:tokens")
    return render(request, "serving/tokens.html", _context(request, new=request.session.pop(SHOWN_ONCE, None)))


@require_POST
def token_revoke(request, token_id: int):
    token = services.token_revoke(token=get_object_or_404(EnvToken, id=token_id))
    messages.success(request, f"Revoked {token.name}: it plays no more episodes; its runs stay.")
    return redirect("serving:tokens")


def _context(request, *, new: dict | None = None, name: str = "") -> dict:
    return {"tokens": tokens(), "new": new, "name": name, "deployment_token": DEPLOYMENT_TOKEN_NAME,
            "host": request.get_host().split(":")[0]}
