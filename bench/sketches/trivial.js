// Benchmark: the per-render overhead. A WEBGL canvas, a background, nothing painted.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf7ef");
}
