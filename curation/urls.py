from django.urls import path, register_converter

from curation import pool_views, views


class ShaConverter:
    regex = "[0-9a-f]{64}"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(ShaConverter, "sha")

app_name = "curation"
urlpatterns = [
    path("", views.pools, name="pools"),
    path("references/", views.reference_grid, name="grid"),
    path("references/details.json", views.reference_details, name="details"),
    path("references/bulk/", views.bulk_grade, name="bulk"),
    path("references/bulk/<int:batch_id>/undo/", views.bulk_undo, name="bulk-undo"),
    path("references/<int:reference_id>/", views.reference_focus, name="focus"),
    path("references/<int:reference_id>/grade/", views.reference_grade, name="grade"),
    path("references/<int:reference_id>/history/", views.reference_history, name="history"),
    path("references/<int:reference_id>/curators/", views.reference_curators, name="curators"),
    path("references/blind/", views.grading_blind, name="blind"),
    path("images/<sha:sha256>.png", views.image, name="image"),
    path("build/", pool_views.pool_builder, name="builder"),
    path("agreement/", views.agreement, name="agreement"),
    path("upload/", views.upload, name="upload"),
    path("<slug:name>/v<int:version>/export/", pool_views.pool_export, name="pool-export"),
    path("<slug:name>/v<int:version>/exports/<int:export_id>.zip", pool_views.pool_export_download,
         name="pool-export-download"),
    path("<slug:name>/v<int:version>/audit/", pool_views.pool_audit, name="pool-audit"),
    path("<slug:name>/v<int:version>/", pool_views.pool_detail, name="pool"),
    path("<slug:name>/diff/", pool_views.pool_diff, name="pool-diff"),
]
