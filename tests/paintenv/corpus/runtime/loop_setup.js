// Loops forever inside setup().
function setup() {
  createCanvas(600, 600, WEBGL);
  let i = 0;
  for (;;) { i++; }
}
