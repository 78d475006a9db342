// Fails at the top level (line 3) before setup() runs.
const palette = ["#5f8f4e", "#b8324a"];
const broken = palette.nope.length;
function setup() {
  createCanvas(600, 600, WEBGL);
}
