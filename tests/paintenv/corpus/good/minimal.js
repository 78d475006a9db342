// The smallest sketch that should pass every gate: one bloom, painted as two washes.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#f6f0e4");
  translate(-width / 2, -height / 2);
  brush.scaleBrushes(3);
  brush.noStroke();
  brush.fill("#c2185b", 230);
  brush.fillBleed(0.2);
  brush.circle(300, 300, 140, 0.4);
  brush.fill("#8e0e3c", 230);
  brush.circle(300, 300, 60, 0.3);
}
