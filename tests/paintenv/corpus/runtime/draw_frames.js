// setup() plus a looping draw(): the renderer runs a fixed number of frames.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf7ef");
  brush.noStroke();
}
function draw() {
  translate(-width / 2, -height / 2);
  brush.fill("#5f8f4e", 170);
  brush.circle(100 + frameCount * 100, 300, 60, 0.1);
}
