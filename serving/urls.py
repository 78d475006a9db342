from django.urls import path

from serving import views

app_name = "serving"
urlpatterns = [
    path("tokens/", views.token_list, name="tokens"),
    path("tokens/<int:token_id>/revoke/", views.token_revoke, name="token-revoke"),
]
