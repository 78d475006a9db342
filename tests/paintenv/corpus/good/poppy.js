// An orange-red poppy on a bent stem: four crumpled petals, a dark blotch at the base of
// each, a green seed head crowned with a violet star, and a bud on the side.
let palette;

function setup() {
  createCanvas(600, 600, WEBGL);
  background("#faf6ee");
  translate(-width / 2, -height / 2);
  brush.scaleBrushes(3);
  brush.noStroke();
  palette = {
    petalDeep: "#c8281e",
    petalMid: "#e4462b",
    petalLight: "#f7804e",
    blotch: "#2a1420",
    stem: "#6b8f4e",
    seed: "#8fae6a",
    star: "#4b2a5e",
  };
  paintStem();
  paintBud();
  paintFlower(320, 240);
  noLoop();
}

function paintStem() {
  // a thin, slightly wavering stem made of narrow quads
  brush.fill(palette.stem, 180);
  brush.fillBleed(0.15);
  brush.fillTexture(0.3, 0.2);
  for (let i = 0; i < 6; i++) {
    const y0 = 300 + i * 48;
    const x0 = 318 - i * 9 + sin(i) * 5;
    const x1 = 318 - (i + 1) * 9 + sin(i + 1) * 5;
    brush.beginShape(0.3);
    brush.vertex(x0 - 5, y0);
    brush.vertex(x0 + 5, y0);
    brush.vertex(x1 + 5, y0 + 50);
    brush.vertex(x1 - 5, y0 + 50);
    brush.endShape(true);
  }
}

function paintBud() {
  brush.fill(palette.stem, 170);
  brush.fillBleed(0.2);
  brush.beginShape(0.9);
  brush.vertex(190, 470);
  brush.vertex(168, 420);
  brush.vertex(190, 380);
  brush.vertex(212, 420);
  brush.endShape(true);
  brush.fill(palette.petalMid, 160);
  brush.fillBleed(0.25);
  brush.beginShape(0.9);
  brush.vertex(190, 382);
  brush.vertex(178, 402);
  brush.vertex(196, 410);
  brush.endShape(true);
}

function paintFlower(cx, cy) {
  const washes = [
    [palette.petalDeep, 165, 0.35],
    [palette.petalMid, 175, 0.25],
    [palette.petalLight, 155, 0.2],
  ];
  for (let w = 0; w < washes.length; w++) {
    const [colour, opacity, bleed] = washes[w];
    brush.fill(colour, opacity);
    brush.fillBleed(bleed);
    brush.fillTexture(0.6, 0.45);
    for (let i = 0; i < 4; i++) {
      const a = HALF_PI * i + 0.3 + w * 0.08;
      const r = 150 - w * 22;
      brush.beginShape(0.75);
      brush.vertex(cx, cy);
      brush.vertex(cx + cos(a - 0.7) * r * 0.8, cy + sin(a - 0.7) * r * 0.8);
      brush.vertex(cx + cos(a - 0.25) * r, cy + sin(a - 0.25) * r);
      brush.vertex(cx + cos(a + 0.2) * r * 1.05, cy + sin(a + 0.2) * r * 1.05);
      brush.vertex(cx + cos(a + 0.7) * r * 0.8, cy + sin(a + 0.7) * r * 0.8);
      brush.endShape(true);
    }
  }
  // dark blotches where the petals meet the centre
  brush.fill(palette.blotch, 190);
  brush.fillBleed(0.3);
  for (let i = 0; i < 4; i++) {
    const a = HALF_PI * i + 0.3;
    brush.circle(cx + cos(a) * 34, cy + sin(a) * 34, 20, 0.6);
  }
  // seed head and its star
  brush.fill(palette.seed, 210);
  brush.fillBleed(0.1);
  brush.circle(cx, cy, 26, 0.2);
  brush.fill(palette.star, 200);
  for (let i = 0; i < 8; i++) {
    const a = (TWO_PI * i) / 8;
    brush.circle(cx + cos(a) * 12, cy + sin(a) * 12, 3, 0.1);
  }
}
