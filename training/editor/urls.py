"""URLs of the rollout page and its editor (revisions), included under /runs/ by training/urls.py."""
from django.urls import path

from training.editor import views

ROLLOUT = "<int:run_id>/rollouts/<int:rollout_id>/"
REVISION = ROLLOUT + "revisions/<int:revision_id>/"

urlpatterns = [
    path("lint/", views.sketch_lint, name="sketch-lint"),
    path("preview-kit/", views.preview_kit, name="preview-kit"),
    path(ROLLOUT, views.rollout_page, name="rollout"),
    path(ROLLOUT + "render/", views.revision_render, name="rollout-render"),
    path(ROLLOUT + "ask-model/", views.revision_ask_model, name="rollout-ask-model"),
    path(ROLLOUT + "promote/", views.rollout_promote, name="rollout-promote"),
    path(ROLLOUT + "compare/", views.revision_compare, name="rollout-compare"),
    path(REVISION, views.revision_panel, name="revision"),
    path(REVISION + "score/", views.revision_score, name="revision-score"),
    path(REVISION + "ask-model/", views.revision_ask_model, name="revision-ask-model"),
    path(REVISION + "cancel/", views.revision_cancel, name="revision-cancel"),
    path(REVISION + "painting.png", views.revision_image, name="revision-image"),
]
