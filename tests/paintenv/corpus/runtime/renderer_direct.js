// Reaching past the p5 functions to the renderer itself.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf7ef");
  const r = p5.instance["_ren" + "derer"];
  r.rect(0, 0, 100, 100);
}
