// Asks for pixel density 40 (a 24000 x 24000 backing store): pixelDensity is outside the
// sketch API, so the call is counted and does nothing; the painting goes on at the pinned density.
function setup() {
  pixelDensity(40);
  createCanvas(600, 600, WEBGL);
  pixelDensity(40);
  background("#fbf7ef");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#5f8f4e", 170);
  brush.circle(300, 300, 120, 0.2);
}
