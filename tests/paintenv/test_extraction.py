"""Finding the sketch in a model reply: fences, labels, <think> sections, cut-off replies."""

from __future__ import annotations

import pytest

from paintenv.extraction import extract_sketch, is_keep_reply, reply_text, sketch_in_reply


def test_extract_takes_the_first_js_block():
    reply = "Intro\n```python\nx = 1\n```\n```js\nfirst();\n```\n```js\nsecond();\n```"
    assert extract_sketch(reply) == "first();\n"


@pytest.mark.parametrize("label", ["js", "javascript", "JavaScript", "jsx", "p5js"])
def test_extract_accepts_javascript_labels(label):
    assert extract_sketch(f"```{label}\nfoo();\n```") == "foo();\n"


def test_extract_accepts_tilde_fences():
    assert extract_sketch("~~~js\nfoo();\n~~~") == "foo();\n"


def test_extract_uses_an_unlabelled_block_only_if_it_looks_like_javascript():
    assert extract_sketch("```\nfunction setup() {}\n```") == "function setup() {}\n"
    assert extract_sketch("```\njust some words\n```") is None


def test_extract_returns_the_rest_of_an_unterminated_js_block():
    assert extract_sketch("Here:\n```js\nfunction setup() {\n  brush.") == "function setup() {\n  brush."


def test_extract_skips_blocks_inside_a_think_section():
    reply = "<think>\n```js\nrect(1);\n```\n</think>\n```js\nfine();\n```"
    assert extract_sketch(reply) == "fine();\n"


def test_extract_returns_the_whole_reply_without_fences():
    assert extract_sketch("function setup() {}") == "function setup() {}"


@pytest.mark.parametrize("reply", ["", "   \n", None])
def test_extract_returns_none_for_empty_replies(reply):
    assert extract_sketch(reply) is None


def test_the_gate_reads_an_unfenced_prose_reply_as_no_sketch():
    prose = "I would paint soft peach petals with a crimson throat."
    assert extract_sketch(prose) == prose
    found = sketch_in_reply(prose)
    assert found.code is None
    assert "prose" in found.reason


def test_the_gate_keeps_an_unfenced_reply_that_looks_like_code():
    found = sketch_in_reply("function setup() { createCanvas(600, 600, WEBGL); }")
    assert found.code == "function setup() { createCanvas(600, 600, WEBGL); }"
    assert not found.fenced


def test_a_reply_with_only_other_languages_names_them_as_the_reason():
    found = sketch_in_reply("```python\nprint(1)\n```\n```\nplain words\n```")
    assert found.code is None
    assert found.reason == "no JavaScript block (found: python, unlabelled)"


def test_a_reply_cut_off_inside_its_js_block_is_still_a_fenced_sketch():
    found = sketch_in_reply("Here:\n```js\nfunction setup() {\n  brush.")
    assert found.code == "function setup() {\n  brush."
    assert found.fenced


@pytest.mark.parametrize("reply", [None, 12345, "", "<think>only thoughts</think>"])
def test_replies_without_text_are_no_sketch_with_a_reason(reply):
    found = sketch_in_reply(reply)
    assert found.code is None
    assert found.reason


def test_a_replys_nul_characters_become_replacement_characters_and_nothing_else_changes():
    assert reply_text("```js\nbrush.circle(1, 2, 3);\x00\n```\x00") == "```js\nbrush.circle(1, 2, 3);\ufffd\n```\ufffd"
    assert reply_text("plain — ünïcode `code`\n") == "plain — ünïcode `code`\n"


# A revision turn's KEEP: the word alone, however a model dresses it; anything more is a sketch.
KEEP_DRESSINGS = ["{}", " {} ", "{}\n", "{}.", "{}!", "`{}`", "**{}**", '"{}"', "'{}'", "```{}```",
                  "```\n{}\n```", "```js\n{}\n```", "~~~\n{}\n~~~", "<think>it is fine</think>\n{}"]


@pytest.mark.parametrize("dressing", KEEP_DRESSINGS)
@pytest.mark.parametrize("word", ["KEEP", "keep", "Keep"])
def test_it_reads_keep_alone_however_it_is_dressed(word, dressing):
    assert is_keep_reply(dressing.format(word))


GOOD_SKETCH = "```js\nfunction setup() {\n  createCanvas(600, 600);\n  brush.fill('#c44', 60);\n}\n```"


@pytest.mark.parametrize("reply", [
    "", "KEEP it", "I keep", "keepers", "KEEPKEEP", "K E E P", "KEEP KEEP", "do not KEEP", "KEEP\nKEEP",
    f"KEEP\n{GOOD_SKETCH}", f"{GOOD_SKETCH}\nKEEP", f"KEEP {GOOD_SKETCH}", "```js\nKEEP;\nbrush.fill(1);\n```",
    "KEEP // " + "x" * 60, "<think>KEEP</think>\n" + GOOD_SKETCH, "<think>KEEP</think>",
])
def test_it_reads_anything_more_than_keep_as_a_reply_with_or_without_a_sketch(reply):
    assert not is_keep_reply(reply)
