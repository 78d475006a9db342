from django.urls import path

from curation import views

app_name = "curation"
urlpatterns = [path("", views.pools, name="pools")]
