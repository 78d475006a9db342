// Allocates off-screen buffers until the pixel budget says no.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf7ef");
  const layers = [];
  for (let i = 0; i < 1000; i++) layers.push(createGraphics(2000, 2000));
}
