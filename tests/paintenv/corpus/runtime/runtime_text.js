// text() called through a computed name.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf7ef");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#b8324a", 190);
  brush.circle(300, 300, 100, 0.2);
  const t = window["te" + "xt"];
  try {
    t("hello", 100, 100);
  } catch (e) {
    // WEBGL text needs a loaded font; the attempt is what counts.
  }
}
