// Helper functions of the seed sketches. A sketch includes the ones it uses, in this
// file's order. They read the wash constants (BLEED, GRAIN, RIM, CURVE, WOBBLE), so a
// style is a change of constants, not of code shape.
// Each section runs from its `//@ name` line to the next one.

//@ wash
// load the brush with one translucent wash: colour, opacity (0-255) and bleed (0-1)
function wash(colour, opacity, bleed) {
  brush.fill(colour, opacity);
  brush.fillBleed(bleed);
  brush.fillTexture(GRAIN, RIM);
}

//@ stemWash
// load the brush for stems and branches: hardly any bleed and no grain, which would
// smear into a haze along a long thin shape
function stemWash(colour, opacity) {
  brush.fill(colour, opacity);
  brush.fillBleed(BLEED * 0.1);
  brush.fillTexture(0, 0);
}

//@ almond
// an almond shape from its base (x, y) out to a pointed tip: leaves, sepals, narrow petals
function almond(x, y, angle, length, width) {
  const ux = cos(angle);
  const uy = sin(angle);
  brush.beginShape(CURVE);
  brush.vertex(x, y);
  for (let i = 1; i <= 4; i++) {
    const t = i / 5;
    const w = (width / 2) * sin(PI * t) * (1.15 - 0.3 * t);
    brush.vertex(x + ux * length * t - uy * w, y + uy * length * t + ux * w);
  }
  brush.vertex(x + ux * length, y + uy * length);
  for (let i = 4; i >= 1; i--) {
    const t = i / 5;
    const w = (width / 2) * sin(PI * t) * (1.15 - 0.3 * t);
    brush.vertex(x + ux * length * t + uy * w, y + uy * length * t - ux * w);
  }
  brush.endShape(true);
}

//@ lobe
// a rounded petal from the centre (cx, cy) out to `length`, widest near its tip;
// `crinkle` roughens the edge with noise
function lobe(cx, cy, angle, length, width, crinkle) {
  const ux = cos(angle);
  const uy = sin(angle);
  brush.beginShape(CURVE);
  for (let i = 0; i < 14; i++) {
    const t = (TWO_PI * i) / 14;
    const edge = 1 + crinkle * (noise(cx * 0.01 + angle * 1.7, i * 0.6) - 0.5);
    const along = length * 0.5 * (1 + cos(t)) * edge;
    const across = width * 0.5 * sin(t) * (0.5 + 0.25 * (1 + cos(t))) * edge;
    brush.vertex(cx + ux * along - uy * across, cy + uy * along + ux * across);
  }
  brush.endShape(true);
}

//@ fan
// a broad hibiscus petal: a narrow claw at the throat fanning out to a ruffled rounded rim
function fan(cx, cy, angle, length, spread) {
  const claw = length * 0.3;
  brush.beginShape(CURVE);
  brush.vertex(cx, cy);
  brush.vertex(cx + cos(angle - spread * 0.8) * claw, cy + sin(angle - spread * 0.8) * claw);
  for (let i = 0; i <= 8; i++) {
    const a = angle - spread + (spread * 2 * i) / 8;
    const ruffle = 1 + RUFFLE * (noise(cx * 0.01 + angle * 2, i * 0.8) - 0.5);
    const r = length * (0.8 + 0.2 * sin((PI * i) / 8)) * ruffle;
    brush.vertex(cx + cos(a) * r, cy + sin(a) * r);
  }
  brush.vertex(cx + cos(angle + spread * 0.8) * claw, cy + sin(angle + spread * 0.8) * claw);
  brush.endShape(true);
}

//@ cup
// a cupped rose petal: a crescent hugging the centre at `radius`, `span` radians wide
function cup(cx, cy, angle, radius, span, depth) {
  brush.beginShape(CURVE);
  for (let i = 0; i <= 6; i++) {
    const a = angle - span / 2 + (span * i) / 6;
    const r = radius * (1 + 0.08 * sin((PI * i) / 6));
    brush.vertex(cx + cos(a) * r, cy + sin(a) * r);
  }
  for (let i = 5; i >= 1; i--) {
    const a = angle - span / 2 + (span * i) / 6;
    const r = radius * (1 - depth * sin((PI * i) / 6));
    brush.vertex(cx + cos(a) * r, cy + sin(a) * r);
  }
  brush.endShape(true);
}

//@ upright
// an upright petal from the base (bx, by) to a soft point; `lean` tips it sideways
function upright(bx, by, lean, height, width) {
  brush.beginShape(CURVE);
  brush.vertex(bx - width * 0.12, by);
  brush.vertex(bx - width * 0.5 + lean * 0.3, by - height * 0.35);
  brush.vertex(bx - width * 0.38 + lean * 0.8, by - height * 0.8);
  brush.vertex(bx + lean, by - height);
  brush.vertex(bx + width * 0.38 + lean * 0.8, by - height * 0.8);
  brush.vertex(bx + width * 0.5 + lean * 0.3, by - height * 0.35);
  brush.vertex(bx + width * 0.12, by);
  brush.endShape(true);
}

//@ band
// a slender band from (x1, y1) to (x2, y2), bowed sideways by `bend`: stems and branches
function band(x1, y1, x2, y2, width, bend) {
  const len = dist(x1, y1, x2, y2);
  const nx = -(y2 - y1) / len;
  const ny = (x2 - x1) / len;
  const mx = (x1 + x2) / 2 + nx * bend;
  const my = (y1 + y2) / 2 + ny * bend;
  brush.beginShape(CURVE);
  brush.vertex(x1 + (nx * width) / 2, y1 + (ny * width) / 2);
  brush.vertex(mx + nx * width * 0.4, my + ny * width * 0.4);
  brush.vertex(x2 + nx * width * 0.25, y2 + ny * width * 0.25);
  brush.vertex(x2 - nx * width * 0.25, y2 - ny * width * 0.25);
  brush.vertex(mx - nx * width * 0.4, my - ny * width * 0.4);
  brush.vertex(x1 - (nx * width) / 2, y1 - (ny * width) / 2);
  brush.endShape(true);
}

//@ pad
// a floating leaf: a flattened disc with a notch cut toward its centre
function pad(cx, cy, radius, notch) {
  brush.beginShape(CURVE);
  brush.vertex(cx, cy);
  for (let i = 0; i <= 12; i++) {
    const a = notch + 0.25 + ((TWO_PI - 0.5) * i) / 12;
    brush.vertex(cx + cos(a) * radius, cy + sin(a) * radius * 0.45);
  }
  brush.endShape(true);
}

//@ dots
// small dots packed on a golden-angle spiral: pollen, stamens, seeds
function dots(cx, cy, radius, count, size) {
  for (let i = 0; i < count; i++) {
    const a = i * 2.39996;
    const r = radius * sqrt((i + 0.5) / count);
    brush.circle(cx + cos(a) * r, cy + sin(a) * r, size, WOBBLE);
  }
}

//@ ring
// dots spaced evenly on a ring
function ring(cx, cy, radius, count, size) {
  for (let i = 0; i < count; i++) {
    const a = (TWO_PI * i) / count;
    brush.circle(cx + cos(a) * radius, cy + sin(a) * radius, size, WOBBLE);
  }
}

//@ leaf
// a leaf in two washes: a wide pale one, then a narrower deeper one down the middle
function leaf(x, y, angle, length, width) {
  wash(LEAVES[1], 170, BLEED);
  almond(x, y, angle, length, width);
  wash(LEAVES[0], 180, BLEED * 0.5);
  almond(x, y, angle + 0.03, length * 0.85, width * 0.5);
}

//@ bud
// a closed bud: a pointed teardrop of petal colour cupped by two green sepals
function bud(x, y, angle, s) {
  wash(PETALS[0], OPACITY, BLEED);
  almond(x, y, angle, 80 * s, 50 * s);
  wash(PETALS[PETALS.length - 1], OPACITY, BLEED * 0.5);
  almond(x, y, angle + 0.08, 60 * s, 28 * s);
  wash(LEAVES[0], 190, BLEED * 0.4);
  almond(x, y, angle - 0.4, 42 * s, 18 * s);
  almond(x, y, angle + 0.4, 42 * s, 18 * s);
}
