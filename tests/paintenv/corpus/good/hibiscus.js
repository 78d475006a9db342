// A peach hibiscus: five layered petals, a darker throat, a stamen, two leaves.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf7ef");
  translate(-width / 2, -height / 2);
  brush.scaleBrushes(3);
  brush.noStroke();

  // leaves behind the flower
  brush.fill("#5f8f4e", 170);
  brush.fillBleed(0.25);
  brush.fillTexture(0.5, 0.4);
  brush.beginShape(0.6);
  brush.vertex(140, 430);
  brush.vertex(250, 360);
  brush.vertex(300, 420);
  brush.vertex(210, 480);
  brush.endShape(true);
  brush.beginShape(0.6);
  brush.vertex(460, 450);
  brush.vertex(360, 380);
  brush.vertex(320, 440);
  brush.vertex(400, 500);
  brush.endShape(true);

  // petals: two translucent layers each
  const petals = 5;
  for (let layer = 0; layer < 2; layer++) {
    brush.fill(layer === 0 ? "#f4a582" : "#ee8a6a", 160 + layer * 20);
    brush.fillBleed(0.3 - layer * 0.1);
    for (let i = 0; i < petals; i++) {
      const a = (TWO_PI * i) / petals + layer * 0.15;
      const r = 150 - layer * 30;
      brush.beginShape(0.8);
      brush.vertex(300, 300);
      brush.vertex(300 + cos(a - 0.45) * r, 300 + sin(a - 0.45) * r);
      brush.vertex(300 + cos(a) * (r + 20), 300 + sin(a) * (r + 20));
      brush.vertex(300 + cos(a + 0.45) * r, 300 + sin(a + 0.45) * r);
      brush.endShape(true);
    }
  }

  // throat and stamen
  brush.fill("#b8324a", 190);
  brush.fillBleed(0.15);
  brush.circle(300, 300, 38, 0.3);
  brush.noFill();
  brush.fill("#e9c46a", 220);
  brush.circle(330, 270, 10, 0.1);
}
