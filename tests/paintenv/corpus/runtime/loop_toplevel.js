// Never gets past the top level.
while (true) {}
function setup() {
  createCanvas(600, 600, WEBGL);
}
