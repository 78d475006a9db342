// A syntax error on line 5.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf7ef");
  brush.fill("#5f8f4e", 170;
}
