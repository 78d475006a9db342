// Runs fine and paints nothing.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf7ef");
  translate(-width / 2, -height / 2);
  brush.scaleBrushes(3);
  brush.noStroke();
}
