from django.contrib import admin

from training.models import Revision, Rollout, Run, Step


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ("name", "pool", "base_model", "recipe_name", "status", "steps_done", "created_at")
    list_filter = ("status", "recipe_name")
    readonly_fields = ("recipe", "hyperparameters", "error", "eval_result")


@admin.register(Step)
class StepAdmin(admin.ModelAdmin):
    list_display = ("run", "step", "reward_mean", "reward_std", "created_at")
    list_filter = ("run",)


@admin.register(Rollout)
class RolloutAdmin(admin.ModelAdmin):
    list_display = ("run", "step", "group", "position", "subject", "passed", "reward")
    list_filter = ("run", "passed")


@admin.register(Revision)
class RevisionAdmin(admin.ModelAdmin):
    list_display = ("rollout", "status", "reward", "created_by", "created_at")
