// A red rose seen from above: rings of cupped petals that tighten toward the centre,
// each petal painted as three translucent washes, with two serrated leaves behind.
const CX = 300;
const CY = 285;

function petal(cx, cy, angle, length, width, curl) {
  // a rounded petal from the centre outwards, tip slightly curled
  brush.beginShape(0.85);
  brush.vertex(cx + cos(angle - 0.2) * length * 0.15, cy + sin(angle - 0.2) * length * 0.15);
  brush.vertex(cx + cos(angle - width) * length * 0.75, cy + sin(angle - width) * length * 0.75);
  brush.vertex(cx + cos(angle - curl) * length, cy + sin(angle - curl) * length);
  brush.vertex(cx + cos(angle + curl) * length, cy + sin(angle + curl) * length);
  brush.vertex(cx + cos(angle + width) * length * 0.75, cy + sin(angle + width) * length * 0.75);
  brush.vertex(cx + cos(angle + 0.2) * length * 0.15, cy + sin(angle + 0.2) * length * 0.15);
  brush.endShape(true);
}

function leaf(x, y, angle, size) {
  const tipX = x + cos(angle) * size;
  const tipY = y + sin(angle) * size;
  const nx = -sin(angle) * size * 0.32;
  const ny = cos(angle) * size * 0.32;
  brush.beginShape(0.5);
  brush.vertex(x, y);
  brush.vertex(x + (tipX - x) * 0.45 + nx, y + (tipY - y) * 0.45 + ny);
  brush.vertex(tipX, tipY);
  brush.vertex(x + (tipX - x) * 0.55 - nx, y + (tipY - y) * 0.55 - ny);
  brush.endShape(true);
}

function setup() {
  createCanvas(600, 600, WEBGL);
  background("#f8f3ea");
  translate(-width / 2, -height / 2);
  randomSeed(7);
  brush.scaleBrushes(3);
  brush.noStroke();

  // leaves: a dark wash under a lighter one
  const greens = ["#3f6b3a", "#6d9a56"];
  for (let g = 0; g < greens.length; g++) {
    brush.fill(greens[g], 165 + g * 15);
    brush.fillBleed(0.3 - g * 0.1);
    brush.fillTexture(0.55, 0.35);
    leaf(250, 360, 2.35 + g * 0.05, 190 - g * 20);
    leaf(360, 370, 0.75 - g * 0.05, 170 - g * 20);
  }

  // petal rings, outer to inner; every ring gets three washes
  const rings = [
    { count: 6, length: 170, width: 0.48, curl: 0.22, colours: ["#9e1b32", "#c0303f", "#d94c55"] },
    { count: 5, length: 120, width: 0.55, curl: 0.25, colours: ["#a51d34", "#c8323f", "#e0606a"] },
    { count: 4, length: 72, width: 0.65, curl: 0.3, colours: ["#7d1228", "#b02234", "#cf4150"] },
  ];
  for (let r = 0; r < rings.length; r++) {
    const ring = rings[r];
    for (let w = 0; w < 3; w++) {
      brush.fill(ring.colours[w], 150 + w * 25);
      brush.fillBleed(0.35 - w * 0.1);
      brush.fillTexture(0.4, 0.5);
      for (let i = 0; i < ring.count; i++) {
        const a = (TWO_PI * i) / ring.count + r * 0.5 + w * 0.06;
        petal(CX, CY, a, ring.length * (1 - w * 0.08) + random(-6, 6), ring.width, ring.curl);
      }
    }
  }

  // the tight bud in the middle and a few highlights
  brush.fill("#5e0b1f", 200);
  brush.fillBleed(0.1);
  brush.circle(CX, CY, 22, 0.5);
  brush.fill("#f2a3a6", 160);
  brush.fillBleed(0.2);
  brush.circle(CX - 40, CY - 30, 9, 0.3);
  brush.circle(CX + 35, CY + 20, 7, 0.3);
}
