// Asks for a 20000 x 20000 canvas.
function setup() {
  createCanvas(20000, 20000, WEBGL);
  background("#fbf7ef");
}
