// noLoop() in setup: draw() still runs exactly once, as in a browser.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf7ef");
  brush.noStroke();
  noLoop();
}
function draw() {
  translate(-width / 2, -height / 2);
  brush.fill("#b8324a", 190);
  brush.circle(300, 300, 80, 0.2);
}
