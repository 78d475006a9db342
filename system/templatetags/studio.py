from django import template

register = template.Library()


@register.filter
def get_item(mapping, key):
    """{{ metrics|get_item:"ours/gate_pass_rate" }} — dict keys that are not identifiers."""
    if isinstance(mapping, dict):
        return mapping.get(key)
    return None


@register.filter
def pairkind(key: str) -> str:
    """love_vs_okay -> love vs okay."""
    return str(key).replace("_vs_", " vs ").replace("_", " ")
