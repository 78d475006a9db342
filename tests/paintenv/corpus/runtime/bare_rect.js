// A painting with one bare p5 rect() among the brush calls.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf7ef");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#5f8f4e", 170);
  brush.circle(300, 300, 120, 0.2);
  rect(40, 40, 80, 80);
}
