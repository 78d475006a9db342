// An unknown brush method (p5.brush 1.x name): TypeError at line 6, column 9.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf7ef");
  translate(-width / 2, -height / 2);
  brush.bleed(0.3);
}
