from django.contrib import admin

from curation.models import Grade, GradeEvent, Pool, PoolMember, Reference


@admin.register(Reference)
class ReferenceAdmin(admin.ModelAdmin):
    list_display = ("id", "subject", "provenance", "width", "height", "has_source", "created_at")
    list_filter = ("provenance",)
    search_fields = ("subject", "sha256", "original_name")
    readonly_fields = ("sha256", "image", "width", "height", "file_size", "created_at")


@admin.register(Grade)
class GradeAdmin(admin.ModelAdmin):
    list_display = ("reference", "curator", "tier", "updated_at")
    list_filter = ("tier", "curator")


@admin.register(GradeEvent)
class GradeEventAdmin(admin.ModelAdmin):
    list_display = ("reference", "curator", "previous_tier", "tier", "source", "created_at")
    list_filter = ("source", "curator")


class PoolMemberInline(admin.TabularInline):
    model = PoolMember
    extra = 0
    readonly_fields = ("reference", "tier", "split")
    can_delete = False


@admin.register(Pool)
class PoolAdmin(admin.ModelAdmin):
    list_display = ("name", "version", "curator", "created_at")
    inlines = [PoolMemberInline]
    readonly_fields = ("name", "version", "curator", "tiers", "filters", "eval_share", "split_seed")
