// A fill but no shape: nothing can paint.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf7ef");
  translate(-width / 2, -height / 2);
  brush.scaleBrushes(3);
  brush.fill("#e0857a", 180);
  brush.beginShape(0.5);
  brush.endShape(true);
}
