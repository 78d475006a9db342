from django.urls import include, path

from training import sft_views, views

app_name = "training"
urlpatterns = [
    path("", views.runs, name="runs"),
    path("new/", views.launch, name="launch"),
    path("sft-datasets/", sft_views.sft_datasets, name="sft-datasets"),
    path("sft-datasets/<int:dataset_id>/", sft_views.sft_dataset, name="sft-dataset"),
    path("sft-datasets/<int:dataset_id>.jsonl", sft_views.sft_dataset_download, name="sft-dataset-download"),
    path("<int:run_id>/", views.run_detail, name="run"),
    path("<int:run_id>/gallery/", views.gallery, name="gallery"),
    path("<int:run_id>/export/", views.run_export, name="export"),
    path("<int:run_id>/exports/<int:export_id>.zip", views.run_export_download, name="export-download"),
    path("<int:run_id>/metrics.json", views.run_metrics, name="metrics"),
    path("<int:run_id>/stop/", views.run_stop, name="stop"),
    path("<int:run_id>/resume/", views.run_resume, name="resume"),
    path("<int:run_id>/delete/", views.run_delete, name="delete"),
    path("<int:run_id>/merge/", views.run_merge, name="merge"),
    path("<int:run_id>/rollouts/<int:rollout_id>.png", views.rollout_image, name="rollout-image"),
    path("<int:run_id>/rollouts/<int:rollout_id>/turns/<int:turn>.png", views.rollout_turn_image,
         name="rollout-turn-image"),
    path("", include("training.editor.urls")),
]
