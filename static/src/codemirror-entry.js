// The parts of CodeMirror 6 the rollout editor (static/js/editor.js) uses, bundled by esbuild
// at setup time (`make setup` -> node_modules/.studio/codemirror.bundle.js) and exposed on
// one global, so our page script stays a plain file with no build step of its own.
import { basicSetup } from "codemirror";
import { indentWithTab } from "@codemirror/commands";
import { javascript } from "@codemirror/lang-javascript";
import { HighlightStyle, syntaxHighlighting } from "@codemirror/language";
import { forceLinting, lintGutter, linter } from "@codemirror/lint";
import { EditorState, Prec } from "@codemirror/state";
import { EditorView, keymap } from "@codemirror/view";
import { tags } from "@lezer/highlight";

window.StudioCodeMirror = {
  EditorState,
  EditorView,
  HighlightStyle,
  Prec,
  basicSetup,
  forceLinting,
  indentWithTab,
  javascript,
  keymap,
  lintGutter,
  linter,
  syntaxHighlighting,
  tags,
};
