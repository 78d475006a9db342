// Throws inside setup() at line 7 (reading `x` of null).
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf7ef");
  brush.noStroke();
  const thing = null;
  let y = thing.x + 1;
  brush.circle(300, 300, 50, 0.1);
}
