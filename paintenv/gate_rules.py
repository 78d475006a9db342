"""The static gate's rules as data: its violation codes and the names each rule judges.

The names come from p5.js 2.x and the browser; the allowlist itself is sketch_api.json.
gate_analysis.py decides, name by name and node by node, which code a use gets.
"""

from __future__ import annotations

import re

from paintenv.sketch_api import SKETCH_API

# ---------------------------------------------------------------------------------------
# Violation codes (stable strings: stored with every rollout and shown in the UI)

NO_SKETCH = "no_sketch_in_response"
TRUNCATED = "truncated"
MISSING_ENTRY = "missing_entry_points"
NOT_WEBGL = "not_webgl"
EXTERNAL = "external_access"
TEXT = "text_label"
BARE = "bare_primitives"
UNKNOWN_BRUSH = "unknown_brush_method"
DISALLOWED_BRUSH = "disallowed_brush_method"
NO_PAINTING = "no_painting_calls"
TOO_LONG = "too_long"
GATE_ERROR = "gate_error"
FORBIDDEN = "forbidden_api"
CANVAS_SIZE = "canvas_size"

VIOLATION_CODES: tuple[str, ...] = (
    NO_SKETCH, TRUNCATED, MISSING_ENTRY, NOT_WEBGL, EXTERNAL, TEXT, BARE,
    UNKNOWN_BRUSH, DISALLOWED_BRUSH, NO_PAINTING, TOO_LONG, GATE_ERROR, FORBIDDEN, CANVAS_SIZE,
)

# The published canvas: 600 x 600 units, WEBGL. Another size changes what each check sees
# (the text check reads at most 600 px, the judge the whole PNG), so it is a verdict.
CANVAS_UNITS = 600
# p5 functions that change the canvas after createCanvas (outside the allowlist anyway).
CANVAS_RESIZERS: frozenset[str] = frozenset({"resizeCanvas", "pixelDensity"})


# ---------------------------------------------------------------------------------------
# Name lists (p5.js 2.x globals)

# p5 functions that draw geometry or pixels without the brush (sketch_api.json).
PRIMITIVE_NAMES: frozenset[str] = SKETCH_API.primitive_names
# Renderer internals reachable as properties; same effect as bare primitives.
RAW_RENDERER_PROPERTIES: frozenset[str] = frozenset({"drawingContext", "_renderer"})

TEXT_NAMES: frozenset[str] = SKETCH_API.text_names
DOM_TEXT_CREATORS: frozenset[str] = frozenset(
    {"createP", "createDiv", "createSpan", "createA", "createButton"}
)

# Always external, whatever the sketch declares.
EXTERNAL_NAMES: frozenset[str] = frozenset(
    {
        "fetch", "XMLHttpRequest", "WebSocket", "EventSource", "importScripts", "eval",
        "Function", "Worker", "SharedWorker", "require", "document", "navigator",
        "localStorage", "sessionStorage", "indexedDB", "caches", "cookieStore",
        "WebAssembly", "RTCPeerConnection", "WebTransport", "Image", "Audio",
        "BroadcastChannel", "XSLTProcessor", "DOMParser", "alert", "confirm", "prompt",
        "httpGet", "httpPost", "httpDo", "selectAll", "removeElements", "saveCanvas",
        "saveJSON", "saveStrings", "saveTable", "saveGif", "saveFrames", "getURL",
        "getURLPath", "getURLParams", "createElement", "createImg", "createVideo",
        "createAudio", "createCapture", "createInput", "createFileInput", "createSlider",
        "createSelect", "createRadio", "createCheckbox", "createColorPicker",
        "window", "globalThis",
    }
) | DOM_TEXT_CREATORS
# External only when the sketch does not declare the name itself (common variable names).
SOFT_EXTERNAL_NAMES: frozenset[str] = frozenset(
    {"location", "history", "open", "select", "save", "self", "top", "parent", "frames",
     "opener"}
)
# Dangerous as a property of any object.
EXTERNAL_PROPERTIES: frozenset[str] = frozenset(
    {
        "innerHTML", "outerHTML", "insertAdjacentHTML", "srcdoc", "cookie", "sendBeacon",
        "constructor", "__proto__", "__defineGetter__", "__defineSetter__",
        "createObjectURL", "serviceWorker", "postMessage", "fetch", "eval",
        "importScripts", "elt", "execCommand", "XMLHttpRequest", "WebSocket",
        # reflection that reaches or rewrites shared built-ins (frozen at runtime anyway)
        "prototype", "defineProperty", "defineProperties", "setPrototypeOf",
        "getPrototypeOf", "getOwnPropertyDescriptor", "getOwnPropertyDescriptors",
        "__lookupGetter__", "__lookupSetter__",
    }
)
# Properties that read the renderer's own state, which changes with its history (a warm
# page's heap is not a fresh one's), not the seed: console.memory and its fields, console's
# own consoles and tasks, and what performance, navigator and document hold (behind
# forbidden names already; listed so an alias of them is refused too).
PROBE_PROPERTIES: frozenset[str] = frozenset(
    {
        "memory", "usedJSHeapSize", "totalJSHeapSize", "jsHeapSizeLimit", "context",
        "createTask", "timeOrigin", "timeline", "getEntries", "getEntriesByName",
        "getEntriesByType", "eventCounts", "deviceMemory", "hardwareConcurrency",
        "lastModified",
    }
)
HARD_GLOBAL_OBJECTS: frozenset[str] = frozenset({"window", "globalThis"})
SOFT_GLOBAL_OBJECTS: frozenset[str] = frozenset({"self", "top", "parent", "frames"})
TIMER_NAMES: frozenset[str] = frozenset({"setTimeout", "setInterval"})
# Free names that the rules above give their own codes; every other name outside the
# allowlist is `forbidden_api`.
JUDGED_ELSEWHERE: frozenset[str] = (
    PRIMITIVE_NAMES | TEXT_NAMES | EXTERNAL_NAMES | SOFT_EXTERNAL_NAMES | HARD_GLOBAL_OBJECTS
    | SOFT_GLOBAL_OBJECTS | RAW_RENDERER_PROPERTIES | {"p5", "brush"}
)

_LOADER = re.compile(r"load[A-Z]\w*\Z")  # loadImage, loadJSON, loadFont, loadShader, ...
_SAFE_LOADERS = frozenset({"loadPixels"})  # reads the canvas, no I/O
# Data and javascript: URIs inside one string literal (a regex over a literal's value,
# never over raw source). `metadata: x` does not match: a data URI needs a type or comma.
URI_IN_STRING = re.compile(r"(?i)(?<![\w-])(?:data:[\w.+-]*(?:/|;|,)|javascript:)")


def is_loader(name: str) -> bool:
    return bool(_LOADER.match(name)) and name not in _SAFE_LOADERS


def is_external_name(name: str) -> bool:
    return name in EXTERNAL_NAMES or is_loader(name)
