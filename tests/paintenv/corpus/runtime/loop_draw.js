// setup() is fine; draw() never returns.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf7ef");
}
function draw() {
  while (true) { Math.sqrt(frameCount); }
}
