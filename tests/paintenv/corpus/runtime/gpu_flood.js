// Thousands of full-canvas translucent washes: far more GPU and CPU work than any
// deadline allows. The watchdog must stop it and the next render must not pay for it.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf7ef");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  for (let i = 0; i < 4000; i++) {
    brush.fill(i % 2 ? "#336699" : "#993366", 120);
    brush.fillBleed(0.5);
    brush.beginShape(0);
    brush.vertex(0, 0);
    brush.vertex(600, 0);
    brush.vertex(600, 600);
    brush.vertex(0, 600);
    brush.endShape(true);
  }
}
