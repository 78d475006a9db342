// Browser dialogs and file downloads.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf7ef");
  translate(-width / 2, -height / 2);
  brush.fill("#e0857a", 180);
  brush.circle(300, 300, 40, 0.3);
  alert("done");
  saveCanvas("painting", "png");
  saveJSON({ a: 1 }, "a.json");
}
