// Allocates off-screen buffers: createGraphics is outside the sketch API, so each call is
// counted and allocates nothing (the library-side budget never comes into play).
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf7ef");
  const layers = [];
  for (let i = 0; i < 1000; i++) layers.push(createGraphics(2000, 2000));
}
