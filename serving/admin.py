from django.contrib import admin

from serving.models import EnvToken


@admin.register(EnvToken)
class EnvTokenAdmin(admin.ModelAdmin):
    list_display = ("name", "prefix", "created_at", "revoked_at", "last_used_at", "episodes")
    readonly_fields = ("key_hash", "prefix")
