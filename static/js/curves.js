// Live training curves for the run page: polls the metrics endpoint for new steps only and
// redraws uPlot charts. An EMA slider smooths the series (debiased at the start, like W&B
// and TensorBoard); the raw series stays visible underneath.
(() => {
  "use strict";
  const root = document.getElementById("curves");
  if (!root || !window.uPlot) return;
  const url = root.dataset.metricsUrl;
  let keys = [];
  const rows = []; // [step, ...values in keys order]
  let lastStep = 0;
  let smoothing = Number(localStorage.getItem("paintapp.smoothing") || 0.6);

  const CHARTS = [
    { id: "chart-reward", title: "Mean group reward (± std)", series: ["reward"], band: "reward_std", range: [0, 1] },
    { id: "chart-parts", title: "Components", series: ["ours/judge", "ours/quality", "ours/length", "ours/gate_pass_rate"], range: [0, 1] },
    { id: "chart-counts", title: "Rollouts: None and under 0.3", series: ["ours/none_count", "ours/low_count"] },
    { id: "chart-paint", title: "Paint fraction and diversity", series: ["ours/paint_fraction", "ours/diversity"] },
    { id: "chart-length", title: "Completion length (tokens)", series: ["completions/mean_length"] },
    { id: "chart-optim", title: "Loss, KL, grad norm", series: ["loss", "kl", "grad_norm"] },
    { id: "chart-time", title: "Seconds per step", series: ["ours/generation_s", "ours/render_s", "ours/score_s", "ours/update_s"], stacked: true },
  ];
  const COLORS = ["#c0546a", "#4f7cac", "#2f8f5b", "#b7791f", "#7b5ea7", "#3b9ab2"];
  const charts = new Map();

  function ema(values) {
    if (smoothing <= 0) return values;
    const out = [];
    let acc = 0, weight = 0;
    for (const v of values) {
      if (v === null || v === undefined || Number.isNaN(v)) { out.push(null); continue; }
      acc = smoothing * acc + (1 - smoothing) * v;
      weight = smoothing * weight + (1 - smoothing);
      out.push(acc / weight); // debiased: early points are not dragged toward zero
    }
    return out;
  }

  function column(key) {
    const i = keys.indexOf(key) + 1;
    return rows.map((r) => (i > 0 ? r[i] : null));
  }

  function dataFor(spec) {
    const x = rows.map((r) => r[0]);
    const data = [x];
    if (spec.stacked) {
      let base = x.map(() => 0);
      for (const key of spec.series) {
        base = base.map((b, j) => b + (column(key)[j] || 0));
        data.push(base.slice());
      }
      return data;
    }
    for (const key of spec.series) {
      const raw = column(key);
      if (smoothing > 0) data.push(raw);
      data.push(ema(raw));
      if (spec.band === "reward_std" && key === "reward") {
        const std = column("reward_std");
        const smooth = ema(raw);
        data.push(smooth.map((m, j) => (m === null ? null : m + (std[j] || 0))));
        data.push(smooth.map((m, j) => (m === null ? null : m - (std[j] || 0))));
      }
    }
    return data;
  }

  function seriesFor(spec) {
    const series = [{ label: "step" }];
    spec.series.forEach((key, k) => {
      const color = COLORS[k % COLORS.length];
      const label = key.replace("ours/", "").replace("completions/", "");
      if (spec.stacked) {
        series.push({ label, stroke: color, fill: color + "55", width: 1 });
        return;
      }
      if (smoothing > 0) series.push({ label: `${label} (raw)`, stroke: color + "55", width: 1 });
      series.push({ label, stroke: color, width: 2 });
      if (spec.band === "reward_std" && key === "reward") {
        series.push({ label: "+std", stroke: color + "33", width: 1, dash: [4, 4] });
        series.push({ label: "−std", stroke: color + "33", width: 1, dash: [4, 4] });
      }
    });
    return series;
  }

  function draw() {
    for (const spec of CHARTS) {
      const el = document.getElementById(spec.id);
      if (!el) continue;
      const data = dataFor(spec);
      const existing = charts.get(spec.id);
      if (existing && existing.series.length === seriesFor(spec).length) {
        existing.setData(data);
        continue;
      }
      if (existing) existing.destroy();
      el.replaceChildren();
      const opts = {
        title: spec.title, width: el.clientWidth || 420, height: 200, series: seriesFor(spec),
        scales: { x: { time: false }, y: spec.range ? { range: spec.range } : {} },
        axes: [{ label: "step" }, {}], legend: { live: true },
      };
      charts.set(spec.id, new uPlot(opts, data, el));
    }
    root.dataset.steps = String(rows.length);
    root.dataset.lastStep = String(lastStep);
  }

  async function poll() {
    try {
      const response = await fetch(`${url}?after=${lastStep}`, { credentials: "same-origin" });
      if (response.ok) {
        const data = await response.json();
        keys = data.keys;
        for (const row of data.steps) rows.push(row);
        if (data.steps.length) {
          lastStep = data.steps[data.steps.length - 1][0];
          draw();
        } else if (!charts.size) {
          draw();
        }
        if (!["queued", "running", "stopping"].includes(data.status)) return; // the run ended
      }
    } catch (_) { /* a missed poll is retried on the next tick */ }
    setTimeout(poll, 2000);
  }

  const slider = document.getElementById("smoothing");
  if (slider) {
    slider.value = smoothing;
    const label = document.getElementById("smoothing-value");
    label.textContent = smoothing.toFixed(2);
    slider.addEventListener("input", () => {
      smoothing = Number(slider.value);
      label.textContent = smoothing.toFixed(2);
      localStorage.setItem("paintapp.smoothing", String(smoothing));
      for (const chart of charts.values()) chart.destroy();
      charts.clear();
      draw();
    });
  }
  window.addEventListener("resize", () => {
    for (const [id, chart] of charts) {
      const el = document.getElementById(id);
      chart.setSize({ width: el.clientWidth, height: 200 });
    }
  });
  poll();
})();
