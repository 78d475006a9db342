// Benchmark: a typical GRPO rollout — 22 filled shapes (leaves, petals in two layers,
// a throat, buds, a stem and a few dabs), the size of what a model writes in ~150 lines.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf7ef");
  translate(-width / 2, -height / 2);
  brush.scaleBrushes(3);
  brush.noStroke();

  // stem and four leaves (5 shapes)
  brush.fill("#4f7a3a", 160);
  brush.fillBleed(0.2);
  brush.fillTexture(0.4, 0.3);
  brush.beginShape(0.3);
  brush.vertex(296, 320); brush.vertex(306, 320); brush.vertex(316, 590); brush.vertex(300, 590);
  brush.endShape(true);
  const leaves = [[220, 430, -1], [380, 450, 1], [240, 520, -1], [370, 540, 1]];
  for (const [x, y, side] of leaves) {
    brush.fill("#5f8f4e", 170);
    brush.fillBleed(0.25);
    brush.beginShape(0.7);
    brush.vertex(305, y + 20);
    brush.vertex(x, y - 30);
    brush.vertex(x + side * 70, y - 60);
    brush.vertex(x + side * 40, y + 10);
    brush.endShape(true);
  }

  // petals: two layers of six (12 shapes)
  for (let layer = 0; layer < 2; layer++) {
    brush.fill(layer ? "#e0607e" : "#f4a3b4", 150 + layer * 30);
    brush.fillBleed(0.35 - layer * 0.15);
    for (let i = 0; i < 6; i++) {
      const a = (TWO_PI * i) / 6 + layer * 0.4;
      const r = 140 - layer * 40;
      brush.beginShape(0.85);
      brush.vertex(300, 250);
      brush.vertex(300 + cos(a - 0.4) * r, 250 + sin(a - 0.4) * r);
      brush.vertex(300 + cos(a) * (r + 25), 250 + sin(a) * (r + 25));
      brush.vertex(300 + cos(a + 0.4) * r, 250 + sin(a + 0.4) * r);
      brush.endShape(true);
    }
  }

  // throat, two buds, two dabs of pollen (5 shapes)
  brush.fill("#9c2945", 200);
  brush.fillBleed(0.1);
  brush.circle(300, 250, 36, 0.3);
  brush.fill("#f4a3b4", 170);
  brush.circle(130, 150, 28, 0.4);
  brush.circle(470, 170, 24, 0.4);
  brush.fill("#e9c46a", 220);
  brush.circle(318, 236, 9, 0.1);
  brush.circle(286, 262, 7, 0.1);
}
