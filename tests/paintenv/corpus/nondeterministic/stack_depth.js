// Where the marks go depends on how deep the stack lets a helper recurse.
function depth(n) {
  try { return depth(n + 1); } catch (e) { return n; }
}
const deeper = (n, acc) => { try { return deeper(n + 1, acc + 1); } catch (e) { return n; } };
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf7ef");
  translate(-width / 2, -height / 2);
  brush.scaleBrushes(3);
  brush.noStroke();
  let d = 0;
  for (let k = 0; k < 4; k++) d += depth(0);
  d += deeper(0, 0);
  brush.fill("#c0504d", 200);
  brush.circle(80 + (d % 440), 300, 70, 0.2);
  brush.fill("#3d5a80", 200);
  brush.circle(300, 80 + ((d * 7) % 440), 70, 0.2);
}
