from django.contrib import admin

from painting.models import RewardRecipe


@admin.register(RewardRecipe)
class RewardRecipeAdmin(admin.ModelAdmin):
    list_display = ("name", "created_by", "created_at")
