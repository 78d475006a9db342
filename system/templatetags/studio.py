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


@register.filter
def duration(seconds):
    """90 -> "1 min 30 s", 4000 -> "1 h 7 min": a time left or an age, to the unit that matters."""
    if seconds is None:
        return ""
    total = int(round(float(seconds)))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min"
    if minutes:
        return f"{minutes} min {secs} s" if minutes < 10 and secs else f"{minutes} min"
    return f"{secs} s"
