// Live training curves for the run page: polls the metrics endpoint for new steps only and
// redraws uPlot charts. An EMA slider smooths the series (debiased at the start, like W&B
// and TensorBoard); the raw series stays visible underneath and the legend shows both values.
// Other runs chosen in the "Compare" picker are overlaid on the same axes, one colour per run,
// each drawn only over the steps it has. Hovering one chart moves the cursor on all of them.
(() => {
  "use strict";
  const root = document.getElementById("curves");
  if (!root || !window.uPlot) return;
  const compared = JSON.parse(document.getElementById("compare-runs")?.textContent || "[]");
  // One source per run: the page's own run first.
  const sources = [{ id: Number(root.dataset.run), label: root.dataset.label || "this run", url: root.dataset.metricsUrl }, ...compared]
    .map((s) => ({ ...s, keys: [], rows: [], lastStep: 0, active: true }));
  const overlay = sources.length > 1;
  let smoothing = Number(localStorage.getItem("paintapp.smoothing") || 0.6);

  // The charts and their metric keys come from training/metrics.py, where every key is declared.
  const CHARTS = JSON.parse(document.getElementById("chart-specs")?.textContent || "[]");
  const KEY_COLORS = ["#c0546a", "#4f7cac", "#2f8f5b", "#b7791f", "#7b5ea7", "#3b9ab2"];
  const RUN_COLORS = ["#c0546a", "#4f7cac", "#2f8f5b", "#b7791f", "#7b5ea7", "#3b9ab2", "#6b7280", "#d946ef"];
  const DASHES = [[], [6, 3], [2, 3], [8, 3, 2, 3]];
  const charts = new Map();

  // Learning rates and KLs live around 1e-5: plain decimals would print every tick as 0.
  function tickLabel(v) {
    if (v === 0) return "0";
    const a = Math.abs(v);
    if (a < 1e-3 || a >= 1e5) return v.toExponential(1);
    return String(Number(v.toPrecision(3)));
  }

  // Steps are whole numbers: no tick at 1.5.
  const STEP_INCREMENTS = [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000, 10000];

  function legendValue(v) {
    return v === null || v === undefined ? "–" : tickLabel(v);
  }

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

  // Every run's values on the shared x axis (the union of their steps); gaps are null.
  function xAxis() {
    const steps = new Set();
    for (const s of sources) for (const r of s.rows) steps.add(r[0]);
    return [...steps].sort((a, b) => a - b);
  }

  function column(source, key, x) {
    const i = source.keys.indexOf(key) + 1;
    const byStep = new Map(source.rows.map((r) => [r[0], i > 0 ? r[i] : null]));
    return x.map((step) => (byStep.has(step) ? byStep.get(step) : null));
  }

  function colorFor(sourceIndex, keyIndex) {
    return overlay ? RUN_COLORS[sourceIndex % RUN_COLORS.length] : KEY_COLORS[keyIndex % KEY_COLORS.length];
  }

  function plan(spec) {
    // The series of one chart, as [label, style, values-function] triples, in drawing order.
    const out = [];
    sources.forEach((source, si) => {
      if (spec.stacked && si > 0) return; // a stacked time split only makes sense for one run
      spec.series.forEach((key, ki) => {
        const color = colorFor(si, ki);
        const dash = overlay ? DASHES[ki % DASHES.length] : [];
        const name = key.replace("ours/", "").replace("completions/", "");
        const label = overlay ? `${name} #${source.id}` : name; // the run's full name is in the swatch list
        if (spec.stacked) {
          out.push({ label, style: { stroke: KEY_COLORS[ki], fill: KEY_COLORS[ki] + "55", width: 1 }, values: (x) => column(source, key, x), stack: true, first: ki === 0 });
          return;
        }
        if (smoothing > 0) out.push({ label: `${label} (raw)`, raw: true, style: { stroke: color + "55", width: 1, dash }, values: (x) => column(source, key, x) });
        // With smoothing on, its legend row reads "smoothed (raw value)": the raw series is the one before it.
        out.push({ label, smoothed: smoothing > 0, style: { stroke: color, width: 2, dash }, values: (x) => ema(column(source, key, x)) });
        if (spec.band && key === spec.series[0] && si === 0) {
          // ± one std around the raw mean, shaded between two invisible bounds.
          const bound = (sign) => (x) => {
            const mean = column(source, key, x);
            const std = column(source, spec.band, x);
            return mean.map((m, j) => (m === null || std[j] === null ? null : m + sign * std[j]));
          };
          out.push({ label: "+std", raw: true, band: "upper", fill: color + "38", style: { stroke: "transparent", width: 0 }, values: bound(1) });
          out.push({ label: "−std", raw: true, band: "lower", style: { stroke: "transparent", width: 0 }, values: bound(-1) });
        }
      });
    });
    return out;
  }

  function dataFor(spec, series, x) {
    const data = [x];
    // A step the run lacks stays null in the stack (no drop to 0 where an overlaid run goes on).
    let base = x.map(() => null);
    for (const s of series) {
      if (s.stack) {
        const values = s.values(x);
        base = base.map((b, j) => (values[j] === null ? b : (b || 0) + values[j]));
        data.push(base.slice());
      } else {
        data.push(s.values(x));
      }
    }
    return data;
  }

  function legendFor(s) {
    if (s.smoothed) {
      return (u, v, si, idx) => {
        const raw = idx === null ? null : u.data[si - 1][idx];
        return v === null || v === undefined || raw === null || raw === undefined ? legendValue(v) : `${legendValue(v)} (raw ${legendValue(raw)})`;
      };
    }
    // A stacked series is drawn at the running total; its legend gives its own seconds.
    if (s.stack) return (u, v, si, idx) => (idx === null || v === null ? "–" : legendValue(v - (s.first ? 0 : u.data[si - 1][idx] || 0)));
    return (u, v) => legendValue(v);
  }

  function bandsFor(series) {
    // uPlot numbers series from 1 (0 is the x axis).
    const upper = series.findIndex((s) => s.band === "upper");
    const lower = series.findIndex((s) => s.band === "lower");
    return upper < 0 || lower < 0 ? [] : [{ series: [upper + 1, lower + 1], fill: series[upper].fill }];
  }

  function draw() {
    const x = xAxis();
    for (const spec of CHARTS) {
      const el = document.getElementById(spec.id);
      if (!el) continue;
      const series = plan(spec);
      const data = dataFor(spec, series, x);
      const existing = charts.get(spec.id);
      const points = data.slice(1).map((d) => d.filter((v) => v !== null && v !== undefined).length);
      el.dataset.points = points.join(",");
      el.classList.toggle("is-empty", points.every((n) => n === 0)); // says so rather than an empty grid
      if (existing && existing.series.length === series.length + 1) {
        existing.setData(data);
        continue;
      }
      if (existing) existing.destroy();
      el.replaceChildren();
      const opts = {
        title: spec.stacked && overlay ? `${spec.title} (this run)` : spec.title, width: el.clientWidth || 420, height: 200,
        series: [{ label: "step", value: (u, v) => (v === null ? "–" : String(v)) }, ...series.map((s) => ({
          label: s.label, ...s.style,
          value: legendFor(s),
        }))],
        bands: bandsFor(series),
        scales: { x: { time: false }, y: spec.range ? { range: spec.range } : {} },
        axes: [
          { label: "step", incrs: STEP_INCREMENTS, values: (u, ticks) => ticks.map(String) },
          { values: (u, ticks) => ticks.map(tickLabel), size: 56 },
        ],
        legend: { live: true },
        cursor: { sync: { key: `run-${root.dataset.run}` } },
      };
      const chart = new uPlot(opts, data, el);
      // The raw series and the std band are drawn but kept out of the legend: it lists what
      // a reader compares (one row per series and run), not every helper line.
      const rows = chart.root.querySelectorAll(".u-legend .u-series");
      series.forEach((s, i) => { if (s.raw && rows[i + 1]) rows[i + 1].style.display = "none"; });
      charts.set(spec.id, chart);
    }
    const own = sources[0];
    root.dataset.steps = String(own.rows.length);
    root.dataset.lastStep = String(own.lastStep);
    root.dataset.overlaidRuns = String(sources.length - 1);
  }

  async function pollSource(source) {
    const response = await fetch(`${source.url}?after=${source.lastStep}`, { credentials: "same-origin" });
    if (response.status === 404) source.active = false; // a compared run was deleted
    if (!response.ok) return false;
    const data = await response.json();
    source.keys = data.keys;
    for (const row of data.steps) source.rows.push(row);
    if (data.steps.length) source.lastStep = data.steps[data.steps.length - 1][0];
    source.active = ["queued", "running", "stopping"].includes(data.status);
    return data.steps.length > 0;
  }

  async function poll() {
    const live = sources.filter((s) => s.active);
    const changed = await Promise.all(live.map((s) => pollSource(s).catch(() => false)));
    if (changed.some(Boolean) || !charts.size) draw();
    // A missed poll is retried on the next tick; polling ends when every shown run has ended.
    if (sources.some((s) => s.active)) setTimeout(poll, 2000);
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
