// Benchmark: a heavy sketch — 70 filled shapes, many large and translucent, the upper
// end of what a long rollout paints.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#f6f0e4");
  translate(-width / 2, -height / 2);
  brush.scaleBrushes(3);
  brush.noStroke();
  // a wash of sky in bands (10)
  for (let i = 0; i < 10; i++) {
    brush.fill(i % 2 ? "#a8c5da" : "#c9dbe8", 90);
    brush.fillBleed(0.4);
    brush.fillTexture(0.6, 0.5);
    brush.beginShape(0.5);
    brush.vertex(0, i * 40); brush.vertex(600, i * 40 + 10);
    brush.vertex(600, i * 40 + 70); brush.vertex(0, i * 40 + 60);
    brush.endShape(true);
  }
  // a field of flowers (20 x 3 = 60)
  for (let k = 0; k < 20; k++) {
    const x = 40 + (k % 5) * 130 + (k % 2) * 20;
    const y = 300 + Math.floor(k / 5) * 75;
    brush.fill("#5f8f4e", 160);
    brush.fillBleed(0.3);
    brush.beginShape(0.6);
    brush.vertex(x, y + 40); brush.vertex(x - 40, y); brush.vertex(x - 10, y - 20); brush.vertex(x + 30, y + 10);
    brush.endShape(true);
    brush.fill(k % 3 ? "#e0607e" : "#f4a582", 170);
    brush.fillBleed(0.35);
    brush.circle(x, y, 34, 0.5);
    brush.fill("#9c2945", 200);
    brush.fillBleed(0.1);
    brush.circle(x + 4, y - 3, 12, 0.3);
  }
}
