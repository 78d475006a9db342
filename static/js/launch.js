// The launch form's notes, updated as the curator types: a warm-up as long as the run (the
// learning rate never reaches the value set), and how long the run may take at the pace of
// the last runs' steps (seconds per rollout, measured, times the rollouts of this run: each
// step trains on per-device batch × accumulation completions).
(() => {
  "use strict";
  const notes = document.getElementById("launch-notes");
  if (!notes) return;
  const field = (name) => document.querySelector(`.launchform [name=${name}]`);
  const steps = field("max_steps"), warmup = field("warmup_steps");
  const batch = field("per_device_train_batch_size"), accumulation = field("gradient_accumulation_steps");
  const warning = document.getElementById("warmup-warning");
  const estimate = document.getElementById("time-estimate");
  const perRollout = notes.dataset.secondsPerRollout === "" ? null : Number(notes.dataset.secondsPerRollout);

  function duration(seconds) {
    const total = Math.round(seconds);
    const h = Math.floor(total / 3600), m = Math.floor((total % 3600) / 60), s = total % 60;
    if (h) return `${h} h ${m} min`;
    if (m) return m < 10 && s ? `${m} min ${s} s` : `${m} min`;
    return `${s} s`;
  }

  function update() {
    const n = Number(steps.value), w = Number(warmup.value), g = Number(batch.value) * Number(accumulation.value);
    const late = Number.isInteger(n) && Number.isInteger(w) && n > 0 && w >= n;
    warning.hidden = !late;
    warning.textContent = late
      ? `The warm-up (${w} steps) is as long as the run (${n} steps): the learning rate never reaches ${field("learning_rate").value}.`
      : "";
    if (perRollout !== null && n > 0 && g > 0) {
      estimate.textContent = `About ${duration(n * g * perRollout)} for ${n} steps of ${g} rollouts, at the last runs' ${perRollout.toFixed(1)} s per rollout.`;
    }
  }

  for (const input of [steps, warmup, batch, accumulation, field("learning_rate")]) input?.addEventListener("input", update);
  update();
})();

// The run kind: a field declared for the other kind (data-kinds on its input) is hidden, so an
// SFT run's form shows its dataset, epochs and the arguments SFT reads, and a GRPO run's the rest.
(() => {
  "use strict";
  const form = document.querySelector(".launchform");
  const kinds = form ? form.querySelectorAll("[name=kind]") : [];
  if (!kinds.length) return;
  function show() {
    const kind = [...kinds].find((input) => input.checked)?.value || "grpo";
    for (const input of form.querySelectorAll("[data-kinds]")) {
      const label = input.closest("label");
      if (!label) continue;
      if (input.dataset.kinds.split(" ").includes(kind)) label.removeAttribute("data-hidden-kind");
      else label.setAttribute("data-hidden-kind", "");
    }
    // The warm-up warning and the time estimate count GRPO steps of rollouts.
    const notes = document.getElementById("launch-notes");
    if (notes) notes.hidden = kind !== "grpo";
  }
  for (const input of kinds) input.addEventListener("change", show);
  show();
})();
